"""The analysis of a search space of compile-time tunables, with Kernel Tuner's semantics.

Every configuration is the source with Kernel Tuner's `#define`s prepended
(`KernelTunerLaunch.prepare_source`), compiled once (`flipflop.variants`: NVRTC or nvcc, a disk
cache, worker processes), and costed at its own block and grid. The advice is the same as for
block shapes: Pareto front, recommendation under the slowdown budget, current configuration,
NVIDIA's heuristic (`flipflop.advice.space`).

Where the space comes from, first found: `--tune`/`--tune-file` options, else a
`// flipflop: tune …` annotation above a kernel. The launch semantics come from the options,
else the annotation (`problem=`, `grid_div_x=`, `block_size_names=`), else Kernel Tuner's
defaults; without a problem size, the default thread count of `flipflop.space.problem`.
The current configuration is the source's own defaults (`#ifndef NAME / #define NAME v`), else
each tunable's first value.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from flipflop.advice import Advice, Excluded
from flipflop.advice.space import SpaceCandidate, advise_space
from flipflop.analysis import KernelFeatures
from flipflop.formats.tune_file import read_tune_file
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import LaunchShape
from flipflop.resources import Resources
from flipflop.source.model import Annotation, SourceFile
from flipflop.source.model import Kernel as SourceKernel
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import (
    KernelTunerLaunch,
    instance_kernel_name,
    kernel_tuner_launch,
)
from flipflop.space.problem import (
    DEFAULT_THREADS_1D,
    DEFAULT_THREADS_2D,
    LaunchRequest,
    parameter_values,
)
from flipflop.space.tunables import (
    Configuration,
    ParamValue,
    SearchSpace,
    Tunable,
    choose_indices,
    parse_tune_option,
)
from flipflop.toolchain import CompileOptions, KernelInfo, Toolchain, ToolDiagnostic
from flipflop.variants.analyze import Backend, VariantAnalysis, VariantJob
from flipflop.variants.cache import DiskCache, default_cache
from flipflop.variants.nvrtc import nvrtc_version
from flipflop.variants.pool import PoolOptions, Progress, analyze_variants

Compiler = Literal["auto", "nvrtc", "nvcc"]


@dataclass(frozen=True)
class SpaceOptions:
    """What the user said about the search space (command-line options or settings)."""

    tune: tuple[str, ...] = ()  # `NAME=V1,V2,…` or `NAME=A..B:STEP`
    tune_file: Path | None = None  # a Kernel Tuner `tune_params` JSON object
    tunables: tuple[Tunable, ...] = ()  # already parsed (a measured space, a T1 file)
    restrictions: tuple[str, ...] = ()
    problem_size: tuple[str, ...] | None = None  # integers or expressions of the tunables
    grid_div: tuple[tuple[str, ...] | None, tuple[str, ...] | None, tuple[str, ...] | None] = (
        None, None, None,
    )
    block_size_names: tuple[str, ...] | None = None
    # Launch semantics already built (a T1 file); the options above refine it.
    launch: KernelTunerLaunch | None = None
    sample: int | None = None
    seed: int = 0
    # Exactly these configurations (what a measurement file measured); None: the whole space.
    configurations: tuple[Mapping[str, ParamValue], ...] | None = None
    # Also evaluate the source's default configuration when it is not among those asked for.
    include_current: bool = True
    compiler: Compiler = "auto"
    workers: int = 0  # 0: one per core
    use_cache: bool = True
    in_process: bool = False  # compile here instead of in worker processes

    @property
    def given(self) -> bool:
        return bool(self.tune or self.tunables or self.tune_file is not None
                    or self.configurations is not None)


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


def space_annotation(
    source: SourceFile, kernel: str | None
) -> tuple[SourceKernel, Annotation] | None:
    """The kernel whose annotation declares a space (the named one, else the first)."""
    for candidate in source.kernels:
        annotation = candidate.annotation
        if annotation is None or not annotation.tunes:
            continue
        wanted = kernel.split("<", 1)[0].strip() if kernel is not None else None
        if wanted is None or wanted in (candidate.name, candidate.qualified_name):
            return candidate, annotation
    return None


def build_space(
    options: SpaceOptions, annotation: Annotation | None, max_threads: int
) -> tuple[SearchSpace, KernelTunerLaunch, Literal["option", "annotation", "default"]]:
    """The search space and launch semantics; raises `SpaceError` with the reason."""
    from flipflop.space.kernel_tuner import kernel_tuner_search_space

    tunables: list[Tunable] = [*options.tunables]
    tunables.extend(parse_tune_option(spec) for spec in options.tune)
    if options.tune_file is not None:
        tunables.extend(read_tune_file(options.tune_file))
    restrictions = list(options.restrictions)
    if not tunables and annotation is not None:
        tunables = [parse_tune_option(spec) for spec in annotation.tune]
    if annotation is not None:
        restrictions.extend(annotation.restrictions)
    if not tunables:
        raise SpaceError("no tunables: give --tune NAME=VALUES or a `// flipflop: tune` annotation")
    space = kernel_tuner_search_space(tunables, restrictions, max_threads)

    base = options.launch
    problem: Sequence[int | str] | None = options.problem_size
    origin: Literal["option", "annotation", "default"] = "option"
    if problem is None and annotation is not None and annotation.problem:
        problem, origin = annotation.problem.split(","), "annotation"
    written = annotation.grid_div if annotation else (None, None, None)
    grid_div = [
        list(option) if option is not None else (text.split(",") if text else None)
        for option, text in zip(options.grid_div, written, strict=True)
    ]
    names = options.block_size_names
    if names is None and annotation is not None and annotation.block_size_names:
        names = tuple(annotation.block_size_names.split(","))
    launch = kernel_tuner_launch(
        [_integer_or_text(entry) for entry in problem or ()] or [1],
        grid_div[0], grid_div[1], grid_div[2], block_size_names=names,
    )
    if base is not None:
        # The given launch (a T1 file's) with whatever the options set on top of it.
        launch = replace(
            base,
            problem_size=launch.problem_size if problem is not None else base.problem_size,
            grid_div_x=launch.grid_div_x if grid_div[0] is not None else base.grid_div_x,
            grid_div_y=launch.grid_div_y if grid_div[1] is not None else base.grid_div_y,
            grid_div_z=launch.grid_div_z if grid_div[2] is not None else base.grid_div_z,
            block_size_names=names if names is not None else base.block_size_names,
        )
        origin = "option"
    elif problem is None:
        origin = "default"
    launch.check(space.names)
    return space, launch, origin


def _integer_or_text(entry: str | int) -> int | str:
    if isinstance(entry, int):
        return entry
    text = entry.strip()
    try:
        return int(text, 0)
    except ValueError:
        return text


@dataclass(frozen=True)
class _TemplateKernel:
    """A kernel tuned through its template arguments: `--kernel 'sgemm<BM,BN,8>'`."""

    name: str
    parameter_types: tuple[str, ...]

    @classmethod
    def of(cls, kernel_name: str, source: SourceFile) -> _TemplateKernel | None:
        if "<" not in kernel_name:
            return None
        base = kernel_name.split("<", 1)[0].strip()
        kernel = source.kernel(base)
        if kernel is None or not kernel.template_parameters:
            raise SpaceError(f"{base} is not a kernel template in this file")
        return cls(base, tuple(p.type for p in kernel.parameters))

    def instantiation(self, instance: str) -> str:
        """The explicit instantiation that makes nvcc emit `instance` (appended to the source)."""
        return f"\ntemplate __global__ void {instance}({', '.join(self.parameter_types)});\n"


def template_arguments(kernel_name: str) -> tuple[str, ...]:
    """`sgemm<BM, BN, 8>` -> ("BM", "BN", "8")."""
    inside = kernel_name.partition("<")[2].rpartition(">")[0]
    return tuple(part.strip() for part in inside.split(",")) if inside else ()


def _launched_values(
    space: SearchSpace, source: SourceFile, kernel_name: str, block_names: Sequence[str]
) -> dict[str, ParamValue]:
    """Tunables that a launch of the template in the file instantiates with constants
    (`sgemm<BM, BN><<<…, (BM * BN) / TM>>>` with `const uint BM = 128;`): the template
    arguments, and the block for the block-size tunables. That launch is the current one."""
    pattern = template_arguments(kernel_name)
    if not pattern:
        return {}
    base = kernel_name.split("<", 1)[0].strip()
    for site in source.launches_of(base):
        found: dict[str, ParamValue] = {}
        for name, value in zip(pattern, site.template_values, strict=False):
            if name in space.names and value is not None:
                found[name] = value
        if not found:
            continue
        block = site.block_folded.value
        if block is not None:
            for name, extent in zip(block_names, block, strict=False):
                if name in space.names:
                    found.setdefault(name, extent)
        return found
    return {}


def current_configuration(
    space: SearchSpace, source: SourceFile, kernel_name: str = "",
    block_names: Sequence[str] = (),
) -> tuple[Configuration | None, str]:
    """The configuration the source runs as written: template arguments of a launch of the
    kernel, else the tunables' defaults (`#ifndef` definitions), else their first values."""
    values: dict[str, ParamValue] = {}
    from_source = False
    launched = _launched_values(space, source, kernel_name, block_names)
    for tunable in space.tunables:
        if tunable.name in launched:
            values[tunable.name] = _matching(tunable, launched[tunable.name])
            from_source = True
            continue
        definition = source.default_of(tunable.name)
        chosen = tunable.values[0]
        if definition is not None:
            for value in tunable.values:
                if str(value) == definition.value.strip("()"):
                    chosen, from_source = value, True
                    break
        values[tunable.name] = chosen
    configuration = space.configuration(values)
    if not space.satisfies(configuration):
        return None, ""
    origin = "launch site" if launched else "source defaults"
    return configuration, origin if from_source else "first values"


