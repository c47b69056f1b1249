"""What the energy of one configuration goes to, ranked, with the source lines responsible.

A driver's `share` estimates the fraction of the launch's energy it accounts for (docs/model.md
§Drivers); the message states the concrete fact behind it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from flipflop.analysis.work import SiteWork, ThreadWork
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import volume
from flipflop.model import SECTOR_BYTES, Prediction, data_path_terms
from flipflop.resources import Resources
from flipflop.units import format_time

DRIVER_KINDS = (
    "memory_traffic",
    "coalescing",
    "bank_conflicts",
    "occupancy_limiter",
    "tail_effect",
    "idle_lanes",
    "divergence",
    "spills",
    "compute",
    "launch_overhead",
    "other",  # the drivers beyond the largest MAX_DRIVERS − 1, summed
)
# A reader takes in a handful of causes; past this many, the smallest are summed as "other".
MAX_DRIVERS = 8
_KIND_NAMES = {
    "memory_traffic": "memory traffic",
    "coalescing": "uncoalesced accesses",
    "bank_conflicts": "bank conflicts",
    "occupancy_limiter": "occupancy",
    "tail_effect": "tail effect",
    "idle_lanes": "idle lanes",
    "divergence": "divergence",
    "spills": "spills",
    "compute": "compute",
    "launch_overhead": "launch overhead",
}
# Drivers below this share are noise next to the model's own error.
_MIN_SHARE = 0.01
_GLOBAL_SPACES = frozenset({"global", "generic", "tex"})
_ARITHMETIC_UNITS = ("fp32", "fp64", "fp16", "int", "sfu", "tensor", "issue")


@dataclass(frozen=True)
class Driver:
    kind: str  # one of DRIVER_KINDS
    share: float  # estimated fraction of the launch's energy, 0..1
    message: str
    lines: tuple[int, ...]


def energy_drivers(
    profile: GpuProfile,
    resources: Resources,
    work: ThreadWork,
    prediction: Prediction,
    size_assumed: bool = False,
) -> tuple[Driver, ...]:
    """The drivers that account for at least 1% of the energy, largest share first.

    Accesses of one source line merge into one driver, and beyond `MAX_DRIVERS` the smallest
    are summed into one of kind "other", so every view reads the same short list. With
    `size_assumed` (the problem size is a default) the figures are per thread and relative only.
    """
    found = [
        *_memory_traffic(work, prediction, size_assumed),
        *_coalescing(work, prediction),
        *_bank_conflicts(work, prediction),
        *_occupancy_limiter(resources, prediction),
        *_tail_effect(profile, prediction),
        *_idle_lanes(work, prediction),
        *_divergence(work, prediction),
        *_spills(resources, work, prediction),
        *_compute(prediction),
        *_launch_overhead(prediction),
    ]
    merged = sorted(_merged(found), key=lambda driver: -driver.share)
    kept = [driver for driver in merged if driver.share >= _MIN_SHARE]
    return _top(kept, MAX_DRIVERS)


def _merged(drivers: list[Driver]) -> list[Driver]:
    """One driver per kind and source lines, shares summed (messages kept when they differ)."""
    by_key: dict[tuple[str, tuple[int, ...]], list[Driver]] = {}
    for driver in drivers:
        by_key.setdefault((driver.kind, driver.lines), []).append(driver)
    merged = []
    for (kind, lines), same in by_key.items():
        messages = "; ".join(dict.fromkeys(driver.message for driver in same))
        merged.append(Driver(kind, sum(driver.share for driver in same), messages, lines))
    return merged


def _top(drivers: list[Driver], most: int) -> tuple[Driver, ...]:
    """The `most` largest drivers; the rest, when there are more, summed as one "other"."""
    if len(drivers) <= most:
        return tuple(drivers)
    shown, rest = drivers[: most - 1], drivers[most - 1 :]
    share = sum(driver.share for driver in rest)
    kinds = ", ".join(dict.fromkeys(_KIND_NAMES.get(d.kind, d.kind) for d in rest))
    lines = tuple(sorted({line for driver in rest for line in driver.lines}))
    other = Driver(
        kind="other",
        share=share,
        message=f"{len(rest)} smaller drivers ({kinds}): {share:.0%} of energy together",
        lines=lines,
    )
    return (*shown, other)


def _total_w(prediction: Prediction) -> float:
    return max(prediction.breakdown.power.total_w, 1e-12)


def _memory_share(prediction: Prediction) -> float:
    power = prediction.breakdown.power
    return (power.dram_w + dict(power.dynamic_w).get("l2", 0.0)) / _total_w(prediction)


def _per_second_share(prediction: Prediction) -> float:
    """Share of energy paid per second of runtime (idle, constant, static): what time costs."""
    power = prediction.breakdown.power
    return (power.idle_w + power.constant_w + power.static_w) / _total_w(prediction)


def _global_sites(work: ThreadWork) -> list[SiteWork]:
    return [site for site in work.sites if site.space in _GLOBAL_SPACES]


def _lines_of(sites: list[SiteWork]) -> tuple[int, ...]:
    return tuple(sorted({line for site in sites for line in site.lines}))


def _assumed_counts(sites: list[SiteWork]) -> str:
    """Says when the access counts behind a driver rest on an assumed trip count or branch
    share (a loop or branch the analysis could neither derive nor interpret)."""
    lines = tuple(sorted({line for site in sites for line in site.counted_with_assumed}))
    if not lines:
        return ""
    where = _at_lines(lines).removeprefix(" at ")
    return f" (counts assume the loop or branch at {where})"


def _at_lines(lines: tuple[int, ...]) -> str:
    if not lines:
        return ""
    if len(lines) == 1:
        return f" at line {lines[0]}"
    return " at lines " + ", ".join(str(line) for line in lines)


def _memory_traffic(
    work: ThreadWork, prediction: Prediction, size_assumed: bool = False
) -> list[Driver]:
    total_bytes = prediction.breakdown.dram_bytes
    if total_bytes <= 0.0:
        return []
    share = _memory_share(prediction)
    per_thread = f"{total_bytes / prediction.launch.shape.threads:.0f} B/thread"
    # A launch's total at an assumed size would read as a measurement: per thread only then.
    amount = per_thread if size_assumed else f"{_bytes(total_bytes)} ({per_thread})"
    return [
        Driver(
            kind="memory_traffic",
            share=share,
            message=(
                f"global memory traffic: {amount}, "
                f"{share:.0%} of energy{_cache_reuse(work, prediction)}"
                f"{_assumed_counts(_global_sites(work))}"
            ),
            lines=_lines_of(_global_sites(work)),
        )
    ]


def _cache_reuse(work: ThreadWork, prediction: Prediction) -> str:
    """What the caches save of the loads' traffic, when it is worth saying: the block's own
    re-reads served by L1, the neighbouring blocks' by L2."""
    requested = work.global_load_sectors
    misses = work.global_load_l1_misses
    if requested <= 0.0 or misses is None:
        return ""
    others = SECTOR_BYTES * work.global_store_sectors + work.local_bytes
    from_dram = max(0.0, prediction.breakdown.dram_bytes / prediction.launch.shape.threads - others)
    in_l1 = 1.0 - min(misses, requested) / requested
    in_l2 = 1.0 - min(1.0, from_dram / (SECTOR_BYTES * misses)) if misses > 0.0 else 0.0
    parts = []
    if in_l1 >= _WORTH_SAYING:
        parts.append(f"L1 serves {in_l1:.0%} of the load sectors (re-read within a block)")
    if in_l2 >= _WORTH_SAYING:
        parts.append(f"L2 serves {in_l2:.0%} of the rest (data neighbouring blocks read too)")
    return "; " + ", ".join(parts) if parts else ""


