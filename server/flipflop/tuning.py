"""The analysis of a search space of compile-time tunables, with Kernel Tuner's semantics.

Every configuration is the source with Kernel Tuner's `#define`s prepended
(`KernelTunerLaunch.prepare_source`), compiled once (`flipflop.variants`: NVRTC or nvcc, a disk
cache, worker processes), and costed at its own block and grid. The advice is the same as for
block shapes: Pareto front, recommendation under the slowdown budget, current configuration,
NVIDIA's heuristic (`flipflop.advice.space`).

What the space holds and which configuration is current is `flipflop.space.request`'s
concern; without a problem size, the default thread count of `flipflop.space.problem` stands in.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from flipflop.advice import Advice, Excluded
from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.advice.space import SpaceCandidate, advise_space
from flipflop.analysis import KernelFeatures
from flipflop.constraints import configuration_conflicts, read_source
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import LaunchShape
from flipflop.model import GpuSettings, SettingsError, check_settings
from flipflop.model.error import ModelError
from flipflop.resources import Resources
from flipflop.source.model import Annotation, Kernel, SourceFile
from flipflop.source.parse import parse_source
from flipflop.space.errors import ExpressionError, SourcePositionError, SpaceError
from flipflop.space.kernel_tuner import (
    GPU_SETTINGS,
    KernelTunerLaunch,
    instance_kernel_name,
)
from flipflop.space.problem import (
    DEFAULT_THREADS_1D,
    DEFAULT_THREADS_2D,
    LaunchRequest,
    parameter_values,
)
from flipflop.space.request import (
    Compiler,
    SpaceOptions,
    TemplateKernel,
    build_space,
    configurations_of,
    current_configuration,
    unused_tunables,
)
from flipflop.space.tunables import (
    Configuration,
    ParamValue,
    SearchSpace,
)
from flipflop.toolchain import CompileOptions, KernelInfo, Toolchain, ToolDiagnostic
from flipflop.toolchain.compile import effective_flags
from flipflop.toolchain.names import kernel_base_name, written_instance
from flipflop.variants.analyze import Backend, VariantAnalysis, VariantJob
from flipflop.variants.cache import DiskCache, default_cache, included_files
from flipflop.variants.nvrtc import nvrtc_version
from flipflop.variants.pool import PoolOptions, Progress, analyze_variants


@dataclass(frozen=True)
class SpaceReport:
    """How the space was built and what came of it (beside the advice)."""

    space: SearchSpace
    launch: KernelTunerLaunch
    size: int  # configurations that satisfy the restrictions
    evaluated: int  # configurations compiled and costed (after sampling)
    variants: int  # distinct sources compiled
    cached_variants: int
    compiler: Backend
    current: Configuration | None
    current_from: str  # "source defaults", "first values" or "" when there is none
    problem_from: Literal["option", "annotation", "default"]
    sample: int | None
    seed: int
    unused: tuple[str, ...] = ()  # tunables the source never names
    notes: tuple[str, ...] = ()
    # Configurations whose tuned values break what the kernel's code needs (a warning: the
    # space is the user's; see `flipflop.constraints.configuration_conflicts`).
    constraint_warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class SpaceAnalysis:
    """One kernel's space: the advice, and the variant that stands for the kernel in reports."""

    kernel: KernelInfo
    resources: Resources
    features: KernelFeatures
    advice: Advice
    report: SpaceReport
    params: tuple[tuple[str, float], ...]  # kernel parameter values (PTX names)
    diagnostics: tuple[ToolDiagnostic, ...] = field(default=())  # of the standing variant


