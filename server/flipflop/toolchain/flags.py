"""Which nvcc flags FlipFlop passes on, from settings or from a compile_commands.json entry.

Kept: include paths, defines, the language standard, the target architecture and nvcc's
language-extension switches (`--expt-*`, `-rdc`). Dropped: output and mode flags (`-o`, `-c`,
`-ptx`, ...) because FlipFlop chooses those itself, and everything else a build may carry
(optimisation of host code, warnings, dependency files) that does not change the PTX we read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flipflop.toolchain.arches import ArchError, normalize_arch

# Flags whose value follows as the next argument or after `=`.
_INCLUDE = ("-I", "--include-path", "-isystem", "-iquote")
_DEFINE = ("-D", "--define-macro")
_UNDEFINE = ("-U", "--undefine-macro")
_STD = ("-std", "--std")
_ARCH = ("-arch", "--gpu-architecture")
_GENCODE = ("-gencode", "--generate-code")
_FORCE_INCLUDE = ("-include", "--pre-include")
_DROP_WITH_VALUE = (
    "-o", "--output-file", "-MF", "-MT", "-MQ", "-odir", "--output-directory", "-x",
    "--x", "-ccbin", "--compiler-bindir", "-code", "--gpu-code", "-Xcompiler",
    "--compiler-options", "-Xlinker", "--linker-options", "-Xptxas", "--ptxas-options",
    "-Xnvlink", "--nvlink-options", "-l", "-L", "--library", "--library-path",
    "-maxrregcount", "--maxrregcount", "-t", "--threads",
)  # fmt: skip
# Switches kept as they are: they change what the front end accepts or generates.
_KEEP_SWITCH = re.compile(
    r"^(--expt-[\w-]+|--extended-lambda|-rdc=\w+|--relocatable-device-code=\w+|"
    r"-use_fast_math|--use_fast_math|-ftz=\w+|-prec-div=\w+|-prec-sqrt=\w+|-fmad=\w+|"
    r"--ftz=\w+|--prec-div=\w+|--prec-sqrt=\w+|--fmad=\w+|-G|--device-debug|-O\d|"
    r"--default-stream=\w+|-restrict|--restrict)$"
)
_GENCODE_ARCH = re.compile(r"arch=(?:compute|sm)_(\d+[af]?)")


@dataclass(frozen=True)
class BuildFlags:
    """The flags of one translation unit that matter for its PTX."""

    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()  # "NAME" or "NAME=VALUE"
    undefines: tuple[str, ...] = ()
    std: str | None = None  # e.g. "c++17"
    arch: str | None = None  # e.g. "sm_80" (the first one a build names)
    forced_includes: tuple[Path, ...] = ()
    switches: tuple[str, ...] = ()  # kept switches such as --expt-relaxed-constexpr


def select_flags(arguments: Sequence[str], directory: Path | None = None) -> BuildFlags:
    """Keep the flags that shape the PTX; relative paths are taken from `directory`."""
    base = directory or Path.cwd()
    includes: list[Path] = []
    defines: list[str] = []
    undefines: list[str] = []
    forced: list[Path] = []
    switches: list[str] = []
    std: str | None = None
    arch: str | None = None
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        name, value, used = _split(arguments, index)
        index += used
        if name in _INCLUDE and value is not None:
            includes.append(_resolve(value, base))
        elif name in _DEFINE and value is not None:
            defines.append(value)
        elif name in _UNDEFINE and value is not None:
            undefines.append(value)
        elif name in _STD and value is not None:
            std = value
        elif name in _ARCH and value is not None:
            arch = arch or _arch_or_none(value)
        elif name in _GENCODE and value is not None:
            found = _GENCODE_ARCH.search(value)
            arch = arch or (_arch_or_none(found.group(1)) if found else None)
        elif name in _FORCE_INCLUDE and value is not None:
            forced.append(_resolve(value, base))
        elif _KEEP_SWITCH.match(argument):
            switches.append(argument)
    return BuildFlags(
        include_dirs=tuple(includes),
        defines=tuple(defines),
        undefines=tuple(undefines),
        std=std,
        arch=arch,
        forced_includes=tuple(forced),
        switches=tuple(switches),
    )


def _split(arguments: Sequence[str], index: int) -> tuple[str, str | None, int]:
    """(flag name, its value or None, how many arguments it used)."""
    argument = arguments[index]
    following = arguments[index + 1] if index + 1 < len(arguments) else None
    with_value = _INCLUDE + _DEFINE + _UNDEFINE + _STD + _ARCH + _GENCODE + _FORCE_INCLUDE
    for name in (*with_value, *_DROP_WITH_VALUE):
        if argument == name:
            return name, following, 2
        if argument.startswith(name + "="):
            return name, argument[len(name) + 1 :], 1
        # Attached short forms: -Iinclude, -DNAME=1, -UNAME.
        if name in ("-I", "-D", "-U") and argument.startswith(name) and len(argument) > 2:
            return name, argument[2:], 1
    return argument, None, 1


def _resolve(value: str, base: Path) -> Path:
    path = Path(value)
    return path if path.is_absolute() else base / path


def _arch_or_none(value: str) -> str | None:
    try:
        return normalize_arch(value)
    except ArchError:
        return None  # e.g. -arch=native or all-major: the caller's arch decides