def _matching(tunable: Tunable, value: ParamValue) -> ParamValue:
    """The tunable's own spelling of `value` (64 for 64.0), or `value` when it is not listed."""
    return next((v for v in tunable.values if v == value), value)


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
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    cache: DiskCache | None = None,
) -> SpaceAnalysis:
    """Compile, cost and advise every configuration of the space of `kernel_name`.

    Raises `SpaceError` for a space that cannot be built or holds nothing that compiles, and
    `ToolchainError` when the compiler is missing or the search is cancelled.
    """
    space, launch, problem_from = build_space(
        options, annotation, profile.limits.max_threads_per_block
    )
    notes: list[str] = []
    if problem_from == "default":
        two_d = launch.block_names(space.names)[1] in space.names
        threads = DEFAULT_THREADS_2D if two_d else DEFAULT_THREADS_1D
        launch = replace(launch, problem_size=threads)
        notes.append(
            f"no problem size given: {'×'.join(str(t) for t in threads if t > 1)} threads "
            "assumed (--problem-size or `// flipflop: problem=…` pins it)"
        )
    configurations, size = _configurations(space, options)
    current, current_from = current_configuration(
        space, source, kernel_name, launch.block_names(space.names)
    )
    if current is not None and current not in configurations:
        if options.include_current:
            configurations = (current, *configurations)
        else:
            current, current_from = None, ""
    unused = _unused_tunables(space, launch, source_text, kernel_name)
    if unused:
        notes.append(f"tunable(s) {', '.join(unused)} never appear in the source")
    if cache is None and options.use_cache:
        cache = default_cache()

    template = _TemplateKernel.of(kernel_name, source)

    def job(configuration: Configuration, backend: Backend) -> VariantJob:
        text = launch.prepare_source(configuration, source_text)
        wanted = kernel_name
        if template is not None:
            wanted = instance_kernel_name(kernel_name, configuration)
            text += template.instantiation(wanted)
        return VariantJob(path, text, arch, compile_options, toolchain, backend, wanted)

    pool = PoolOptions(options.workers, compile_options.timeout_s, options.in_process)
    backend, probed = _backend(options.compiler, configurations[0], job, cache, pool, cancel)
    analyses = analyze_variants([job(c, backend) for c in configurations], cache, pool,
                                cancel=cancel, progress=progress)
    return _advise(
        profile, source, kernel_name, request, space, launch, configurations, analyses,
        SpaceReport(
            space=space, launch=launch, size=size, evaluated=len(configurations),
            variants=len({a.key for a in analyses}),
            # The compiler probe's variant came from this run, not from an earlier one.
            cached_variants=len({a.key for a in analyses if a.cached and a.key not in probed}),
            compiler=backend, current=current, current_from=current_from,
            problem_from=problem_from, sample=options.sample, seed=options.seed,
            unused=unused, notes=tuple(notes),
        ),
        slack=slack, power_limits=power_limits,
    )


