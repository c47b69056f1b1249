"""The launch inputs of one kernel launch: problem size, block as written, parameters, smem.

Problem size (how many blocks a launch has) comes from, in order: `--grid`/`--threads`, a
`// flipflop:` annotation, the launch site in the source (constant-folded, with kernel
arguments that fold to constants), and finally `DEFAULT_THREADS_*` threads to cover
(docs/model.md). Each input records where it came from, so reports can say what was guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from flipflop.analysis import KernelFeatures
from flipflop.ir import PerformanceDirectives
from flipflop.launch import Dim3, ProblemSize
from flipflop.source.coverage import fold_text, fold_text_axis, problem_size
from flipflop.source.model import Kernel as SourceKernel
from flipflop.source.model import LaunchSite

# Threads to cover when nothing says how big the problem is: 2^20 along x for 1-D kernels,
# 1024 × 1024 for kernels that read %tid.y. Large enough for several full waves on every
# profiled GPU, so the recommendation is not an artefact of a tiny grid.
DEFAULT_THREADS_1D: Dim3 = (1 << 20, 1, 1)
DEFAULT_THREADS_2D: Dim3 = (1024, 1024, 1)
# Blocks assumed for a grid the source fixes whatever the block (`dim3 grid(B, NH)`,
# `<<<rows, 256>>>`) but whose extents it leaves open: the 2^20 threads above in blocks of 256,
# shared evenly by the unknown axes (4096; 64 × 64; 16 × 16 × 16).
DEFAULT_GRID_BLOCKS = 4096

ProblemOrigin = Literal["option", "annotation", "launch site", "default"]


@dataclass(frozen=True)
class LaunchRequest:
    """What the user said about the launch (command-line options or editor settings)."""

    grid: Dim3 | None = None
    threads: Dim3 | None = None
    dynamic_smem_bytes: int | None = None
    params: tuple[tuple[str, float], ...] = ()  # source-level or PTX parameter names


@dataclass(frozen=True)
class LaunchInputs:
    """Everything the advisor needs besides the kernel: how big, which block, which values."""

    problem: ProblemSize
    origin: ProblemOrigin
    current_block: Dim3 | None
    dynamic_smem_bytes: int
    params: tuple[tuple[str, float], ...]  # PTX parameter names → values used
    # The launch is written 1-D (block and grid) and its grid covers threads along x: a block
    # with y or z above 1 would multiply the threads, whatever the kernel reads.
    one_d: bool = False

    @property
    def two_d(self) -> bool:
        return self.current_block is not None and self.current_block[1] > 1

    @property
    def three_d(self) -> bool:
        return self.current_block is not None and self.current_block[2] > 1


def launch_inputs(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    request: LaunchRequest,
    file_constants: Mapping[str, int],
    default: ProblemSize | None = None,
) -> LaunchInputs:
    """The inputs of the launch at `site` (None: the problem the user gave, or the default).

    `default` replaces the documented default (`DEFAULT_THREADS_*`, `DEFAULT_GRID_BLOCKS`) as
    the problem assumed when nothing says, so a caller can ask how the inputs would look had the
    guess been another.
    """
    params = parameter_values(features, source_kernel, site, request, file_constants)
    problem, origin = _problem(features, source_kernel, site, request, params, file_constants)
    if origin == "default" and default is not None:
        problem = default
    if origin == "default" and site is not None and problem.threads is not None:
        # The grid covers a size the source leaves open (`(n + 255) / 256`): assume the default
        # size for it, and give the kernel argument that passes it the same value.
        params = {**_assumed_sizes(features, site, problem.threads), **params}
        known = {**file_constants, **_argument_constants(features, source_kernel, site, params)}
        problem = problem_size(site, known) or problem
    given = host_values(site, request) if site is not None else {}
    return LaunchInputs(
        problem=problem,
        origin=origin,
        current_block=current_block(source_kernel, site, given),
        dynamic_smem_bytes=_dynamic_smem(source_kernel, site, request, given),
        params=tuple(params.items()),
        one_d=_covers_x_only(problem) and written_1d(site),
    )


def _covers_x_only(problem: ProblemSize) -> bool:
    """The problem is threads to cover along x alone (a taller block would multiply them)."""
    if problem.threads is not None:
        return problem.threads[1:] == (1, 1)
    if problem.axes is not None:
        return problem.axes[0][0] == "covers" and all(
            kind == "fixed" and count == 1 for kind, count in problem.axes[1:]
        )
    return False


def written_1d(site: LaunchSite | None) -> bool:
    """The launch is written with a 1-D block and a 1-D grid (`<<<blocks, 256>>>`)."""
    if site is None:
        return False
    block = site.block_folded
    flat_block = block.y == 1 and block.z == 1
    flat_grid = all(axis.kind == "fixed" and axis.value == 1 for axis in site.grid_axes[1:])
    return flat_block and flat_grid


def parameter_values(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    request: LaunchRequest,
    file_constants: Mapping[str, int],
) -> dict[str, float]:
    """Kernel parameter values by PTX name: launch arguments that fold, annotations, options."""
    ptx_names = features.parameter_names
    source_names = [p.name for p in source_kernel.parameters] if source_kernel else []
    by_source_name = dict(zip(source_names, ptx_names, strict=False))
    values: dict[str, float] = {}
    if site is not None:
        constants = {**file_constants, **dict(site.constants), **host_values(site, request)}
        folded_there = site.argument_values
        for position, (ptx_name, argument) in enumerate(
            zip(ptx_names, site.arguments, strict=False)
        ):
            folded = folded_there[position] if position < len(folded_there) else None
            if folded is None:
                folded = fold_text(argument, constants)
            if folded is not None:
                values[ptx_name] = float(folded)
    annotated: list[tuple[str, int]] = []
    if source_kernel is not None and source_kernel.annotation is not None:
        annotated.extend(source_kernel.annotation.params)
    if site is not None and site.annotation is not None:
        annotated.extend(site.annotation.params)
    for name, value in (*annotated, *request.params):
        values[by_source_name.get(name, name)] = float(value)
    return values


def _problem(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    request: LaunchRequest,
    params: Mapping[str, float],
    file_constants: Mapping[str, int],
) -> tuple[ProblemSize, ProblemOrigin]:
    if request.grid is not None:
        return ProblemSize(grid=request.grid), "option"
    if request.threads is not None:
        return ProblemSize(threads=request.threads), "option"
    annotation = source_kernel.annotation if source_kernel is not None else None
    if annotation is not None and annotation.threads is not None:
        return ProblemSize(threads=annotation.threads), "annotation"
    if annotation is not None and annotation.grid is not None:
        return ProblemSize(grid=annotation.grid), "annotation"
    if site is not None:
        known = {**file_constants, **_argument_constants(features, source_kernel, site, params),
                 **host_values(site, request)}
        from_site = problem_size(site, known)
        if from_site is not None:
            note = site.annotation
            has_note = note is not None and (
                note.threads is not None or note.grid is not None
                or any(name in site.needs for name, _ in note.params)
            )
            return from_site, "annotation" if has_note else "launch site"
        if all(axis.kind == "fixed" and not axis.tied_to_block for axis in site.grid_axes):
            return ProblemSize(grid=default_grid(site, known)), "default"
    return ProblemSize(threads=default_threads(features, site)), "default"


def default_grid(site: LaunchSite, known: Mapping[str, int]) -> Dim3:
    """A fixed grid with the extents the source gives and `DEFAULT_GRID_BLOCKS` shared by the
    ones it leaves open."""
    extents = [fold_text_axis(axis, known) for axis in site.grid_axes]
    open_axes = sum(1 for extent in extents if extent is None)
    share = max(1, round(DEFAULT_GRID_BLOCKS ** (1.0 / max(1, open_axes))))
    x, y, z = (share if extent is None else max(1, extent) for extent in extents)
    return (x, y, z)


def default_threads(features: KernelFeatures, site: LaunchSite | None = None) -> Dim3:
    """2-D when the kernel reads `threadIdx.y`, unless the launch is written 1-D (a kernel that
    only linearises the thread index, as `cg::this_thread_block()` does, reads it too)."""
    if features.uses_tid_y and not written_1d(site):
        return DEFAULT_THREADS_2D
    return DEFAULT_THREADS_1D


def host_values(site: LaunchSite, request: LaunchRequest) -> dict[str, int]:
    """Values given for the names a launch's grid, block or shared memory need (`// flipflop:
    blocks=64` above it, or `--param blocks=64`)."""
    given = list(request.params)
    if site.annotation is not None:
        given = [*site.annotation.params, *given]
    return {name: int(value) for name, value in given if name in site.needs}


def _assumed_sizes(
    features: KernelFeatures, site: LaunchSite, threads: Dim3
) -> dict[str, float]:
    """PTX parameter values for kernel arguments that name the size a grid axis covers."""
    assumed: dict[str, float] = {}
    for axis, count in zip(site.grid_axes, threads, strict=True):
        name = axis.threads_expression.strip()
        if axis.kind != "covers" or not name.isidentifier():
            continue
        for ptx_name, argument in zip(features.parameter_names, site.arguments, strict=False):
            if argument.strip() == name:
                assumed[ptx_name] = float(count)
    return assumed


def _argument_constants(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    site: LaunchSite,
    params: Mapping[str, float],
) -> dict[str, int]:
    """Names the grid expression may use whose value is known: constants and folded arguments."""
    known = dict(site.constants)
    if source_kernel is not None:
        for parameter, ptx_name, argument in zip(
            source_kernel.parameters, features.parameter_names, site.arguments, strict=False
        ):
            if ptx_name in params and argument.isidentifier():
                known.setdefault(argument, int(params[ptx_name]))
            if ptx_name in params:
                known.setdefault(parameter.name, int(params[ptx_name]))
    return known


def current_block(
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    given: Mapping[str, int] | None = None,
) -> Dim3 | None:
    """The block the launch is written with, when the source or an annotation shows it
    (`given`: values for the names it needs)."""
    if site is not None:
        if site.annotation is not None and site.annotation.block is not None:
            return site.annotation.block
        if site.block_folded.value is None and given and site.expressions is not None:
            x, y, z = (fold_text(text, given) for text in site.expressions.block)
            if x is not None and y is not None and z is not None:
                return (x, y, z)
        return site.block_folded.value
    if source_kernel is not None and source_kernel.annotation is not None:
        return source_kernel.annotation.block
    return None


def _dynamic_smem(
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    request: LaunchRequest,
    given: Mapping[str, int] | None = None,
) -> int:
    if request.dynamic_smem_bytes is not None:
        return request.dynamic_smem_bytes
    for annotation in (
        site.annotation if site else None,
        source_kernel.annotation if source_kernel else None,
    ):
        if annotation is not None and annotation.dynamic_smem_bytes is not None:
            return annotation.dynamic_smem_bytes
    if site is not None and site.shared_memory_folded.value is not None:
        return site.shared_memory_folded.value
    if site is not None and given and site.expressions is not None:
        folded = fold_text(site.expressions.shared_memory, given)
        if folded is not None:
            return folded
    return 0


def block_limit(
    directives: PerformanceDirectives, source_kernel: SourceKernel | None
) -> int | None:
    """The most threads per block the kernel may be launched with, from its launch bounds."""
    limits: list[int] = []
    for shape in (directives.maxntid, directives.reqntid):
        if shape:
            total = 1
            for extent in shape:
                total *= extent
            limits.append(total)
    if source_kernel is not None and source_kernel.launch_bounds is not None:
        bound = source_kernel.launch_bounds.max_threads
        if bound is not None:
            limits.append(bound)
    return min(limits) if limits else None