def analyze_space(
    path: Path,
    source_text: str,
    source: SourceFile,
    kernel_name: str,
    profile: GpuProfile,
    toolchain: Toolchain,
    arch: str,
    compile_options: CompileOptions,
    request: LaunchRequest,
    options: SpaceOptions,
    annotation: Annotation | None,
    *,
    slack: float,
    power_limits: bool,
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE,
    error: ModelError | None = None,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    cache: DiskCache | None = None,
) -> SpaceAnalysis:
    """Compile, cost and advise every configuration of the space of `kernel_name`.

    Raises `SpaceError` for a space that cannot be built or holds nothing that compiles, and
    `ToolchainError` when the compiler is missing or the search is cancelled.
    """
    if "<" in kernel_name:  # `void f<float, 4>(float*)` names the instance `f<float, 4>`
        kernel_name = written_instance(kernel_name)
    try:
        space, launch, problem_from = build_space(
            options, annotation, profile.limits.max_threads_per_block
        )
    except ExpressionError as failure:
        raise _in_annotation(failure, annotation, source_text) from None
    launch = replace(launch, not_compiled=frozenset(
        name for name in GPU_SETTINGS
        if name in space.names and not re.search(rf"\b{name}\b", source_text)))
    check_gpu_settings(space, profile)
    notes: list[str] = []
    if problem_from == "default":
        two_d = launch.block_names(space.names)[1] in space.names
        threads = DEFAULT_THREADS_2D if two_d else DEFAULT_THREADS_1D
        launch = replace(launch, problem_size=threads)
        notes.append(
            f"no problem size given: {'×'.join(str(t) for t in threads if t > 1)} threads "
            "assumed (--problem-size or `// flipflop: problem=…` pins it)"
        )
    configurations, size = configurations_of(space, options)
    current, current_from = current_configuration(
        space, source, kernel_name, launch.block_names(space.names)
    )
    if current is not None and current not in configurations:
        if options.include_current:
            configurations = (current, *configurations)
        else:
            current, current_from = None, ""
    unused = tuple(name for name in unused_tunables(space, launch, source_text, kernel_name)
                   if name not in GPU_SETTINGS)
    if unused:
        notes.append(f"tunable(s) {', '.join(unused)} never appear in the source")
    if cache is None and options.use_cache:
        cache = default_cache()

    declared = kernel_declaration(path, source_text, source, kernel_name, compile_options)
    template = TemplateKernel.of(kernel_name, declared)
    unmatched = unmatched_parameters(declared, request)
    if unmatched:
        named = ", ".join(p.name for p in declared.parameters) if declared else "not found"
        notes.append(
            f"--param {', '.join(unmatched)}: no such parameter of {kernel_name} "
            f"(its parameters: {named}); ignored"
        )

    def job(configuration: Configuration, backend: Backend) -> VariantJob:
        text = launch.prepare_source(configuration, source_text)
        wanted = kernel_name
        if template is not None:
            wanted = instance_kernel_name(kernel_name, configuration)
            text += template.instantiation(wanted)
        return VariantJob(path, text, arch, compile_options, toolchain, backend, wanted)

    buildable, unbuildable = _buildable(configurations, launch)
    if not buildable:
        reasons = "; ".join(e.reason for e in unbuildable[:3])
        raise SpaceError(f"no configuration of the space can be built ({reasons})")
    pool = PoolOptions(options.workers, compile_options.timeout_s, options.in_process)
    backend, probed = _backend(options.compiler, buildable[0], job, cache, pool, cancel)
    analyses = analyze_variants([job(c, backend) for c in buildable], cache, pool,
                                cancel=cancel, progress=progress)
    return _advise(
        profile, declared, source, kernel_name, request, space, launch, buildable, analyses,
        SpaceReport(
            space=space, launch=launch, size=size, evaluated=len(configurations),
            variants=len({a.key for a in analyses}),
            # The compiler probe's variant came from this run, not from an earlier one.
            cached_variants=len({a.key for a in analyses if a.cached and a.key not in probed}),
            compiler=backend, current=current, current_from=current_from,
            problem_from=problem_from, sample=options.sample, seed=options.seed,
            unused=unused, notes=tuple(notes),
        ),
        slack=slack, power_limits=power_limits, shortlist_share=shortlist_share, error=error,
        unbuildable=unbuildable,
    )


def gpu_settings(configuration: Mapping[str, ParamValue]) -> GpuSettings:
    """The clocks and power limit a configuration's nvml_* tunables set (Kernel Tuner's
    NVMLObserver: MHz and W)."""
    value = {name: _number(name, configuration[name]) for name in GPU_SETTINGS
             if name in configuration}
    return GpuSettings(value.get("nvml_gr_clock"), value.get("nvml_mem_clock"),
                       value.get("nvml_pwr_limit"))


