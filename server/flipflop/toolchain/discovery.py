"""Finding nvcc and ptxas, and the version they report.

Order (first hit wins): an explicit path (CLI option or the `flipflop.nvccPath` setting), the
environment variables FLIPFLOP_NVCC and CUDACXX, PATH, CUDA_HOME/CUDA_PATH, and finally the
`nvidia-cuda-nvcc` wheel installed in the running Python (`pip install 'flipflop[nvcc]'`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from flipflop.toolchain.errors import ToolchainError
from flipflop.toolchain.process import run_tool

# Layouts of the PyPI compiler wheels: CUDA 13 ships one `nvidia/cu13` tree, CUDA 12 a
# `nvidia/cuda_nvcc` package.
WHEEL_BIN_DIRS = ("nvidia/cu13/bin", "nvidia/cuda_nvcc/bin")

INSTALL_HINT = (
    "install the CUDA compiler with `pip install 'flipflop[nvcc]'` (or a CUDA toolkit), or point "
    "FlipFlop at nvcc with the `flipflop.nvccPath` setting, the --nvcc option or the "
    "FLIPFLOP_NVCC environment variable"
)

_VERSION_PATTERN = re.compile(r"release\s+[\d.]+,\s+V(\d+(?:\.\d+)*)|release\s+(\d+(?:\.\d+)*)")
_VERSION_TIMEOUT_S = 30.0
# `#$ INCLUDES="-I/usr/local/cuda/bin/../targets/x86_64-linux/include"` in `nvcc -dryrun`.
_INCLUDES_LINE = re.compile(r'^#\$ (?:SYSTEM_)?INCLUDES=(.*)$')


@dataclass(frozen=True)
class Toolchain:
    """A usable nvcc and the ptxas that goes with it."""

    nvcc: Path
    ptxas: Path
    version: str  # e.g. "13.0.88"; "unknown" when nvcc does not say
    origin: str  # where it was found, e.g. "PATH", "FLIPFLOP_NVCC", "nvidia-cuda-nvcc wheel"


@dataclass(frozen=True)
class _Candidate:
    origin: str
    nvcc: Path


def find_toolchain(
    explicit: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    wheel_roots: Sequence[Path] | None = None,
) -> Toolchain:
    """Return the first usable toolchain in discovery order, or raise `ToolchainError`.

    `environ` defaults to the process environment and `wheel_roots` to the running Python's
    import path (the directories that may hold an `nvidia/` package).
    """
    env = os.environ if environ is None else environ
    roots = python_roots() if wheel_roots is None else tuple(wheel_roots)
    looked: list[str] = []
    for candidate in _candidates(explicit, env, roots, looked):
        nvcc = _executable(candidate.nvcc)
        if nvcc is None:
            looked.append(f"{candidate.origin}: {candidate.nvcc} (not an executable file)")
            if candidate.origin in ("explicit path", "FLIPFLOP_NVCC"):
                # A path the user chose on purpose must not be silently replaced by another.
                raise ToolchainError(
                    f"nvcc not found at {candidate.nvcc} (from {candidate.origin}); {INSTALL_HINT}"
                )
            continue
        ptxas = _find_ptxas(nvcc, env)
        if ptxas is None:
            looked.append(f"{candidate.origin}: {nvcc} (no ptxas beside it or on PATH)")
            continue
        version = nvcc_version(nvcc)
        return Toolchain(nvcc=nvcc, ptxas=ptxas, version=version, origin=candidate.origin)
    places = "\n  ".join(looked)
    raise ToolchainError(f"nvcc not found. Looked in:\n  {places}\nTo fix: {INSTALL_HINT}.")


def nvcc_version(nvcc: Path) -> str:
    """The version `nvcc --version` reports, e.g. "13.0.88", or "unknown"."""
    try:
        run = run_tool([nvcc, "--version"], timeout_s=_VERSION_TIMEOUT_S)
    except ToolchainError:
        return "unknown"
    match = _VERSION_PATTERN.search(run.stdout + run.stderr)
    if match is None:
        return "unknown"
    return match.group(1) or match.group(2)


def toolkit_include_dirs(toolchain: Toolchain) -> tuple[Path, ...]:
    """The folders nvcc itself adds to the include path, as `nvcc -dryrun` reports them."""
    try:
        run = run_tool(
            [toolchain.nvcc, "-dryrun", "-ptx", "-x", "cu", os.devnull, "-o", os.devnull],
            timeout_s=_VERSION_TIMEOUT_S,
        )
    except ToolchainError:
        return ()
    found: list[Path] = []
    for line in (run.stdout + run.stderr).splitlines():
        match = _INCLUDES_LINE.match(line)
        if match is None:
            continue
        words = shlex.split(match.group(1))
        for index, word in enumerate(words):
            if word.startswith("-I") and len(word) > 2:
                found.append(Path(word[2:]))
            elif word in ("-I", "-isystem") and index + 1 < len(words):
                found.append(Path(words[index + 1]))
    return tuple(dict.fromkeys(Path(os.path.normpath(path)) for path in found))


def _candidates(
    explicit: str | Path | None,
    env: Mapping[str, str],
    roots: Sequence[Path],
    looked: list[str],
) -> list[_Candidate]:
    found: list[_Candidate] = []
    if explicit:
        found.append(_Candidate("explicit path", _as_nvcc(Path(explicit))))
    else:
        looked.append("explicit path: none given")
    for variable in ("FLIPFLOP_NVCC", "CUDACXX"):
        value = env.get(variable, "")
        if value:
            found.append(_Candidate(variable, _as_nvcc(Path(value))))
        else:
            looked.append(f"{variable}: not set")
    search_path = env.get("PATH", "")
    on_path = shutil.which("nvcc", path=search_path) if search_path else None
    if on_path:
        found.append(_Candidate("PATH", Path(on_path)))
    else:
        looked.append(f"PATH: no nvcc in {search_path or '(empty PATH)'}")
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        value = env.get(variable, "")
        if value:
            found.append(_Candidate(variable, Path(value) / "bin" / "nvcc"))
        else:
            looked.append(f"{variable}: not set")
    wheel_dirs = [root / sub for root in roots for sub in WHEEL_BIN_DIRS]
    for directory in wheel_dirs:
        if (directory / "nvcc").exists():
            found.append(_Candidate("nvidia-cuda-nvcc wheel", directory / "nvcc"))
    if not any(c.origin == "nvidia-cuda-nvcc wheel" for c in found):
        shown = ", ".join(str(d) for d in wheel_dirs) or "(no import path)"
        looked.append(f"nvidia-cuda-nvcc wheel: none in {shown}")
    return found


def _as_nvcc(path: Path) -> Path:
    """Accept either the nvcc binary or a CUDA installation directory."""
    if path.is_dir():
        inside = path / "bin" / "nvcc"
        return inside if inside.exists() else path / "nvcc"
    return path


def _executable(path: Path) -> Path | None:
    if path.is_file() and os.access(path, os.X_OK):
        return path.absolute()
    return None


def _find_ptxas(nvcc: Path, env: Mapping[str, str]) -> Path | None:
    beside = _executable(nvcc.parent / "ptxas")
    if beside is not None:
        return beside
    # A wrapper script (e.g. /usr/local/bin/nvcc -> the real toolkit) may live alone.
    resolved = _executable(nvcc.resolve().parent / "ptxas")
    if resolved is not None:
        return resolved
    search_path = env.get("PATH", "")
    on_path = shutil.which("ptxas", path=search_path) if search_path else None
    return Path(on_path).absolute() if on_path else None


def python_roots() -> tuple[Path, ...]:
    """The running Python's site-packages plus any import path entry holding `nvidia/`."""
    paths = sysconfig.get_paths()
    roots = [Path(paths["purelib"]), Path(paths["platlib"])]
    roots += [Path(entry) for entry in sys.path if entry and Path(entry, "nvidia").is_dir()]
    return tuple(dict.fromkeys(roots))
