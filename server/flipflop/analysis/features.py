"""Static features of one kernel, and their evaluation for a concrete launch.

`extract_features` does everything that does not depend on the launch once; `work(shape, params)`
then costs one small product per weight group and a cached lane computation per access site.
"""

from __future__ import annotations

import gc
import math
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property

from flipflop.analysis import expr as ex
from flipflop.analysis import opclass as oc
from flipflop.analysis import sass
from flipflop.analysis.interpret import interpret
from flipflop.analysis.memory import (
    BANK_ROW_BYTES,
    SiteShape,
    StaticSite,
    conflict_free_wavefronts,
    evaluate_site,
)
from flipflop.analysis.reuse import AccessGroup, Reuse, access_groups, reuse_shares
from flipflop.analysis.scan import scan_function
from flipflop.analysis.slice_types import ControlSlice
from flipflop.analysis.summary import (
    MAX_INTERPRETED_BRANCHES,
    CallSite,
    Factor,
    FunctionSummary,
    Key,
    summarize,
)
from flipflop.analysis.tripcount import DEFAULT_TRIP_COUNT
from flipflop.analysis.vectorize import shared_offsets
from flipflop.analysis.work import PipeWork, SiteWork, ThreadWork
from flipflop.fast_init import fast_init
from flipflop.ir import Function, Instruction, Module, SourceLoc
from flipflop.launch import LaunchShape

_PROBE_PARAMETER = float(1 << 20)  # stands in for every parameter when probing block dependence


class FeatureError(ValueError):
    """The kernel cannot be analysed (unknown name, a prototype without a body)."""


@dataclass(frozen=True)
class _Group:
    loops: tuple[int, ...]
    guards: tuple[int, ...]
    counts: tuple[float, ...]

    @cached_property
    def nonzero(self) -> tuple[tuple[int, float], ...]:
        """(position, amount) of the counts that are not zero: most of the vector is."""
        return tuple((position, amount) for position, amount in enumerate(self.counts) if amount)

    @cached_property
    def useful(self) -> float:
        """What ranks the group's guards as the main path: its work, else a trace of it."""
        return sum(self.counts[i] for i in oc.WORK_INDICES) or self.counts[0] * 1e-6


@fast_init
@dataclass(frozen=True)
class LaunchFactors:
    """The factors of a kernel evaluated for one launch."""

    values: tuple[float, ...]
    defaulted: tuple[bool, ...]  # a documented default stood in for a missing parameter
    interpreted: dict[int, str]  # factor -> how interpreting the control slice counted it
    not_interpreted: dict[int, str]  # assumed factor -> why interpreting it did not work

    def still_assumed(self, factors: Sequence[Factor]) -> list[int]:
        """Factors whose value is an assumption for this launch."""
        return [
            index
            for index, factor in enumerate(factors)
            if (factor.assumed and index not in self.interpreted) or self.defaulted[index]
        ]

    def derivation(self, factors: Sequence[Factor], index: int) -> str:
        """`interpreted`, `assumed` (a default stands in) or `derived` (from the expression)."""
        if index in self.interpreted:
            return "interpreted"
        if factors[index].assumed or self.defaulted[index]:
            return "assumed"
        return "derived"


