"""The whole analysis of one CUDA source: source → PTX → IR → features → model → advice.

`analyze` is what the CLI, the language server and `flipflop validate` call. It is a plain
function of its inputs; caching belongs to the caller.

How a launch gets its problem size, block and parameter values is `flipflop.space.problem`'s
concern; each report says where its problem size came from.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from flipflop.advice import NoLaunchableConfig
from flipflop.advice.advise import LaunchSearch
from flipflop.advice.assumptions import (
    launch_assumptions,
)
from flipflop.analysis import KernelFeatures
from flipflop.analysis.work import ThreadWork
from flipflop.constraints import BlockConstraints, SourceReading, instance_constraints, read_source
from flipflop.front import ReadPtx, kernel_features, read_ptx
from flipflop.gpu.profile import GpuProfile
from flipflop.gpu.profiles import load_profile
from flipflop.ir import Module, PerformanceDirectives
from flipflop.launch import LaunchShape, ProblemSize
from flipflop.model import candidate_blocks
from flipflop.options import AnalysisOptions
from flipflop.resources import Resources
from flipflop.results import AnalysisResult, KernelReport, LaunchReport
from flipflop.source import parse_source
from flipflop.source.focus import focus_order
from flipflop.source.instances import launches_of_instance
from flipflop.source.model import Annotation, LaunchSite, SourceFile
from flipflop.source.model import Kernel as SourceKernel
from flipflop.space.errors import SpaceError
from flipflop.space.problem import (
    ProblemOrigin,
    block_limit,
    launch_inputs,
)
from flipflop.space.request import space_annotation
from flipflop.toolchain import (
    AssemblyResult,
    CompileResult,
    KernelInfo,
    ToolCancelled,
    Toolchain,
    ToolDiagnostic,
    assemble,
    compile_to_ptx,
    find_toolchain,
)
from flipflop.toolchain.build import describe_kernels
from flipflop.toolchain.names import kernel_base_name, kernel_matches, written_instance
from flipflop.tuning import analyze_space, requested_template
from flipflop.variants.pool import Progress

# `flipflop.toolchain.assemble`'s signature: (ptx, arch, toolchain, timeout_s, cancel).
Assembler = Callable[[str, str, Toolchain, float, "threading.Event | None"], AssemblyResult]

def analyze(
    path: Path,
    text: str | None,
    options: AnalysisOptions,
    *,
    toolchain: Toolchain | None = None,
    cancel: threading.Event | None = None,
    assembler: Assembler = assemble,
    progress: Progress | None = None,
    kernel_progress: Progress | None = None,
    focus_line: int | None = None,
    early: Callable[[AnalysisResult], None] | None = None,
) -> AnalysisResult:
    """Analyse the saved file at `path`, or the unsaved buffer `text` that belongs to it.

    `assembler` runs `ptxas -v`; a caller that keeps state (the language server) may pass one
    that reuses results for PTX that differs only in line information.
    With compile-time tunables (options or a `// flipflop: tune` annotation) the configurations
    are variants of the source (`flipflop.tuning`); `progress` hears how many are compiled.
    `kernel_progress` hears how many kernels are analysed. The kernels nearest `focus_line`
    (0-based) go first, and `early` gets the result of those alone when others follow; the
    result lists the kernels in PTX order whatever the order of work.
    Raises `UnknownGpuError` for a bad GPU id, `ToolchainError` when nvcc is missing, hangs or
    is cancelled, and `SpaceError` for a search space that cannot be built; errors in the
    user's code come back in `AnalysisResult.diagnostics`.
    """
    profile = load_profile(options.gpu)
    tools = toolchain or find_toolchain(options.nvcc_path)
    source_text = text if text is not None else path.read_text(errors="surrogateescape")
    source = parse_source(source_text)
    arch = options.arch or profile.arch
    annotated = space_annotation(source, options.kernel)
    if options.space.given or (annotated is not None and annotated[1].tunes):
        return _analyze_space(path, source_text, source, profile, tools, arch, options,
                              annotated, cancel, progress)
    compiled = _compile_requested(path, source_text, source, tools, arch, options, cancel)
    if not compiled.ok:
        return AnalysisResult(path, profile, tools, arch, compiled.diagnostics, False, source,
                              None, ())
    # ptxas -v only adds resource usage. Parsing the PTX and counting the work of every candidate
    # shape need none of it, so they run while ptxas does: ptxas is a third of nvcc's time.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="flipflop-ptxas") as pool:
        assembling = pool.submit(
            assembler, compiled.ptx, compiled.arch, tools, options.compile_timeout_s, cancel
        )

        def resources_of(name: str) -> Resources | None:
            return assembling.result().resources.get(name)

        def diagnostics() -> tuple[ToolDiagnostic, ...]:
            return compiled.diagnostics + assembling.result().diagnostics

        def partial(done: list[KernelReport]) -> None:
            if early is not None:
                early(AnalysisResult(path, profile, tools, compiled.arch, diagnostics(), True,
                                     source, None, tuple(done)))

        work = _Work(kernel_progress, focus_line, partial if early is not None else None, cancel)
        front: ReadPtx | None = None
        try:
            front = read_ptx(compiled.ptx, path, source_text)
            kernels, notes = _kernel_reports(profile, front, source, options, resources_of,
                                             path, work)
        except ToolCancelled:
            raise
        except Exception:
            if assembling.result().ok:
                raise
            # PTX that ptxas rejects may defeat the analysis too; ptxas's errors say why.
            front, kernels, notes = None, [], []
        messages = diagnostics()
    if options.kernel is not None and not kernels:
        named = front.kernels if front is not None else describe_kernels(
            compiled.ptx, {}, path, source_text)
        known = ", ".join(k.display_name for k in named) or "none"
        notes.append(f"no kernel matches '{options.kernel}'; kernels in this file: {known}")
    return AnalysisResult(
        path, profile, tools, compiled.arch, messages, True, source,
        front.module if front is not None else None, tuple(kernels), tuple(notes),
    )


def _compile_requested(path: Path, source_text: str, source: SourceFile, tools: Toolchain,
                       arch: str, options: AnalysisOptions,
                       cancel: threading.Event | None) -> CompileResult:
    """The source compiled with the template instance `--kernel` names; SpaceError when those
    template arguments do not instantiate it and the file compiles without them."""
    flags = options.compile_options()
    template = requested_template(path, source_text, source, options.kernel, flags)
    if template is None or options.kernel is None:
        return compile_to_ptx(path, source_text, tools, arch, flags, cancel)
    instance = written_instance(options.kernel)
    text = source_text + template.instantiation(instance)
    compiled = compile_to_ptx(path, text, tools, arch, flags, cancel)
    if compiled.ok:
        return compiled
    plain = compile_to_ptx(path, source_text, tools, arch, flags, cancel)
    if not plain.ok:
        return plain
    errors = [d.message for d in compiled.diagnostics if d.severity == "error"]
    raise SpaceError(template.refusal(instance, errors[0] if errors else "nvcc refused them"))


@dataclass(frozen=True)
class _Work:
    """How the kernels of one file are worked through: progress, order, early results."""

    progress: Progress | None = None
    focus_line: int | None = None
    early: Callable[[list[KernelReport]], None] | None = None
    cancel: threading.Event | None = None


def _analyze_space(
    path: Path,
    source_text: str,
    source: SourceFile,
    profile: GpuProfile,
    tools: Toolchain,
    arch: str,
    options: AnalysisOptions,
    annotated: tuple[SourceKernel, Annotation] | None,
    cancel: threading.Event | None,
    progress: Progress | None,
) -> AnalysisResult:
    kernel = options.kernel or (annotated[0].name if annotated is not None else None)
    if kernel is None:
        defined = [k.name for k in source.kernels if k.is_definition]
        if len(defined) != 1:
            known = ", ".join(defined) or "none"
            raise SpaceError(f"a search space is of one kernel: give --kernel (kernels: {known})")
        kernel = defined[0]
    analysis = analyze_space(
        path, source_text, source, kernel, profile, tools, arch, options.compile_options(),
        options.launch_request(), options.space, annotated[1] if annotated else None,
        slack=options.slack, power_limits=options.power_limits,
        shortlist_share=options.shortlist_share, error=options.model_error(), cancel=cancel,
        progress=progress,
    )
    report = analysis.report
    advice = analysis.advice
    shown = advice.current or advice.recommendation.prediction
    origin: ProblemOrigin = report.problem_from
    launch = LaunchReport(
        site=None,
        problem=ProblemSize(threads=report.launch.problem(dict(shown.params))),
        problem_origin=origin,
        current_block=advice.current.block if advice.current is not None else None,
        dynamic_smem_bytes=options.dynamic_smem_bytes or 0,
        params=analysis.params,
        advice=advice,
        space=report,
    )
    source_kernel = source.kernel(kernel_base_name(analysis.kernel.display_name))
    kernel_report = KernelReport(analysis.kernel, analysis.resources, analysis.features,
                                 source_kernel, (launch,))
    return AnalysisResult(
        path, profile, tools, arch, analysis.diagnostics, True, source, None, (kernel_report,),
        report.notes,
    )


def _kernel_reports(
    profile: GpuProfile,
    front: ReadPtx,
    source: SourceFile,
    options: AnalysisOptions,
    resources_of: Callable[[str], Resources | None],
    path: Path,
    work: _Work = _Work(),
) -> tuple[list[KernelReport], list[str]]:
    notes: list[str] = []
    headers: dict[str, SourceFile | None] = {}
    selected = [info for info in front.kernels if _selected(info, options.kernel)]
    order, first_batch = focus_order(
        source, [kernel_base_name(info.display_name) for info in selected], work.focus_line
    )
    reports: dict[str, KernelReport] = {}
    reading = read_source(source.text) if selected else None
    defines = defined_values(options.defines)
    for done, position in enumerate(order, 1):
        if work.cancel is not None and work.cancel.is_set():
            raise ToolCancelled("the analysis was cancelled")
        info = selected[position]
        report = _kernel_report(profile, front.module, info, source, options, resources_of,
                                headers, KernelSource(reading, defines, path))
        if isinstance(report, str):
            notes.append(report)
        else:
            reports[info.name] = report
        if work.progress is not None:
            work.progress(done, len(order))
        if work.early is not None and done == first_batch < len(order):
            work.early([reports[i.name] for i in selected if i.name in reports])
    kernels = [reports[info.name] for info in selected if info.name in reports]
    return kernels, notes


def _kernel_report(
    profile: GpuProfile,
    module: Module,
    info: KernelInfo,
    source: SourceFile,
    options: AnalysisOptions,
    resources_of: Callable[[str], Resources | None],
    headers: dict[str, SourceFile | None],
    code: KernelSource,
) -> KernelReport | str:
    """One kernel's report, or the note that says why it has none."""
    source_kernel = source.kernel(kernel_base_name(info.display_name))
    # Messages name parameters as the source does, a kernel from an included header too.
    features = kernel_features(module, info, source, headers)
    function = module.function(info.name)
    directives = function.directives if function else PerformanceDirectives()

    def usage(name: str = info.name) -> Resources | None:
        return resources_of(name)

    constraints = instance_constraints(
        code.reading, source_kernel, info.display_name, module, info.name,
        source_path=str(code.path), defines=code.defines,
    )
    try:
        launches = _launch_reports(
            profile, features, directives, source, source_kernel, options, usage, constraints,
            info.display_name,
        )
    except NoLaunchableConfig as error:
        return f"{info.display_name}: not analysed: {error}"
    resources = usage()
    if launches is None or resources is None:
        return f"{info.display_name}: ptxas gave no resource usage; not analysed"
    with_usage = replace(info, resources=resources)
    return KernelReport(with_usage, resources, features, source_kernel, launches, constraints)


