"""Cubins for measurement: a configuration compiled as Kernel Tuner compiles it, and a store of
compiled cubins keyed by what went into them.

Kernel Tuner's cuda-python backend (`kernel_tuner/backends/nvcuda.py`, `compile`) wraps a
source that has no `extern "C"` in `extern "C" { … }`, adds `--std=c++11` unless an option
names a standard, and compiles with NVRTC. It asks NVRTC for `compute_XY` PTX and lets the
driver assemble it at load; here NVRTC is asked for the real architecture `sm_XY`, which runs
the same front end and NVRTC's own ptxas, so a cubin can be made without the GPU (and checked,
and carried to the machine that has one) and nothing is assembled at load time.

A cubin is stored under the SHA-256 of the architecture, the options, the source text and the
files of the folders it may include from (`dependencies`): a change to any of them is a
different cubin. The compiler's version is recorded beside the cubin, not in the key, so
cubins made on another machine are found.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flipflop.toolchain.errors import ToolchainError

EXTERN_C = 'extern "C"'
DEFAULT_STD = "--std=c++11"
# Files of an include folder that a key covers: sources and headers, not data or binaries.
_SOURCE_SUFFIXES = frozenset({".cu", ".cuh", ".h", ".hpp", ".hh", ".c", ".cc", ".cpp", ".inc",
                              ".opencl", ".cl"})


@dataclass(frozen=True)
class BuildRequest:
    name: str  # the file the source comes from (messages, NVRTC's program name)
    text: str  # exactly what is compiled
    arch: str  # sm_XY
    options: tuple[str, ...]
    dependencies: tuple[Path, ...] = ()  # folders the source includes from

    def key(self) -> str:
        """The same on every machine for the same inputs: include folders count by the files
        in them, not by where they are."""
        digest = hashlib.sha256()
        for part in (self.arch, "\0".join(_without_include_paths(self.options)), self.text):
            digest.update(part.encode("utf-8", "surrogateescape"))
            digest.update(b"\0\1")
        for path in _dependency_files(self.dependencies):
            digest.update(path.name.encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0\1")
        return digest.hexdigest()


def _without_include_paths(options: Sequence[str]) -> list[str]:
    kept: list[str] = []
    skip = False
    for option in options:
        if skip:
            skip = False
        elif option == "-I":
            skip = True
        elif not option.startswith(("-I", "--include-path")):
            kept.append(option)
    return kept


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    cubin: bytes
    log: str
    seconds: float
    compiler: str  # e.g. "nvrtc 13.0"
    cached: bool = False


def _dependency_files(folders: Iterable[Path]) -> list[Path]:
    """The source files of each folder in turn, by name; a file seen before is not repeated."""
    seen: set[Path] = set()
    files: list[Path] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.is_file() and path.suffix.lower() in _SOURCE_SUFFIXES \
                    and path.resolve() not in seen:
                seen.add(path.resolve())
                files.append(path)
    return files


def kernel_tuner_text(prepared: str) -> str:
    """The source Kernel Tuner's cuda-python backend hands NVRTC (after `prepare_source`)."""
    if EXTERN_C in prepared:
        return prepared
    return EXTERN_C + " {\n" + prepared + "\n}"


def kernel_tuner_options(compiler_options: Sequence[str], arch: str,
                         include_dirs: Sequence[Path] = ()) -> tuple[str, ...]:
    """The NVRTC options: the tune script's, `--std=c++11` unless one names a standard (the
    backend tests for "--std="), the include folders, and the real architecture."""
    options = list(compiler_options)
    if not any("--std=" in option for option in options):
        options.append(DEFAULT_STD)
    options += [f"-I{directory}" for directory in include_dirs]
    options.append(f"-arch={arch}")
    return tuple(options)


def _nvrtc() -> Any:
    try:
        from cuda.bindings import nvrtc
    except ImportError as error:
        raise ToolchainError(f"NVRTC is not available: cuda-bindings is not installed ({error});"
                             " install the `nvcc` extra") from error
    return nvrtc


def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    try:
        status, major, minor = nvrtc.nvrtcVersion()
    except Exception as error:  # the bindings raise several kinds without libnvrtc
        raise ToolchainError(f"NVRTC cannot be loaded ({error}); install nvidia-cuda-nvrtc") \
            from error
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise ToolchainError(f"NVRTC does not answer ({status})")
    return f"{major}.{minor}"