_WORTH_SAYING = 0.10  # a cache's share of the traffic below this is not worth a reader's time


def _by_lines(sites: list[SiteWork]) -> list[list[SiteWork]]:
    """Sites grouped by their source lines, in first-seen order: one statement often compiles
    to several PTX accesses (unrolled loops, vector halves), and a reader thinks in statements."""
    return _grouped_by_lines(sites, lambda site: site.lines)


_Grouped = TypeVar("_Grouped")


def _grouped_by_lines(
    items: list[_Grouped], lines_of: Callable[[_Grouped], tuple[int, ...]]
) -> list[list[_Grouped]]:
    groups: dict[tuple[int, ...], list[_Grouped]] = {}
    for item in items:
        groups.setdefault(lines_of(item), []).append(item)
    return list(groups.values())


def _accesses(sites: list[SiteWork]) -> str:
    """"loads", "stores" or "loads and stores"."""
    kinds = sorted({"stores" if site.is_store else "loads" for site in sites})
    return " and ".join(kinds)


def _count(sites: list[SiteWork]) -> str:
    return "" if len(sites) == 1 else f" ({len(sites)} instructions)"


def _stride(sites: list[SiteWork]) -> str:
    strides = sorted({site.stride_bytes for site in sites if site.stride_bytes is not None})
    if not strides or any(site.stride_bytes is None for site in sites):
        return ""
    if len(strides) == 1:
        return f" (stride {strides[0]} B)"
    return f" (strides {strides[0]}–{strides[-1]} B)"