def check_gpu_settings(space: SearchSpace, profile: GpuProfile) -> None:
    """SpaceError naming the first value of a clock or power-limit tunable the GPU cannot be
    set to (checked before anything is compiled)."""
    for tunable in space.tunables:
        if tunable.name not in GPU_SETTINGS:
            continue
        for value in tunable.values:
            try:
                check_settings(profile, gpu_settings({tunable.name: value}))
            except SettingsError as failure:
                raise SpaceError(f"{tunable.name}={value}: {failure}") from None


def _number(name: str, value: ParamValue) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpaceError(f"{name}={value!r}: a clock or power limit must be a number")
    return float(value)


def _buildable(configurations: Sequence[Configuration], launch: KernelTunerLaunch
               ) -> tuple[list[Configuration], list[Excluded]]:
    """The configurations whose definitions and grid can be computed, and why the others
    cannot (a define or grid divisor that divides by zero for them)."""
    buildable: list[Configuration] = []
    excluded: list[Excluded] = []
    for configuration in configurations:
        try:
            launch.defines(configuration)
        except SpaceError as error:
            try:
                block = launch.block(configuration)
            except SpaceError:
                block = (0, 0, 0)
            excluded.append(Excluded(block, str(error), tuple(configuration.items())))
            continue
        buildable.append(configuration)
    return buildable, excluded


def _in_annotation(error: ExpressionError, annotation: Annotation | None,
                   text: str) -> SpaceError:
    """`error` at its place in the source when the expression is written in `annotation`."""
    if annotation is None:
        return error
    lines = text.splitlines()
    for number in range(annotation.range.start.line, annotation.range.end.line + 1):
        line = lines[number] if number < len(lines) else ""
        found = line.find(error.text)
        if error.text and found >= 0:
            return SourcePositionError(error.reason, number + 1, found + error.column)
    return error


def _backend(
    wanted: Compiler,
    probe: Configuration,
    job: Callable[[Configuration, Backend], VariantJob],
    cache: DiskCache | None,
    pool: PoolOptions,
    cancel: threading.Event | None,
) -> tuple[Backend, frozenset[str]]:
    """NVRTC when asked, or when it is installed and compiles the first configuration; and
    the keys of the variants this probe compiled (unless they came from the cache)."""
    if wanted != "auto":
        return wanted, frozenset()
    if nvrtc_version() is None:
        return "nvcc", frozenset()
    (tried,) = analyze_variants([job(probe, "nvrtc")], cache, pool, cancel=cancel)
    fresh = frozenset() if tried.cached else frozenset({tried.key})
    if tried.ok:
        return "nvrtc", fresh
    # NVRTC compiles device code only: a source with host code (main, <vector>) needs nvcc.
    (fallback,) = analyze_variants([job(probe, "nvcc")], cache, pool, cancel=cancel)
    fresh |= frozenset() if fallback.cached else frozenset({fallback.key})
    return ("nvcc" if fallback.ok else "nvrtc"), fresh


def _beyond(reason: str, source: SourceFile) -> bool:
    """Whether a compiler error is on a line after the source's last: the appended instance."""
    found = re.search(r"\bline (\d+):", reason)
    return found is not None and int(found.group(1)) > source.text.count("\n") + 1


def kernel_declaration(path: Path, text: str, source: SourceFile, kernel_name: str,
                       options: CompileOptions) -> Kernel | None:  # fmt: skip
    """The kernel's definition: in the file, else in a file it includes (a kernel body kept in
    a header, as CLBlast's `.opencl` parts are), for its parameter names."""
    name = kernel_base_name(kernel_name)
    found = source.kernel(name)
    if found is not None:
        return found
    folders = effective_flags(path.absolute(), options).include_dirs
    for included in included_files(path.absolute(), text, folders):
        try:
            found = parse_source(included.read_text(errors="replace")).kernel(name)
        except OSError:
            continue
        if found is not None:
            return found
    return None


def requested_template(path: Path, text: str, source: SourceFile, kernel_name: str | None,
                       options: CompileOptions) -> TemplateKernel | None:
    """The kernel template of the file or its headers whose instance `kernel_name` names
    (`f<float, 4>`, as Kernel Tuner names one and instantiates it itself), else None."""
    if kernel_name is None or "<" not in kernel_name:
        return None
    declared = kernel_declaration(path, text, source, kernel_name, options)
    if declared is None or not declared.template_parameters:
        return None
    return TemplateKernel.declared_as(declared)


