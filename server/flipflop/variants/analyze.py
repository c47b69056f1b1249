"""One variant of a source: compile it (NVRTC or nvcc + ptxas), then the front half every analysis
shares (`flipflop.front`: parse the PTX, name the kernels, extract features).

Runs in a worker process (see `flipflop.variants.pool`), so everything it takes and returns is
plain picklable data. Compile failures are results, not exceptions: a tunable configuration that
does not compile is excluded with the compiler's reason.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from flipflop.analysis import KernelFeatures
from flipflop.front import kernel_features, read_ptx
from flipflop.ptx.errors import PtxSyntaxError
from flipflop.resources import Resources
from flipflop.source.model import SourceFile
from flipflop.source.parse import parse_source
from flipflop.toolchain.build import KernelInfo, build
from flipflop.toolchain.compile import CompileOptions, effective_flags
from flipflop.toolchain.diagnostics import (
    ToolDiagnostic,
    ensure_failure_reported,
    parse_tool_output,
)
from flipflop.toolchain.discovery import Toolchain
from flipflop.toolchain.names import kernel_matches
from flipflop.toolchain.ptxas import PtxSourceMap, parse_ptxas_verbose
from flipflop.variants.cache import DiskCache, cache_key, compile_key, included_files
from flipflop.variants.nvrtc import compile_with_nvrtc, nvrtc_options, nvrtc_version

Backend = Literal["nvrtc", "nvcc"]


@dataclass(frozen=True)
class VariantJob:
    """One source text to analyse as if it were the file at `path`."""

    path: Path
    text: str
    arch: str
    options: CompileOptions
    toolchain: Toolchain
    backend: Backend
    kernel: str | None = None  # only this kernel's features (source or PTX name); None: all

    def key(self) -> str:
        """Hash of everything the result depends on: text, flags, toolchain, included files."""
        return cache_key(*self._inputs())

    def compile_key(self) -> str:
        """The same inputs, for the compiler's output alone (see `compile_key`)."""
        return compile_key(*self._inputs())

    def _inputs(self) -> tuple[str | bytes, ...]:
        flags = effective_flags(self.path.absolute(), self.options)
        included = included_files(self.path.absolute(), self.text, flags.include_dirs)
        contents = [f"{p}\0".encode() + _read_bytes(p) for p in included]
        compiler = (
            f"nvrtc {nvrtc_version()}" if self.backend == "nvrtc"
            else f"nvcc {self.toolchain.version} {self.toolchain.nvcc}"
        )
        return (
            compiler, self.arch, repr(flags), str(self.kernel), str(self.path.absolute()),
            self.text, *contents,
        )


@dataclass(frozen=True)
class CompiledVariant:
    """What the compilers said about a variant, kept apart from its analysis (which changes
    with FlipFlop's code more often than the compilers do). PTX is stored compressed: fully
    unrolled tiles reach megabytes of text, which zlib shrinks five- to ninefold (an unrolled
    convolution variant 5.5×, a CLBlast GEMM variant 9.1×)."""

    compressed_ptx: bytes  # zlib; empty when the variant did not compile
    diagnostics: tuple[ToolDiagnostic, ...]
    usage: tuple[tuple[str, Resources], ...]  # ptxas's resources per kernel
    compile_s: float

    @property
    def ptx(self) -> str:
        return zlib.decompress(self.compressed_ptx).decode() if self.compressed_ptx else ""


@dataclass(frozen=True)
class VariantKernel:
    info: KernelInfo  # with ptxas's resources
    features: KernelFeatures


@dataclass(frozen=True)
class VariantAnalysis:
    key: str
    backend: Backend
    ok: bool
    diagnostics: tuple[ToolDiagnostic, ...]
    kernels: tuple[VariantKernel, ...]  # the selected kernels that assembled
    ptx_sha256: str
    ptx_bytes: int
    compile_s: float
    analysis_s: float
    cached: bool = False

    @property
    def failure(self) -> str:
        """The first error, as one line, for excluding the configuration."""
        for diagnostic in self.diagnostics:
            if diagnostic.severity == "error":
                where = f"line {diagnostic.line}: " if diagnostic.line else ""
                return f"{diagnostic.tool}: {where}{diagnostic.message}"
        return "the kernel was not found in the compiled PTX"


def analyze_variant(job: VariantJob, cache: DiskCache | None = None) -> VariantAnalysis:
    """Compile and analyse `job`, through the cache.

    Raises `ToolchainError` when a tool is missing or hangs: that is not the variant's fault.
    """
    key = job.key()
    if cache is not None:
        hit = cache.get(key)
        if isinstance(hit, VariantAnalysis):
            return replace(hit, cached=True)
    result = _analyze(job, key, cache)
    if cache is not None:
        cache.put(key, result)
    return result