def _coalescing(work: ThreadWork, prediction: Prediction) -> list[Driver]:
    sector_total = work.global_load_sectors + work.global_store_sectors
    if sector_total <= 0.0:
        return []
    wasteful = [
        site
        for site in _global_sites(work)
        if site.pattern not in ("coalesced", "uniform")
        and site.sectors - site.bytes_requested / SECTOR_BYTES > 0.0
    ]
    drivers = []
    for sites in _by_lines(wasteful):
        sectors = sum(site.sectors for site in sites)
        ideal = sum(site.bytes_requested for site in sites) / SECTOR_BYTES
        excess = sectors - ideal
        of_bytes = min(1.0, sectors / sector_total)
        patterns = "/".join(dict.fromkeys(site.pattern for site in sites))
        lines = sites[0].lines
        drivers.append(
            Driver(
                kind="coalescing",
                share=_memory_share(prediction) * min(1.0, excess / sector_total),
                message=(
                    f"{patterns} {_accesses(sites)}{_stride(sites)}{_at_lines(lines)}"
                    f"{_count(sites)}: {of_bytes:.0%} of DRAM bytes, "
                    f"{sectors / max(ideal, 1e-12):.1f}× the sectors of a coalesced access"
                    f"{_assumed_counts(sites)}"
                ),
                lines=lines,
            )
        )
    return drivers


def _bank_conflicts(work: ThreadWork, prediction: Prediction) -> list[Driver]:
    return [*_shared_bank_conflicts(work, prediction), *_l1_bank_conflicts(work, prediction)]


def _l1_bank_conflicts(work: ThreadWork, prediction: Prediction) -> list[Driver]:
    """Global loads conflicting in the L1 data array's banks: they cost time only while the
    L1 data path sets it, so their share is the per-second share times the path's wavefronts
    past what conflict-free lanes would take."""
    if prediction.launch.cost.busiest_unit != "l1" or prediction.bound != "compute":
        return []
    terms = data_path_terms(work, prediction.profile)
    # The model's terms of the global sites: a load's conflicts are what the model charges it
    # past the same requests without them.
    conflicting = [
        term for term in terms.sites
        if not term.site.is_store and term.site.bank_conflict_degree > 1.0
    ]  # fmt: skip
    if not conflicting:
        return []
    drivers = []
    for group in _grouped_by_lines(conflicting, lambda term: term.site.lines):
        excess = sum(term.conflict_wavefronts for term in group)
        excess /= max(terms.l1_wavefronts, 1e-12)
        sites = [term.site for term in group]
        degree = max(site.bank_conflict_degree for site in sites)
        lines = sites[0].lines
        drivers.append(
            Driver(
                kind="bank_conflicts",
                share=_per_second_share(prediction) * min(1.0, excess),
                message=f"{'up to ' if len({s.bank_conflict_degree for s in sites}) > 1 else ''}"
                f"{degree:.0f}-way L1 bank conflicts in global loads{_at_lines(lines)}"
                f"{_count(sites)}{_assumed_counts(sites)}",
                lines=lines,
            )
        )
    return drivers