def _unused_tunables(
    space: SearchSpace, launch: KernelTunerLaunch, source_text: str, kernel_name: str
) -> tuple[str, ...]:
    """Tunables nothing reads: not the source, the kernel's template arguments, the block or
    the grid (a typo, or a parameter the kernel lost)."""
    used = set(template_arguments(kernel_name)) | set(launch.block_names(space.names))
    for entry in (*launch.problem_size, *(d for ds in launch.grid_divs for d in ds or ())):
        if not isinstance(entry, int):
            used |= entry.names
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", source_text))
    return tuple(t.name for t in space.tunables if t.name not in used and t.name not in words)


def _configurations(
    space: SearchSpace, options: SpaceOptions
) -> tuple[tuple[Configuration, ...], int]:
    if options.configurations is not None:
        chosen = tuple(space.configuration(dict(values)) for values in options.configurations)
        size = len(chosen)
    else:
        size = space.size
        chosen = space.configurations
    if options.sample is not None and options.sample < len(chosen):
        picked = choose_indices(len(chosen), options.sample, options.seed)
        chosen = tuple(chosen[index] for index in picked)
    if not chosen:
        raise SpaceError("the search space is empty: no configuration satisfies the restrictions")
    return chosen, size


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


def _advise(
    profile: GpuProfile,
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
) -> SpaceAnalysis:
    source_kernel = source.kernel(kernel_name.split("<", 1)[0].strip())
    candidates: list[SpaceCandidate] = []
    excluded: list[Excluded] = []
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
        except SpaceError as error:
            excluded.append(Excluded(block, str(error), items))
            continue
        params = parameter_values(kernel.features, source_kernel, None, request, {})
        shape = LaunchShape(block, grid, request.dynamic_smem_bytes or 0)
        candidates.append(
            SpaceCandidate(items, shape, resources, kernel.features.work(shape, params))
        )
        standing[configuration] = (analysis, len(candidates) - 1)
    if not candidates:
        reasons = "; ".join(e.reason for e in excluded[:3])
        raise SpaceError(f"no configuration of the space compiled ({reasons})")
    block_names = launch.block_names(space.names)
    advice = advise_space(
        profile, candidates, excluded=excluded,
        current=tuple(report.current.items()) if report.current is not None else None,
        block_names=block_names, power_limits=power_limits, slack=slack,
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