@dataclass(frozen=True)
class KernelFeatures:
    """Everything the analysis knows about one kernel before the launch shape is chosen."""

    name: str
    parameter_names: tuple[str, ...]  # PTX names, in order
    uses_tid_y: bool
    uses_tid_z: bool
    assumptions: tuple[str, ...]
    factors: tuple[Factor, ...]
    groups: tuple[_Group, ...]
    sites: tuple[StaticSite, ...]
    calls: tuple[CallSite, ...]
    divergence_lines: tuple[int, ...]
    source_file: str
    source_parameter_names: tuple[str, ...] = ()
    work_depends_on_block: bool = field(default=True)
    # Control slices of the functions with assumed loops or unknown branches (their factor
    # indices shifted to the kernel's), interpreted per launch; see `factor_values`.
    controls: tuple[ControlSlice, ...] = ()
    # Per entry of `assumptions`, the factors it is about (empty when it is not about one).
    assumption_factors: tuple[tuple[int, ...], ...] = ()

    @cached_property
    def site_nests(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """Per site, the guards and the loops around it. The loops are its load region: ptxas
        predicates short guarded blocks and issues their loads together, and a branch does
        not wait for a load, its use does."""
        kinds = [factor.kind for factor in self.factors]
        return tuple(
            (tuple(i for i in site.key if kinds[i] == "guard"),
             tuple(i for i in site.key if kinds[i] == "loop"))
            for site in self.sites
        )  # fmt: skip

    @cached_property
    def site_patterns(self) -> tuple[int, ...]:
        """Per site, an id shared by the sites `evaluate_site` cannot tell apart: what it
        reads of a site is its space and direction, width, kind, lanes and offset within a
        128-byte line (the most a sector or a bank row depends on)."""
        ids: dict[tuple[object, ...], int] = {}
        return tuple(
            ids.setdefault(
                (site.space, site.is_store, site.width_bytes, site.kind, site.lane_coefficients,
                 site.lane_functions, site.offset % BANK_ROW_BYTES),
                len(ids),
            )
            for site in self.sites
        )  # fmt: skip

    @cached_property
    def static_instructions(self) -> float:
        return sum(group.counts[oc.INSTRUCTIONS] for group in self.groups)

    @cached_property
    def access_groups(self) -> tuple[AccessGroup, ...]:
        """The sites that share one footprint (`flipflop.analysis.reuse.access_groups`)."""
        return access_groups(self.sites, [factor.kind for factor in self.factors])

    # ------------------------------------------------------------------ parameters

    def with_source_names(self, names: Sequence[str]) -> KernelFeatures:
        """The same features, also accepting source-level parameter names (by position)."""
        return replace(self, source_parameter_names=tuple(names))

    def unknown_parameters(self, params: Mapping[str, float]) -> tuple[str, ...]:
        known = set(self.parameter_names) | set(self.source_parameter_names)
        return tuple(name for name in params if name not in known)

    def environment(self, shape: LaunchShape, params: Mapping[str, float]) -> dict[str, float]:
        env = ex.shape_env(shape)
        by_source = dict(zip(self.source_parameter_names, self.parameter_names, strict=False))
        for name, value in params.items():
            env[by_source.get(name, name)] = float(value)
        return env

    # ------------------------------------------------------------------ evaluation

    def factor_values(self, shape: LaunchShape, params: Mapping[str, float]) -> LaunchFactors:
        """Every factor's value for a launch: from its expression, or, for an assumed loop or
        unknown branch, from interpreting the function's control slice when that works."""
        return self._factor_values(shape, self.environment(shape, params))

    def _factor_values(self, shape: LaunchShape, env: dict[str, float]) -> LaunchFactors:
        values: list[float] = []
        defaulted: list[bool] = []
        for factor in self.factors:
            value, missing = factor.value(env)
            values.append(value)
            defaulted.append(missing)
        interpreted: dict[int, str] = {}
        not_interpreted: dict[int, str] = {}
        symbolic = tuple(values)
        for control in self.controls:
            found = interpret(control, shape, env, symbolic)
            for local, value, how in found.values:
                index = control.offset + local
                values[index] = value
                defaulted[index] = False
                interpreted[index] = how
            for local, why in (*found.failed, *control.excluded):
                not_interpreted[control.offset + local] = why
        return LaunchFactors(tuple(values), tuple(defaulted), interpreted, not_interpreted)

    def work(self, shape: LaunchShape, params: Mapping[str, float]) -> ThreadWork:
        """Per launched thread, averaged over every launched thread (idle ones included)."""
        env = self.environment(shape, params)
        launch = self._factor_values(shape, env)
        factor_values = launch.values
        still_assumed = set(launch.still_assumed(self.factors))
        # A guard still assumed (worth 1) does not split the work into "guarded" and not.
        assumed = {i for i in still_assumed if self.factors[i].kind == "guard"}
        totals = [0.0] * oc.VECTOR_LENGTH
        busiest: dict[tuple[int, ...], float] = {}
        for group in self.groups:
            loop_weight = math.prod(factor_values[i] for i in group.loops)
            guard_weight = math.prod(factor_values[i] for i in group.guards)
            weight = loop_weight * guard_weight
            if weight:
                for position, amount in group.nonzero:
                    totals[position] += weight * amount
            guards = tuple(i for i in group.guards if i not in assumed) if assumed else group.guards
            busiest[guards] = busiest.get(guards, 0.0) + loop_weight * group.useful
        main_guards = max(busiest, key=lambda guards: busiest[guards]) if busiest else ()
        active = math.prod(factor_values[i] for i in main_guards)

        block = shape.block
        site_work: list[SiteWork] = []
        sums: dict[str, float] = {}
        factors = self.factors
        loads_by_key: dict[tuple[int, ...], list[float]] = {}
        # Sites of one lane pattern (`x[i]` and `y[i]`) have one shape for a launch.
        shapes_of: dict[int, SiteShape] = {}
        evaluated_sites = []
        for site, pattern in zip(self.sites, self.site_patterns, strict=True):
            evaluated = shapes_of.get(pattern)
            if evaluated is None:
                evaluated = shapes_of[pattern] = evaluate_site(site, block, env)
            evaluated_sites.append(evaluated)
        reuse = reuse_shares(self.sites, evaluated_sites, self.access_groups, shape, env)
        threads = shape.threads_per_block
        for site, evaluated, shares, (guard_key, region) in zip(
            self.sites, evaluated_sites, reuse, self.site_nests, strict=True
        ):
            weight = math.prod([factor_values[i] for i in site.key]) * site.accesses
            guarded = math.prod([factor_values[i] for i in guard_key])
            assumed_lines: tuple[int, ...] = ()
            if still_assumed and not still_assumed.isdisjoint(site.key):
                assumed_lines = tuple(sorted({
                    line for i in site.key if i in still_assumed for line in factors[i].lines
                }))  # fmt: skip
            work = _site_work(site, evaluated, weight, guarded, shares, threads, assumed_lines)
            if site.space in _MEMORY_SPACES and not site.is_store:
                counts = loads_by_key.setdefault(region, [0.0, 0.0])
                counts[0] += site.accesses
                counts[1] += weight
            site_work.append(work)
            _accumulate(sums, site, work)

        idle_lines = sorted({
            line
            for factor, value in zip(self.factors, factor_values, strict=True)
            if factor.kind == "guard" and value < 1.0
            for line in factor.lines
        })  # fmt: skip
        return ThreadWork(
            instructions=totals[oc.INSTRUCTIONS],
            fp32_flops=totals[oc.FP32_FLOPS],
            fp64_flops=totals[oc.FP64_FLOPS],
            fp16_flops=totals[oc.FP16_FLOPS],
            int_ops=totals[oc.INT_OPS],
            conversions=totals[oc.CONVERSIONS],
            sfu_ops=totals[oc.SFU_OPS],
            tensor_flops=totals[oc.TENSOR_FLOPS],
            global_load_bytes=sums.get("global_load_bytes", 0.0),
            global_store_bytes=sums.get("global_store_bytes", 0.0),
            global_load_sectors=sums.get("global_load_sectors", 0.0),
            global_store_sectors=sums.get("global_store_sectors", 0.0),
            global_load_l1_misses=sums.get("global_load_l1_misses", 0.0),
            global_load_new_sectors=sums.get("global_load_new_sectors", 0.0),
            global_load_row_reuse_sectors=sums.get("global_load_row_reuse", 0.0),
            local_bytes=sums.get("local_bytes", 0.0),
            shared_accesses=sums.get("shared_accesses", 0.0),
            shared_wavefronts=sums.get("shared_wavefronts", 0.0),
            atomics=totals[oc.ATOMICS],
            barriers=totals[oc.BARRIERS],
            shuffles=totals[oc.SHUFFLES],
            branches=totals[oc.BRANCHES],
            divergent_branches=totals[oc.DIVERGENT_BRANCHES],
            active_fraction=min(1.0, max(0.0, active)),
            async_copy_bytes=totals[oc.ASYNC_COPY_BYTES],
            static_instructions=self.static_instructions,
            load_parallelism=_load_parallelism(loads_by_key),
            chain_cycles=totals[oc.CHAIN_CYCLES],
            pipes=PipeWork(
                issue_slots=totals[oc.ISSUE_SLOTS],
                fp32=totals[oc.FP32_PIPE],
                fp64=totals[oc.FP64_PIPE],
                fp16=totals[oc.FP16_PIPE],
                integer=totals[oc.INT_PIPE],
                sfu=totals[oc.SFU_PIPE],
                conversion=totals[oc.CONVERSION_PIPE],
            ),
            sites=tuple(site_work),
            idle_lines=tuple(idle_lines),
            divergence_lines=self.divergence_lines,
            assumptions=self.launch_assumptions(launch),
        )

    def counts(self, shape: LaunchShape, params: Mapping[str, float]) -> dict[str, float]:
        """Every instruction class per thread (a superset of what `ThreadWork` carries)."""
        return self._counts(self.factor_values(shape, params).values)

    def _counts(self, factor_values: Sequence[float]) -> dict[str, float]:
        totals = [0.0] * oc.VECTOR_LENGTH
        for group in self.groups:
            weight = math.prod(factor_values[i] for i in group.loops + group.guards)
            for position, amount in enumerate(group.counts):
                totals[position] += weight * amount
        return dict(zip(oc.NAMES, totals, strict=True))

    def launch_assumptions(self, launch: LaunchFactors) -> tuple[str, ...]:
        """`assumptions`, less what the launch's interpretation resolved; an assumption about
        several branches keeps the lines of those still assumed, and says why."""
        kept: list[str] = []
        for text, about in zip(self.assumptions, self.assumption_factors, strict=True):
            left = [i for i in about if i not in launch.interpreted]
            if about and not left:
                continue
            if len(left) < len(about):
                lines = tuple(sorted({line for i in left for line in self.factors[i].lines}))
                text = _unknown_branches_text(self.factors[left[0]].function, lines)
            reasons = sorted(
                {launch.not_interpreted[i] for i in left if i in launch.not_interpreted}
            )
            if reasons:
                text += f" (not interpreted for this launch: {'; '.join(reasons)})"
            kept.append(text)
        return tuple(kept)


def extract_features(
    module: Module, kernel_name: str, source_parameter_names: Sequence[str] = ()
) -> KernelFeatures:
    """Analyse one kernel of a module (its `.func` callees folded in)."""
    kernel = module.function(kernel_name)
    if kernel is None or not kernel.is_kernel:
        names = ", ".join(k.name for k in module.kernels) or "none"
        raise FeatureError(f"no kernel named '{kernel_name}' in the PTX (kernels: {names})")
    if not kernel.has_body:
        raise FeatureError(f"kernel '{kernel_name}' has no body in the PTX")
    source_file = _main_file(kernel, module)
    kernel_params = frozenset(param.name for param in kernel.params)
    function_names = frozenset(f.name for f in module.functions if f.has_body)
    arch = sass.table_arch(module.target)

    with _collector_paused():
        folded = _fold(module, kernel, kernel_params, function_names, source_file, arch)
    features = KernelFeatures(
        name=kernel.name,
        parameter_names=tuple(param.name for param in kernel.params),
        uses_tid_y=folded.uses_tid_y,
        uses_tid_z=folded.uses_tid_z,
        assumptions=folded.assumptions,
        factors=folded.factors,
        groups=folded.groups,
        sites=folded.sites,
        calls=folded.calls,
        divergence_lines=folded.divergence_lines,
        source_file=source_file,
        source_parameter_names=tuple(source_parameter_names),
        controls=folded.controls,
        assumption_factors=folded.assumption_factors,
    )
    return replace(features, work_depends_on_block=_depends_on_block(features))


# --------------------------------------------------------------------------- folding calls


@dataclass(frozen=True)
class _Folded:
    factors: tuple[Factor, ...]
    groups: tuple[_Group, ...]
    sites: tuple[StaticSite, ...]
    calls: tuple[CallSite, ...]
    divergence_lines: tuple[int, ...]
    assumptions: tuple[str, ...]
    assumption_factors: tuple[tuple[int, ...], ...]
    controls: tuple[ControlSlice, ...]
    uses_tid_y: bool
    uses_tid_z: bool


def _fold(module: Module, kernel: Function, kernel_params: frozenset[str],
          function_names: frozenset[str], source_file: str, arch: str) -> _Folded:  # fmt: skip
    summaries: dict[str, FunctionSummary] = {}

    def summary_of(function: Function) -> FunctionSummary:
        known = summaries.get(function.name)
        if known is None:
            params = kernel_params if function.is_kernel else frozenset()
            scan = scan_function(function)
            line_of = _line_lookup(function, source_file)
            known = summarize(function, params, line_of, function_names, scan, arch,
                              shared_offsets((*module.globals, *function.locals)))
            summaries[function.name] = known
        return known

    factors: list[Factor] = []
    groups: dict[Key, list[float]] = {}
    sites: list[StaticSite] = []
    calls: list[CallSite] = []
    divergence: set[int] = set()
    assumptions: list[tuple[str, tuple[int, ...]]] = []  # (text, the factors it is about)
    controls: list[ControlSlice] = []
    uses_tid: set[str] = set()
    offsets: dict[str, int] = {}

    def fold(function: Function, prefix: Key, stack: tuple[str, ...]) -> None:
        summary = summary_of(function)
        offset = offsets.get(function.name)
        if offset is None:
            offset = len(factors)
            offsets[function.name] = offset
            factors.extend(summary.factors)
            _note_assumptions(summary, offset, assumptions)
            if summary.control is not None:
                controls.append(replace(summary.control, offset=offset))
        uses_tid.update(summary.uses_tid)
        divergence.update(summary.divergence_lines)

        def shift(key: Key) -> Key:
            return tuple(sorted(prefix + tuple(offset + i for i in key)))

        for key, counts in summary.groups:
            shifted = shift(key)
            target = groups.get(shifted)
            if target is None:
                groups[shifted] = list(counts)
                continue
            for position, amount in enumerate(counts):
                target[position] += amount
        sites.extend(replace(site, key=shift(site.key)) for site in summary.sites)
        for call in summary.calls:
            calls.append(replace(call, key=shift(call.key)))
            callee = module.function(call.callee)
            if callee is None or not callee.has_body:
                continue
            if call.callee in stack:
                assumptions.append((
                    f"recursive call to {call.callee} at line(s) {_text(call.lines)}: "
                    "its body is counted once per call chain, not per recursion level", ()
                ))  # fmt: skip
                continue
            fold(callee, shift(call.key), (*stack, call.callee))

    fold(kernel, (), (kernel.name,))
    group_list = []
    for key, counts in groups.items():
        loops = tuple(i for i in key if factors[i].kind == "loop")
        guards = tuple(i for i in key if factors[i].kind == "guard")
        group_list.append(_Group(loops, guards, tuple(counts)))
    for site in sites:
        if site.kind == "indirect":
            assumptions.append((
                f"{site.operation} at line(s) {_text(site.lines)}: address from loaded data, "
                "taken as one 32-byte sector per lane", ()
            ))  # fmt: skip
        elif site.kind == "unknown":
            assumptions.append((
                f"{site.operation} at line(s) {_text(site.lines)}: lane pattern not followed, "
                "taken as coalesced (conflict-free in shared memory)", ()
            ))  # fmt: skip
    texts: dict[str, tuple[int, ...]] = {}  # the same text twice is one assumption
    for text, about in assumptions:
        texts[text] = tuple(dict.fromkeys(texts.get(text, ()) + about))
    return _Folded(
        factors=tuple(factors),
        groups=tuple(group_list),
        sites=tuple(sites),
        calls=tuple(calls),
        divergence_lines=tuple(sorted(divergence)),
        assumptions=tuple(texts),
        assumption_factors=tuple(texts.values()),
        controls=tuple(controls),
        uses_tid_y="y" in uses_tid,
        uses_tid_z="z" in uses_tid,
    )


def _note_assumptions(summary: FunctionSummary, offset: int,
                      assumptions: list[tuple[str, tuple[int, ...]]]) -> None:  # fmt: skip
    unknown: list[int] = []
    for index, factor in enumerate(summary.factors):
        if factor.kind == "loop" and factor.assumed:
            assumptions.append((
                f"loop at line(s) {_text(factor.lines)} in {summary.name}: trip count unknown "
                f"({factor.description}), assumed {DEFAULT_TRIP_COUNT:g}", (offset + index,)
            ))  # fmt: skip
        elif factor.kind == "guard" and factor.assumed and not factor.exit_of_loop:
            unknown.append(offset + index)  # an exit's guard is part of its loop's assumption
    if unknown:  # branches a launch may interpret
        lines = tuple(sorted({line for i in unknown for line in summary.factors[i - offset].lines}))
        assumptions.append((_unknown_branches_text(summary.name, lines), tuple(unknown)))
    if summary.unknown_branch_lines:  # on values loaded from memory: always both paths
        assumptions.append((_unknown_branches_text(summary.name, summary.unknown_branch_lines), ()))
    if summary.uninterpreted_branch_lines:
        assumptions.append((
            _unknown_branches_text(summary.name, summary.uninterpreted_branch_lines)
            + f" (more than {MAX_INTERPRETED_BRANCHES} such branches in one function are not "
            "interpreted per launch)", ()
        ))  # fmt: skip
    if summary.irreducible:
        assumptions.append((
            f"{summary.name} has irreducible control flow: its cycles are not counted as loops", ()
        ))  # fmt: skip


def _unknown_branches_text(function: str, lines: tuple[int, ...]) -> str:
    return (
        f"branch(es) at line(s) {_text(lines)} in {function}: "
        "condition not followed, both paths counted for every thread"
    )


# --------------------------------------------------------------------------- helpers


_MEMORY_SPACES = frozenset(("global", "generic", "tex", "local"))


def _load_parallelism(loads_by_key: dict[tuple[int, ...], list[float]]) -> float:
    """Σ_region dynamic loads × static loads of the region / Σ dynamic loads (at least 1)."""
    dynamic = sum(counts[1] for counts in loads_by_key.values())
    if dynamic <= 0.0:
        return 1.0
    weighted = sum(counts[0] * counts[1] for counts in loads_by_key.values())
    return max(1.0, weighted / dynamic)


def _site_work(site: StaticSite, shape: SiteShape, weight: float, guarded: float,
               reuse: Reuse, threads: int, assumed_lines: tuple[int, ...]) -> SiteWork:  # fmt: skip
    sectors = 0.0
    if site.space in ("global", "generic", "tex", "local"):
        sectors = shape.sectors * weight
    misses = sectors * reuse.l1_miss
    wavefronts = shape.wavefronts or 1.0
    if site.space == "shared":
        wavefronts = shape.wavefronts or conflict_free_wavefronts(site.width_bytes, threads)
    return SiteWork(
        l1_miss_sectors=misses,
        new_sectors=misses * reuse.new,
        row_reuse_sectors=misses * reuse.new * reuse.row,
        space=site.space,
        is_store=site.is_store,
        pattern=shape.pattern,
        lines=site.lines,
        accesses=weight,
        bytes_requested=weight * site.width_bytes,
        sectors=sectors,
        bank_conflict_degree=shape.bank_conflict_degree,
        stride_bytes=shape.stride_bytes,
        guard_fraction=min(1.0, max(0.0, guarded)),
        counted_with_assumed=assumed_lines,
        wavefronts_per_request=wavefronts,
        async_copy=site.async_copy,
    )


_GLOBAL_TOTALS = {
    is_store: tuple(f"global_{'store' if is_store else 'load'}_{name}"
                    for name in ("bytes", "sectors", "l1_misses", "new_sectors", "row_reuse"))
    for is_store in (False, True)
}  # fmt: skip


def _accumulate(sums: dict[str, float], site: StaticSite, work: SiteWork) -> None:
    space = site.space
    if space in ("global", "generic", "tex"):
        misses = work.sectors if work.l1_miss_sectors is None else work.l1_miss_sectors
        new = misses if work.new_sectors is None else work.new_sectors
        amounts = (work.bytes_requested, work.sectors, misses, new, work.row_reuse_sectors)
        for total, amount in zip(_GLOBAL_TOTALS[site.is_store], amounts, strict=True):
            sums[total] = sums.get(total, 0.0) + amount
    elif space == "local":
        sums["local_bytes"] = sums.get("local_bytes", 0.0) + work.bytes_requested
    elif space == "shared" and not site.async_copy:
        sums["shared_accesses"] = sums.get("shared_accesses", 0.0) + work.accesses
        sums["shared_wavefronts"] = (
            sums.get("shared_wavefronts", 0.0) + work.accesses * work.wavefronts_per_request
        )


def _main_file(kernel: Function, module: Module) -> str:
    """The kernel's own source file: where its first located instruction (the kernel's
    opening line) comes from."""
    for block in kernel.blocks:
        for instruction in block.instructions:
            if instruction.loc is not None and instruction.loc.file:
                return instruction.loc.file
    return ""


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The analysis allocates many small short-lived objects while a large parsed module is
    alive; each cyclic-GC pass would rescan that module (half the extraction time on a 6 MB
    PTX). Nothing here needs cycle collection, so the collector waits until the end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _line_lookup(function: Function, source_file: str) -> Callable[[Instruction], int | None]:
    """CUDA line of an instruction. Code inlined from another file (a header) is charged to the
    last line of the kernel's own file before it: the call site.

    An instruction located in the kernel's own file answers from its own `.loc`. The others
    need a table of the lines where the CUDA line changes (found by a search for the last
    change at or before the instruction); most functions never ask, so the table is built on
    the first question that needs it."""
    table: list[Callable[[Instruction], int | None]] = []

    def line_of(instruction: Instruction) -> int | None:
        line = _own_line(instruction.loc, source_file)
        if line is not None:
            return line
        if not table:
            table.append(_line_change_lookup(function, source_file))
        return table[0](instruction)

    return line_of


def _own_line(loc: SourceLoc | None, source_file: str) -> int | None:
    """The `.loc`'s line when it is a line of the kernel's own file."""
    if loc is not None and loc.line > 0 and (not source_file or loc.file == source_file):
        return loc.line
    return None


def _line_change_lookup(
    function: Function, source_file: str
) -> Callable[[Instruction], int | None]:
    """`_line_lookup`'s table: PTX lines where the CUDA line of the kernel's own file changes."""
    starts: list[int] = []
    lines: list[int] = []
    current: int | None = None
    previous: SourceLoc | bool | None = False  # nothing seen yet
    for block in function.blocks:
        for instruction in block.instructions:
            loc = instruction.loc
            if loc is previous:  # one `.loc` covers many instructions
                continue
            previous = loc
            line = _own_line(loc, source_file)
            if line is not None and line != current:
                if starts and instruction.ptx_line <= starts[-1]:
                    return _line_table_lookup(function, source_file)  # not in text order
                current = line
                starts.append(instruction.ptx_line)
                lines.append(current)

    def line_of(instruction: Instruction) -> int | None:
        position = bisect_right(starts, instruction.ptx_line) - 1
        return lines[position] if position >= 0 else None

    return line_of


def _line_table_lookup(function: Function, source_file: str) -> Callable[[Instruction], int | None]:
    """`_line_lookup` for blocks that are not in text order: a table of every instruction."""
    table: dict[int, int] = {}
    current: int | None = None
    for block in function.blocks:
        for instruction in block.instructions:
            current = _own_line(instruction.loc, source_file) or current
            if current is not None:
                table[instruction.ptx_line] = current

    def line_of(instruction: Instruction) -> int | None:
        return table.get(instruction.ptx_line)

    return line_of


def _depends_on_block(features: KernelFeatures) -> bool:
    """Whether a block's total work changes with its size (it does unless more threads only
    split a fixed amount of work: block- or grid-stride loops over a fixed range)."""
    params = {name: _PROBE_PARAMETER for name in features.parameter_names}
    # From the expressions alone: interpreting control slices is left to real launches, and a
    # guard still assumed is worth 1, so groups that differ only in those add up first.
    factors = features.factors
    instructions: dict[tuple[int, ...], float] = {}
    for group in features.groups:
        key = tuple(
            i for i in group.loops + group.guards
            if factors[i].kind == "loop" or not factors[i].assumed
        )  # fmt: skip
        instructions[key] = instructions.get(key, 0.0) + group.counts[oc.INSTRUCTIONS]
    totals = []
    for threads in (128, 256):
        shape = LaunchShape(block=(threads, 1, 1), grid=(64, 1, 1))
        env = features.environment(shape, params)
        symbolic = [factor.value(env)[0] for factor in factors]
        per_thread = sum(
            math.prod(symbolic[i] for i in key) * count for key, count in instructions.items()
        )
        totals.append(per_thread * threads)
    return not math.isclose(totals[0], totals[1], rel_tol=0.02)


def _text(lines: tuple[int, ...]) -> str:
    return ", ".join(str(line) for line in lines) or "?"