def _shared_bank_conflicts(work: ThreadWork, prediction: Prediction) -> list[Driver]:
    """Shared loads and stores conflicting in the banks: each extra wavefront costs its energy,
    and time while the banks set it (the shared unit, or the L1 data path it is part of), as
    far as the request takes longer than the least any request holds them
    (`PeakRates.l1_request_cycles`)."""
    if work.shared_wavefronts <= 0.0:
        return []
    power = prediction.breakdown.power
    energy_share = dict(power.dynamic_w).get("shared", 0.0) / _total_w(prediction)
    busiest = prediction.launch.cost.busiest_unit
    banks_set_time = prediction.bound in ("shared", "compute") and busiest in ("shared", "l1")
    time_share = _per_second_share(prediction) if banks_set_time else 0.0
    terms = data_path_terms(work, prediction.profile)
    cycles = terms.l1_wavefronts if busiest == "l1" else terms.shared_cycles
    # The model's terms of the shared sites: a request's conflicts are what the model charges
    # it past the same request without them.
    conflicting = [term for term in terms.shared_sites if term.site.bank_conflict_degree > 1.0]
    drivers = []
    for group in _grouped_by_lines(conflicting, lambda term: term.site.lines):
        sites = [term.site for term in group]
        # Of each request's wavefronts, those past the conflict-free count.
        excess = sum(
            site.accesses * site.wavefronts_per_request * (1.0 - 1.0 / site.bank_conflict_degree)
            for site in sites
        ) / work.shared_wavefronts
        excess_cycles = sum(term.conflict_cycles for term in group) / max(cycles, 1e-12)
        share = energy_share * min(1.0, excess) + time_share * min(1.0, excess_cycles)
        if share <= 0.0:
            continue
        degree = max(site.bank_conflict_degree for site in sites)
        lines = sites[0].lines
        drivers.append(
            Driver(
                kind="bank_conflicts",
                share=share,
                message=f"{'up to ' if len({s.bank_conflict_degree for s in sites}) > 1 else ''}"
                f"{degree:.0f}-way bank conflicts in shared-memory {_accesses(sites)}"
                f"{_at_lines(lines)}{_count(sites)}{_assumed_counts(sites)}",
                lines=lines,
            )
        )
    return drivers


def _occupancy_limiter(resources: Resources, prediction: Prediction) -> list[Driver]:
    if prediction.limiter == "warps" or prediction.occupancy >= 1.0:
        return []
    time = prediction.breakdown.time
    throughput_s = max(time.dram_s, time.shared_s, max((s for _, s in time.compute_s), default=0.0))
    hidden = max(0.0, 1.0 - (throughput_s + time.launch_s) / prediction.time_s)
    cause = {
        "registers": f"registers ({resources.registers}/thread)",
        "shared_memory": f"shared memory ({resources.static_smem_bytes} B static per block)",
        "blocks": f"the resident-block limit with {volume(prediction.block)}-thread blocks",
        "barriers": "the per-SM barrier limit",
    }.get(prediction.limiter, prediction.limiter)
    return [
        Driver(
            kind="occupancy_limiter",
            share=_per_second_share(prediction) * hidden if prediction.bound == "latency" else 0.0,
            message=f"{cause} cap occupancy at {prediction.occupancy:.0%}",
            lines=(),
        )
    ]


