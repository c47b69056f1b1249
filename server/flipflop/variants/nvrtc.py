"""CUDA source → PTX and ptxas's resource report in-process, through NVRTC.

NVRTC skips what `nvcc -ptx` spends on processes and the host side of the file (the host
preprocessor, cudafe++'s host output), so device-only sources — every Kernel Tuner kernel —
compile faster; `benchmarks/search_space.py` measures both. Given a real architecture and
`--ptxas-options=-v`, NVRTC also assembles the code and writes ptxas's report into its log,
so one call yields what the nvcc path needs two processes for.

NVRTC comes from the `nvidia-cuda-nvrtc` wheel, reached through `cuda-bindings`; both are in the
`nvcc` extra. Without them `nvrtc_version()` is None and callers use nvcc.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from flipflop.toolchain.arches import normalize_arch
from flipflop.toolchain.flags import BuildFlags


class NvrtcUnavailable(RuntimeError):
    """NVRTC cannot be loaded in this Python."""


@dataclass(frozen=True)
class NvrtcResult:
    ok: bool
    ptx: str
    log: str  # front-end messages and ptxas's -v report, as NVRTC wrote them
    elapsed_s: float


def _bindings() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as error:
        raise NvrtcUnavailable(f"cuda-bindings is not installed ({error})") from error
    return nvrtc


@cache
def nvrtc_version() -> str | None:
    """NVRTC's version, e.g. "13.5"; None when the library cannot be loaded."""
    try:
        nvrtc = _bindings()
        status, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # the bindings raise several kinds when the shared library is missing
        return None
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None
    return f"{major}.{minor}"


def nvrtc_options(arch: str, flags: BuildFlags, include_dirs: Sequence[Path]) -> list[str]:
    """The options `compile_with_nvrtc` passes: the same meaning as our nvcc command line."""
    target = normalize_arch(arch)
    return [
        f"-arch={target}",
        "-lineinfo",
        "--ptxas-options=-v",
        *([f"-std={flags.std}"] if flags.std else []),
        *(f"-D{define}" for define in flags.defines),
        *(f"-U{name}" for name in flags.undefines),
        *(f"-I{directory}" for directory in include_dirs),
        *(f"-include={path}" for path in flags.forced_includes),
        *(switch for switch in flags.switches if _nvrtc_accepts(switch)),
    ]


def _nvrtc_accepts(switch: str) -> bool:
    # Host optimisation levels mean nothing to NVRTC; it takes the other kept switches.
    return not switch.startswith("-O")


def compile_with_nvrtc(name: str, text: str, options: Sequence[str]) -> NvrtcResult:
    """Compile `text` as the file `name`; raises `NvrtcUnavailable` without NVRTC."""
    if nvrtc_version() is None:
        raise NvrtcUnavailable("the NVRTC library (nvidia-cuda-nvrtc) cannot be loaded")
    nvrtc = _bindings()
    success = nvrtc.nvrtcResult.NVRTC_SUCCESS
    started = time.perf_counter()
    status, program = nvrtc.nvrtcCreateProgram(
        text.encode("utf-8", "surrogateescape"), name.encode(), 0, [], []
    )
    if status != success:
        return NvrtcResult(False, "", f"nvrtc: error: cannot create a program ({status})", 0.0)
    try:
        encoded = [option.encode() for option in options]
        (compiled,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        log = _read(nvrtc, program, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog)
        ptx = ""
        if compiled == success:
            ptx = _read(nvrtc, program, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return NvrtcResult(compiled == success and bool(ptx), ptx, log, time.perf_counter() - started)


def _read(nvrtc: Any, program: Any, size_of: Any, read: Any) -> str:
    status, size = size_of(program)
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buffer = b" " * size
    read(program, buffer)
    return str(buffer.rstrip(b"\0").decode("utf-8", "replace"))
