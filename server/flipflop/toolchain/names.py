"""Kernel names for people: demangled display names and where each kernel is defined."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from flipflop.toolchain.ptxas import PtxSourceMap

_ENTRY_START = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(", re.MULTILINE)
_LOC_LINE = re.compile(r"^\s*\.loc\s+\d+\s+[1-9]\d*\s", re.MULTILINE)


@dataclass(frozen=True)
class KernelLocation:
    """Where a kernel is defined: the first `.loc` of its body."""

    file: str
    line: int


def demangle(name: str) -> str:
    """The C++ spelling of a mangled name, e.g. `_Z5saxpyifPKfPf` -> `saxpy(int, float, ...)`.

    Uses the C++ runtime's own demangler; `cu++filt` when that is unavailable; the name itself
    when neither can read it (a plain `extern "C"` kernel name is returned unchanged).
    """
    if not name.startswith("_Z"):
        return name
    demangler = _runtime_demangler()
    if demangler is not None:
        return demangler(name) or name
    return demangle_with_filter_tool(name) or name


def kernel_base_name(display_name: str) -> str:
    """`void ns::k<128>(float*)` -> `k`: the identifier the source spells."""
    head = display_name.split("(", 1)[0]
    depth = 0
    outside_templates: list[str] = []
    for character in head:
        depth += (character == "<") - (character == ">")
        if depth == 0 and character not in "<>":
            outside_templates.append(character)
    words = "".join(outside_templates).split("::")[-1].split()
    return words[-1] if words else display_name


def instance_name(display_name: str) -> str:
    """`void ns::k<128, 4>(float*)` -> `k<128,4>`: the instantiation, spaces and scope dropped."""
    head = display_name.split("(", 1)[0]
    depth = 0
    start = 0
    for position, character in enumerate(head):
        depth += (character == "<") - (character == ">")
        if depth == 0 and character == " ":
            start = position + 1  # after the return type
    name = "".join(head[start:].split())
    base, bracket, arguments = name.partition("<")
    return base.split("::")[-1] + bracket + arguments


# How the demangler writes template arguments that people write plainly: `4u`, `4ul`,
# `(unsigned int)4`, `(char)65`.
_INTEGER_SUFFIX = re.compile(
    r"(?<![\w.])([+-]?\d+)(?:[uU](?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU]?)(?!\w)"
)
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool)\)(?=[+-]?\d)")


def instance_key(name: str) -> str:
    """`void ns::f<float, 4u>(float*, int)` and `f<float,4>` -> `f<float,4>`: what two
    spellings of one template instance have in common (no return type, scope, spaces,
    parameter list, integer suffix or cast)."""
    spelled = instance_name(_CAST.sub("", name))
    base, bracket, arguments = spelled.partition("<")
    return base + bracket + _INTEGER_SUFFIX.sub(r"\1", arguments)


def written_instance(name: str) -> str:
    """`void f<unsigned int, 4>(float*)` -> `f<unsigned int, 4>`: one instance as source code
    spells it, without return type or parameter list (the spaces inside kept)."""
    name = re.sub(r"\s+<", "<", name.strip())
    depth, start, end = 0, 0, len(name)
    for position, character in enumerate(name):
        depth += (character == "<") - (character == ">")
        if depth == 0 and character == " ":
            start = position + 1
        elif depth == 0 and character == "(":
            end = position
            break
    return name[start:end].strip()


def kernel_matches(wanted: str, name: str, display_name: str) -> bool:
    """Whether `wanted` (a mangled, demangled or source name, or one instance written the way
    Kernel Tuner names it, `f<float, 4>`, with or without return type and parameters) names
    the kernel `name` (mangled) demangled as `display_name`."""
    if wanted in (name, display_name):
        return True
    if "<" in wanted:
        return instance_key(wanted) == instance_key(display_name)
    return wanted.split("(", 1)[0].split()[-1:] == [kernel_base_name(display_name)]


def entry_names(ptx_text: str) -> list[str]:
    """Mangled names of the kernels (`.entry`) in PTX order, each once (a kernel may be declared
    before it is defined)."""
    return list(dict.fromkeys(match.group(1) for match in _ENTRY_START.finditer(ptx_text)))


def kernel_locations(ptx_text: str) -> dict[str, KernelLocation]:
    """Mangled kernel name -> the source position of the first `.loc` inside its `.entry`."""
    source_map = PtxSourceMap.of(ptx_text)
    found: dict[str, KernelLocation] = {}
    for entry in _ENTRY_START.finditer(ptx_text):
        name = entry.group(1)
        first_loc = _LOC_LINE.search(ptx_text, entry.end())
        if first_loc is None:
            continue
        place = source_map.source_of(ptx_text.count("\n", 0, first_loc.start()) + 1)
        if place is not None:
            found[name] = KernelLocation(file=place[0], line=place[1])
    return found


def find_definition_line(source_text: str, kernel_name: str) -> int | None:
    """1-based line of `__global__ ... kernel_name(` in the source, scanning text only."""
    pattern = re.compile(
        r"__global__\b[^;{}]*?\b" + re.escape(kernel_name) + r"\s*(?:<[^;{}]*>)?\s*\(", re.DOTALL
    )
    match = pattern.search(source_text)
    if match is None:
        return None
    name_at = source_text.rfind(kernel_name, match.start(), match.end())
    return source_text.count("\n", 0, name_at) + 1


@functools.lru_cache(maxsize=1)
def _runtime_demangler() -> _CxaDemangle | None:
    for candidate in (ctypes.util.find_library("stdc++"), "libstdc++.so.6", "libc++.so.1"):
        if not candidate:
            continue
        try:
            library = ctypes.CDLL(candidate)
            function = library.__cxa_demangle
        except (OSError, AttributeError):
            continue
        return _CxaDemangle(function)
    return None


class _CxaDemangle:
    """`abi::__cxa_demangle` through ctypes; the returned buffer is freed with libc's free."""

    def __init__(self, function: Any) -> None:  # a ctypes foreign function
        function.restype = ctypes.c_void_p
        function.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ctypes.c_int),
        ]  # fmt: skip
        self._function = function
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        self._free = libc.free
        self._free.argtypes = [ctypes.c_void_p]
        self._free.restype = None

    def __call__(self, name: str) -> str | None:
        status = ctypes.c_int(1)
        pointer = self._function(name.encode("ascii", "replace"), None, None, ctypes.byref(status))
        if status.value != 0 or not pointer:
            return None
        try:
            value = ctypes.string_at(pointer)
        finally:
            self._free(pointer)
        return value.decode("utf-8", errors="replace")


def demangle_with_filter_tool(name: str) -> str | None:
    """`cu++filt` (or `c++filt`) as a separate process; None when absent or unable."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if tool is None:
        return None
    try:
        done = subprocess.run([tool, name], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return text if done.returncode == 0 and text and text != name else None