def unmatched_parameters(declared: Kernel | None, request: LaunchRequest) -> list[str]:
    """Names in `--param` that are neither a source parameter of the kernel nor a PTX name."""
    known = {p.name for p in declared.parameters} if declared is not None else set()
    return [
        name for name, _ in request.params if name not in known and "_param_" not in name
    ]


def _advise(
    profile: GpuProfile,
    source_kernel: Kernel | None,
    source: SourceFile,
    kernel_name: str,
    request: LaunchRequest,
    space: SearchSpace,
    launch: KernelTunerLaunch,
    configurations: Sequence[Configuration],
    analyses: Sequence[VariantAnalysis],
    report: SpaceReport,
    *,
    slack: float,
    power_limits: bool,
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE,
    error: ModelError | None = None,
    unbuildable: Sequence[Excluded] = (),
) -> SpaceAnalysis:
    candidates: list[SpaceCandidate] = []
    excluded: list[Excluded] = list(unbuildable)
    standing: dict[Configuration, tuple[VariantAnalysis, int]] = {}
    params: dict[str, float] = {}
    for configuration, analysis in zip(configurations, analyses, strict=True):
        items = tuple(configuration.items())
        block = launch.block(configuration)
        if not analysis.ok or not analysis.kernels:
            excluded.append(Excluded(block, analysis.failure, items))
            continue
        kernel = analysis.kernels[0]
        resources = kernel.info.resources
        if resources is None:
            excluded.append(Excluded(block, "ptxas gave no resource usage", items))
            continue
        try:
            grid = launch.grid(configuration)
        except SpaceError as failure:
            excluded.append(Excluded(block, str(failure), items))
            continue
        params = parameter_values(kernel.features, source_kernel, None, request, {})
        shape = LaunchShape(block, grid, request.dynamic_smem_bytes or 0)
        candidates.append(
            SpaceCandidate(items, shape, resources, kernel.features.work(shape, params),
                           gpu_settings(configuration))
        )
        standing[configuration] = (analysis, len(candidates) - 1)
    if not candidates:
        reasons = "; ".join(e.reason for e in excluded[:3])
        template = TemplateKernel.of(kernel_name, source_kernel) if source_kernel else None
        if template is not None and excluded and all(
                _beyond(e.reason, source) for e in excluded):
            raise SpaceError(template.refusal(kernel_name, excluded[0].reason))
        raise SpaceError(f"no configuration of the space compiled ({reasons})")
    ordered = list(standing)
    conflicts = configuration_conflicts(
        read_source(source.text), source.kernel(kernel_name.split("<", 1)[0].strip()),
        [({name: value for name, value in c.items() if isinstance(value, int)},
          launch.block(c), ", ".join(f"{name}={value}" for name, value in c.items()))
         for c in ordered],
    )
    if conflicts.warnings:
        report = replace(report, constraint_warnings=conflicts.warnings)
    # Advice is safe: a configuration whose values break what the code proves is shown in the
    # warning, not recommended (the current one stays, to compare with).
    ruled_out = {standing[ordered[position]][1]: reason
                 for position, reason in conflicts.broken
                 if report.current is None or ordered[position] != report.current}
    if ruled_out and len(ruled_out) < len(candidates):
        excluded += [Excluded(c.shape.block, ruled_out[i], c.params)
                     for i, c in enumerate(candidates) if i in ruled_out]
        candidates = [c for i, c in enumerate(candidates) if i not in ruled_out]
    block_names = launch.block_names(space.names)
    advice = advise_space(
        profile, candidates, excluded=excluded,
        current=tuple(report.current.items()) if report.current is not None else None,
        block_names=block_names, power_limits=power_limits, slack=slack,
        shortlist_share=shortlist_share, error=error,
    )
    shown = advice.current or advice.recommendation.prediction
    chosen = next(c for c in standing if tuple(c.items()) == shown.params)
    analysis, _ = standing[chosen]
    kernel = analysis.kernels[0]
    assert kernel.info.resources is not None
    return SpaceAnalysis(
        kernel=kernel.info,
        resources=kernel.info.resources,
        features=kernel.features,
        advice=advice,
        report=report,
        params=tuple(params.items()),
        diagnostics=analysis.diagnostics,
    )