def compile_cubin_nvrtc(request: BuildRequest) -> BuildResult:
    """Compile with NVRTC to a cubin; a compile error is a result, a missing NVRTC raises."""
    version = nvrtc_version()
    nvrtc = _nvrtc()
    success = nvrtc.nvrtcResult.NVRTC_SUCCESS
    started = time.perf_counter()
    status, program = nvrtc.nvrtcCreateProgram(
        request.text.encode("utf-8", "surrogateescape"), request.name.encode(), 0, [], [])
    if status != success:
        raise ToolchainError(f"NVRTC cannot create a program ({status})")
    try:
        encoded = [option.encode() for option in request.options]
        (compiled,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        log = _read(nvrtc, program, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog)
        cubin = b""
        if compiled == success:
            cubin = _read_bytes(nvrtc, program, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return BuildResult(compiled == success and bool(cubin), cubin, log.strip(),
                       time.perf_counter() - started, f"nvrtc {version}")


def _read_bytes(nvrtc: Any, program: Any, size_of: Any, read: Any) -> bytes:
    status, size = size_of(program)
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS or size == 0:
        return b""
    buffer = b" " * size
    read(program, buffer)
    return bytes(buffer)


def _read(nvrtc: Any, program: Any, size_of: Any, read: Any) -> str:
    return _read_bytes(nvrtc, program, size_of, read).rstrip(b"\0").decode("utf-8", "replace")


class CubinStore:
    """A folder of cubins, `<key>.cubin` with `<key>.json` saying what made it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> bytes | None:
        path = self.folder / f"{key}.cubin"
        try:
            return path.read_bytes()
        except OSError:
            return None

    def result(self, key: str) -> BuildResult | None:
        """The stored cubin as a build result: what compiled it and how long it took."""
        cubin = self.get(key)
        if cubin is None:
            return None
        try:
            note = json.loads((self.folder / f"{key}.json").read_text())
        except (OSError, ValueError):
            note = {}
        return BuildResult(True, cubin, "", float(note.get("seconds", 0.0)),
                           str(note.get("compiler", "unknown")), cached=True)

    def put(self, key: str, result: BuildResult, name: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{key}.cubin").write_bytes(result.cubin)
        note = {"source": name, "compiler": result.compiler, "seconds": result.seconds}
        (self.folder / f"{key}.json").write_text(json.dumps(note) + "\n")

    def forget(self, key: str) -> None:
        for suffix in (".cubin", ".json"):
            (self.folder / f"{key}{suffix}").unlink(missing_ok=True)


def build(request: BuildRequest, store: CubinStore | None) -> BuildResult:
    """The cubin from the store, else compiled (and stored when it compiled)."""
    key = request.key()
    if store is not None:
        stored = store.result(key)
        if stored is not None:
            return stored
    result = compile_cubin_nvrtc(request)
    if store is not None and result.ok:
        store.put(key, result, request.name)
    return result


def build_all(requests: Sequence[BuildRequest], store: CubinStore | None, workers: int = 0,
              done: Callable[[int, BuildResult], None] = lambda index, result: None
              ) -> list[BuildResult]:
    """Every request built, those not in the store in `workers` processes (0: one per core);
    `done(index, result)` as each finishes. Worker processes are started fresh (spawn): the
    caller may hold a CUDA context, which a forked child must not inherit."""
    results: list[BuildResult | None] = [None] * len(requests)
    missing = []
    for index, request in enumerate(requests):
        stored = store.result(request.key()) if store is not None else None
        if stored is None:
            missing.append(index)
        else:
            results[index] = stored
            done(index, stored)
    count = min(len(missing), workers or os.cpu_count() or 1)
    if count <= 1:
        for index in missing:
            results[index] = build(requests[index], store)
            done(index, results[index])  # type: ignore[arg-type]
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=count, mp_context=context) as pool:
            futures = {pool.submit(build, requests[index], store): index for index in missing}
            for future in as_completed(futures):
                index = futures[future]
                results[index] = future.result()
                done(index, results[index])  # type: ignore[arg-type]
    return [result for result in results if result is not None]