@dataclass(frozen=True)
class KernelSource:
    """What the block-shape constraints of a kernel instance are read from: the file parsed
    once for the stage, the `-D` values, and the file's path (for the PTX's line table)."""

    reading: SourceReading | None
    defines: Mapping[str, int]
    path: Path


def defined_values(defines: tuple[str, ...]) -> dict[str, int]:
    """`-D NAME=VALUE` options with an integer value (a bare `-D NAME` is 1, as for nvcc)."""
    values: dict[str, int] = {}
    for define in defines:
        name, sep, value = define.partition("=")
        try:
            values[name.strip()] = int(value.strip(), 0) if sep else 1
        except ValueError:
            continue
    return values


def _selected(info: KernelInfo, wanted: str | None) -> bool:
    return wanted is None or kernel_matches(wanted, info.name, info.display_name)


def _launch_reports(
    profile: GpuProfile,
    features: KernelFeatures,
    directives: PerformanceDirectives,
    source: SourceFile,
    source_kernel: SourceKernel | None,
    options: AnalysisOptions,
    usage: Callable[[], Resources | None],
    constraints: BlockConstraints,
    display_name: str = "",
) -> tuple[LaunchReport, ...] | None:
    """One report per launch site of this instance; None when ptxas gave the kernel no
    resource usage."""
    # The kernel may be defined in a header and launched here.
    name = source_kernel.name if source_kernel is not None else kernel_base_name(display_name)
    sites: tuple[LaunchSite | None, ...] = launches_of_instance(
        source.launches_of(name), display_name
    )
    if not sites or options.grid is not None or options.threads is not None:
        sites = sites[:1] or (None,)
    reports: list[LaunchReport] = []
    for site in sites:
        report = _launch_report(
            profile, features, directives, source_kernel, site, options, usage,
            dict(source.constants), constraints,
        )
        if report is None:
            return None
        reports.append(report)
    return tuple(reports)