def _tail_effect(profile: GpuProfile, prediction: Prediction) -> list[Driver]:
    breakdown = prediction.breakdown
    if breakdown.time.tail_s <= 0.0:
        return []
    idle_sms = breakdown.idle_sms_last_wave
    if prediction.active_blocks_per_sm == 1:
        leaves = f"leaves {idle_sms / profile.sms:.0%} of SMs idle"
    elif idle_sms > 0:
        leaves = (
            f"fills {breakdown.last_wave_fill:.0%} of the block slots and leaves "
            f"{idle_sms / profile.sms:.0%} of SMs idle"
        )
    else:
        leaves = f"fills {breakdown.last_wave_fill:.0%} of the block slots"
    return [
        Driver(
            kind="tail_effect",
            share=_per_second_share(prediction) * breakdown.time.tail_s / prediction.time_s,
            message=f"{breakdown.wave_fraction:.1f} waves: last wave {leaves}",
            lines=(),
        )
    ]


def _idle_lanes(work: ThreadWork, prediction: Prediction) -> list[Driver]:
    threads = volume(prediction.block)
    working = min(1.0, max(work.active_fraction, 0.0)) * prediction.breakdown.lane_efficiency
    if working >= 1.0:
        return []
    idle = round((1.0 - work.active_fraction) * threads)
    power = prediction.breakdown.power
    holding = (power.static_w + dict(power.dynamic_w).get("issue", 0.0)) / _total_w(prediction)
    if idle > 0:
        message = f"{idle} of {threads} threads idle{_at_lines(work.idle_lines)} but draw power"
    else:
        message = f"{threads}-thread blocks leave lanes of their last warp empty"
    return [
        Driver(
            kind="idle_lanes",
            share=holding * (1.0 - working),
            message=message,
            lines=work.idle_lines,
        )
    ]


def _divergence(work: ThreadWork, prediction: Prediction) -> list[Driver]:
    if work.divergent_branches <= 0.0 or work.branches <= 0.0:
        return []
    fraction = min(1.0, work.divergent_branches / work.branches)
    issue = dict(prediction.breakdown.power.dynamic_w).get("issue", 0.0) / _total_w(prediction)
    # A two-way divergent branch runs both paths with about half the lanes masked each time.
    return [
        Driver(
            kind="divergence",
            share=issue * fraction * 0.5,
            message=f"{fraction:.0%} of branches diverge within a warp"
            f"{_at_lines(work.divergence_lines)}",
            lines=work.divergence_lines,
        )
    ]


def _spills(resources: Resources, work: ThreadWork, prediction: Prediction) -> list[Driver]:
    if not resources.spills and work.local_bytes <= 0.0:
        return []
    of_traffic = work.local_bytes / work.dram_bytes if work.dram_bytes > 0.0 else 0.0
    local_sites = [site for site in work.sites if site.space == "local"]
    return [
        Driver(
            kind="spills",
            share=_memory_share(prediction) * of_traffic,
            message=(
                f"register spills: {resources.spill_store_bytes} B stored and "
                f"{resources.spill_load_bytes} B loaded per thread in local memory"
                f" ({of_traffic:.0%} of DRAM bytes)"
            ),
            lines=_lines_of(local_sites),
        )
    ]


def _compute(prediction: Prediction) -> list[Driver]:
    dynamic = dict(prediction.breakdown.power.dynamic_w)
    by_unit = {unit: dynamic.get(unit, 0.0) for unit in _ARITHMETIC_UNITS}
    total = sum(by_unit.values())
    if total <= 0.0:
        return []
    top = max((unit for unit in by_unit if unit != "issue"), key=lambda unit: by_unit[unit])
    share = total / _total_w(prediction)
    label = f"{top} arithmetic" if by_unit[top] > 0.0 else "instruction issue"
    return [
        Driver(
            kind="compute",
            share=share,
            message=f"{label} and instruction issue: {share:.0%} of energy",
            lines=(),
        )
    ]


def _launch_overhead(prediction: Prediction) -> list[Driver]:
    launch_s = prediction.breakdown.time.launch_s
    if launch_s <= 0.0:
        return []
    of_time = launch_s / prediction.time_s
    return [
        Driver(
            kind="launch_overhead",
            share=_per_second_share(prediction) * of_time,
            message=(
                f"launch overhead is {of_time:.0%} of the {format_time(prediction.time_s)} run: "
                f"more work per launch amortizes it"
            ),
            lines=(),
        )
    ]


def _bytes(count: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count:.0f} B"