def _compiled(job: VariantJob, cache: DiskCache | None) -> CompiledVariant:
    """The compilers' output for `job`, from the cache when an earlier analysis compiled it."""
    key = job.compile_key() if cache is not None else ""
    if cache is not None:
        hit = cache.get(key)
        if isinstance(hit, CompiledVariant):
            return hit
    started = time.perf_counter()
    ptx, diagnostics, usage = (
        _nvrtc_compile(job) if job.backend == "nvrtc" else _nvcc_compile(job)
    )
    compiled = CompiledVariant(
        zlib.compress(ptx.encode(), 6) if ptx else b"", diagnostics, tuple(usage.items()),
        time.perf_counter() - started,
    )
    if cache is not None:
        cache.put(key, compiled)
    return compiled


def _analyze(job: VariantJob, key: str, cache: DiskCache | None) -> VariantAnalysis:
    compiled = _compiled(job, cache)
    ptx, diagnostics, usage = compiled.ptx, compiled.diagnostics, dict(compiled.usage)
    compile_s = compiled.compile_s
    if not ptx:
        return VariantAnalysis(key, job.backend, False, diagnostics, (), "", 0, compile_s, 0.0)
    digest = hashlib.sha256(ptx.encode()).hexdigest()
    # Different texts often compile to the same PTX (a tunable the kernel does not read):
    # such PTX is analysed once.
    ptx_key = cache_key("ptx", digest, str(job.kernel), str(job.path.absolute()))
    kernels: tuple[VariantKernel, ...] | None = None
    if cache is not None:
        hit = cache.get(ptx_key)
        if isinstance(hit, tuple):
            kernels = hit
    analysis_started = time.perf_counter()
    if kernels is None:
        try:
            kernels = _features(job, ptx, usage)
        except PtxSyntaxError as error:
            failure = ToolDiagnostic(None, error.line, error.column, "error",
                                     f"the PTX could not be read: {error.message}", "flipflop")
            return VariantAnalysis(key, job.backend, False, (*diagnostics, failure), (),
                                   digest, len(ptx), compile_s, 0.0)
        if cache is not None:
            cache.put(ptx_key, kernels)
    return VariantAnalysis(
        key, job.backend, bool(kernels), diagnostics, kernels, digest, len(ptx), compile_s,
        time.perf_counter() - analysis_started,
    )


def _features(job: VariantJob, ptx: str, usage: dict[str, Resources]) -> tuple[VariantKernel, ...]:
    """The selected kernels that assembled, with their features (`flipflop.front`)."""
    front = read_ptx(ptx, job.path, job.text, usage)
    source = parse_source(job.text)
    headers: dict[str, SourceFile | None] = {}
    return tuple(
        VariantKernel(info, kernel_features(front.module, info, source, headers))
        for info in front.kernels
        if _selected(info, job.kernel) and info.resources is not None
    )


def _selected(info: KernelInfo, wanted: str | None) -> bool:
    """By mangled, demangled or source name; `k<64,8>` names one instantiation of `k`."""
    return wanted is None or kernel_matches(wanted, info.name, info.display_name)


def _nvcc_compile(job: VariantJob) -> tuple[str, tuple[ToolDiagnostic, ...], dict[str, Resources]]:
    built = build(job.path, job.text, job.options, job.arch, job.toolchain)
    if not built.ok or built.assembly is None:
        return "", built.diagnostics, {}
    return built.ptx, built.diagnostics, dict(built.assembly.resources)


def _nvrtc_compile(job: VariantJob) -> tuple[str, tuple[ToolDiagnostic, ...], dict[str, Resources]]:
    path = job.path.absolute()
    flags = effective_flags(path, job.options)
    cuda_include = job.toolchain.nvcc.resolve().parent.parent / "include"
    folders = [path.parent, *flags.include_dirs, *([cuda_include] if cuda_include.is_dir() else [])]
    result = compile_with_nvrtc(str(path), job.text, nvrtc_options(job.arch, flags, folders))
    front_end, ptxas_report = _split_log(result.log)
    diagnostics = parse_tool_output(front_end)
    if result.ok:
        source_map = PtxSourceMap.of(result.ptx)
        diagnostics += tuple(source_map.to_source(d) for d in parse_tool_output(ptxas_report))
    diagnostics = ensure_failure_reported(
        diagnostics, "nvrtc", 0 if result.ok else 1, result.log
    )
    if not result.ok:
        return "", diagnostics, {}
    return result.ptx, diagnostics, dict(parse_ptxas_verbose(ptxas_report))


def _split_log(log: str) -> tuple[str, str]:
    """NVRTC's log holds the front end's messages, then ptxas's lines."""
    front: list[str] = []
    ptxas: list[str] = []
    for line in log.splitlines():
        (ptxas if line.startswith("ptxas") else front).append(line)
    return "\n".join(front), "\n".join(ptxas)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