def _launch_report(
    profile: GpuProfile,
    features: KernelFeatures,
    directives: PerformanceDirectives,
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    options: AnalysisOptions,
    usage: Callable[[], Resources | None],
    file_constants: Mapping[str, int],
    kernel_constraints: BlockConstraints,
) -> LaunchReport | None:
    inputs = launch_inputs(features, source_kernel, site, options.launch_request(), file_constants)
    problem, current, dynamic_smem = inputs.problem, inputs.current_block, inputs.dynamic_smem_bytes
    bound = block_limit(directives, source_kernel)
    launch_line = site.line + 1 if site else None
    bounds_line = source_kernel.line + 1 if source_kernel is not None else None
    constraints = kernel_constraints.with_launch_bound(bound, bounds_line).at_launch(
        current, launch_line)
    # What the same search would allow if the launch bounds were raised (FF002).
    unbounded_constraints = kernel_constraints.at_launch(current, launch_line)
    params = dict(inputs.params)
    two_d = (features.uses_tid_y and not inputs.one_d) or inputs.two_d
    three_d = (features.uses_tid_z and not inputs.one_d) or inputs.three_d
    # Counted once per shape, before the resources are needed (see `analyze`); the search with
    # and without launch bounds then shares the counts.
    counted: dict[LaunchShape, ThreadWork] = {}

    def work_for(shape: LaunchShape) -> ThreadWork:
        if shape not in counted:
            counted[shape] = features.work(shape, params)
        return counted[shape]

    fixed = constraints.fixed_shape()
    include = tuple(b for b in (current, fixed) if b is not None)
    for block in options.blocks or candidate_blocks(
        profile, two_d=two_d, three_d=three_d, include=include
    ):
        if not constraints.allows(block):
            continue  # the advisor rules it out before counting its work
        work_for(LaunchShape(block, problem.grid_for(block), dynamic_smem))
    resources = usage()
    if resources is None:
        return None

    search = LaunchSearch(
        profile, resources, two_d=two_d, three_d=three_d, current_block=current,
        blocks=options.blocks, power_limits=options.power_limits, slack=options.slack,
        shortlist_share=options.shortlist_share, block_limit=bound, constraints=constraints,
        size_assumed=inputs.origin == "default", error=options.model_error(),
    )
    advice = search.advise(problem, work_for, dynamic_smem)
    unbounded = None
    if bound is not None:
        raised = replace(search, block_limit=None, constraints=unbounded_constraints)
        unbounded = raised.advise(problem, work_for, dynamic_smem)
    assumptions = launch_assumptions(
        features, source_kernel, site, inputs, options.launch_request(), file_constants, advice,
        search,
    )
    return LaunchReport(
        site, problem, inputs.origin, current, dynamic_smem, inputs.params, advice, unbounded,
        assumptions,
    )
