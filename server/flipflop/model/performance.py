"""Time of one launch: waves of resident blocks, each bounded by throughput or by latency.

Every wave is described independently of the SM clock (cycles that scale with 1/f, seconds that
do not), so the power-limit solver can re-evaluate time at any clock without redoing the work.
Equations and sources: docs/model.md §Time.
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.analysis.work import SiteWork, ThreadWork
from flipflop.fast_init import fast_init
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import LaunchShape, ceil_div
from flipflop.model.constants import (
    ALU_DEPENDENT_LATENCY_CYCLES,
    BARRIER_CYCLES,
    L1_HIT_LATENCY_CYCLES,
    L2_HIT_LATENCY_CYCLES,
    SECTOR_BYTES,
    SECTORS_PER_WAVEFRONT,
    SHARED_LATENCY_CYCLES,
    SHARED_WAVEFRONT_BYTES,
    WARP_SIZE,
)
from flipflop.model.hiding import overlapped_s
from flipflop.model.l2 import dram_bytes_per_thread

_LOAD_SPACES = frozenset({"global", "local", "generic", "tex"})
_GLOBAL_SPACES = frozenset({"global", "generic", "tex"})


@fast_init
@dataclass(frozen=True)
class WaveCost:
    """One kind of wave: `count` identical waves, costed on their busiest SM."""

    count: int
    blocks: int  # blocks resident across the GPU in this wave
    blocks_on_busiest_sm: int
    active_sms: int
    unit_cycles: float  # the busiest pipeline's cycles on the busiest SM
    dram_s: float  # the wave's DRAM bytes at the GPU's bandwidth
    warps_per_scheduler: float  # resident warps of the busiest SM per warp scheduler

    def seconds(self, clock_hz: float, latency_s: float) -> float:
        """The wave's time at `clock_hz`: its busiest unit as far as its warps hide their chains
        of `latency_s` (`flipflop.model.hiding`), or its DRAM traffic."""
        throughput_s = self.unit_cycles / clock_hz
        dram_s = self.dram_s
        # The hidden time never exceeds U + L: DRAM at least that long sets the wave alone (the
        # power-limit solver asks for thousands of these).
        if dram_s >= throughput_s + latency_s:
            return dram_s
        hidden_s = overlapped_s(throughput_s, latency_s, self.warps_per_scheduler)
        return hidden_s if hidden_s > dram_s else dram_s


@fast_init
@dataclass(frozen=True)
class LaunchCost:
    """All waves of a launch, the working warp's dependent chain and the launch overhead."""

    full: WaveCost  # `full.count` may be 0 when every block fits in one partial wave
    last: WaveCost | None  # the partial last wave, if any
    block_unit_cycles: tuple[tuple[str, float], ...]  # cycles per pipeline for one block
    busiest_unit: str  # the pipeline with the most cycles
    path_cycles: float  # one working warp's dependent chain: ALU, shared, barriers
    barrier_cycles: float  # the barrier part of `path_cycles`
    path_s: float  # one working warp's DRAM latency chain (memory clock, not SM clock)
    launch_s: float
    dram_bytes: float

    @property
    def waves(self) -> tuple[WaveCost, ...]:
        return (self.full,) if self.last is None else (self.full, self.last)

    @property
    def wave_count(self) -> int:
        return self.full.count + (0 if self.last is None else 1)

    def wave_s(self, wave: WaveCost, clock_hz: float) -> float:
        return wave.seconds(clock_hz, self.latency_s(clock_hz))

    def latency_s(self, clock_hz: float) -> float:
        """One working warp's dependent chain: the least time any wave takes."""
        return self.path_cycles / clock_hz + self.path_s

    def timing(self, clock_hz: float) -> tuple[float, float, float]:
        """(total seconds, kernel-body seconds, SM-seconds with resident blocks) in one pass."""
        full, last = self.full, self.last
        latency_s = self.path_cycles / clock_hz + self.path_s
        body_s = full.count * full.seconds(clock_hz, latency_s) if full.count else 0.0
        sm_seconds = body_s * full.active_sms
        if last is not None:
            last_s = last.seconds(clock_hz, latency_s)
            body_s += last_s
            sm_seconds += last_s * last.active_sms
        return body_s + self.launch_s, body_s, sm_seconds

    def tail_s(self, clock_hz: float) -> float:
        """Time the partial last wave costs beyond its share of a full wave."""
        if self.last is None or self.full.blocks == 0:
            return 0.0
        fill = self.last.blocks / self.full.blocks
        extra = self.wave_s(self.last, clock_hz) - fill * self.wave_s(self.full, clock_hz)
        return max(0.0, extra)

    def bound(self, clock_hz: float) -> str:
        """What sets the time of the dominant wave (the full ones, else the partial one):
        DRAM where it is the longest, else the chain where it exceeds the busiest unit."""
        wave = self.full if self.full.count > 0 or self.last is None else self.last
        throughput_s = wave.unit_cycles / clock_hz
        if wave.dram_s >= self.wave_s(wave, clock_hz):
            return "memory"
        if self.latency_s(clock_hz) >= throughput_s:
            return "latency"
        return "shared" if self.busiest_unit == "shared" else "compute"


def launch_cost(
    profile: GpuProfile, work: ThreadWork, shape: LaunchShape, active_blocks_per_sm: int
) -> LaunchCost:
    """Cost every wave of `shape` when `active_blocks_per_sm` blocks fit on each SM."""
    threads = shape.threads_per_block
    per_block_cycles = _unit_cycles_per_block(profile, work, ceil_div(threads, WARP_SIZE))
    top_unit, top_cycles = max(per_block_cycles, key=lambda item: item[1])
    dram_bytes = dram_bytes_per_thread(profile, work, shape)
    dram_s_per_block = threads * dram_bytes / (profile.memory_bandwidth_gbs * 1e9)
    path_cycles, barrier_cycles, path_s = _working_warp_path(
        profile, work, _load_levels(work, dram_bytes))
    sms = profile.sms
    warps_per_block = ceil_div(threads, WARP_SIZE)

    def wave(count: int, blocks: int) -> WaveCost:
        busiest = min(active_blocks_per_sm, ceil_div(blocks, sms))
        return WaveCost(
            count,
            blocks,
            busiest,
            min(sms, blocks),
            busiest * top_cycles,
            blocks * dram_s_per_block,
            # One warp scheduler per issue slot of the SM (its sub-partitions).
            busiest * warps_per_block / profile.rates.issue_per_cycle,
        )

    capacity = sms * active_blocks_per_sm
    full_waves, remainder = divmod(shape.blocks, capacity)
    return LaunchCost(
        full=wave(full_waves, capacity),
        last=wave(1, remainder) if remainder else None,
        block_unit_cycles=per_block_cycles,
        busiest_unit=top_unit,
        path_cycles=path_cycles,
        barrier_cycles=barrier_cycles,
        path_s=path_s,
        launch_s=profile.launch_overhead_s,
        dram_bytes=shape.threads * dram_bytes,
    )


def _unit_cycles_per_block(
    profile: GpuProfile, work: ThreadWork, warps: int
) -> tuple[tuple[str, float], ...]:
    """Cycles each pipeline of one SM needs for one block; partial warps occupy whole lanes."""
    rates = profile.rates
    lanes = warps * WARP_SIZE
    wavefronts_per_cycle = rates.shared_bytes / SHARED_WAVEFRONT_BYTES
    request_cycles = rates.l1_request_cycles
    shared_path = warps * shared_cycles_per_warp(work, request_cycles)
    data_path = warps * l1_wavefronts_per_warp(work, request_cycles)
    pipes = work.pipe_work()
    # Pipes are charged machine instructions (SASS, `PipeWork`), at the profile's FLOP rates
    # turned into lane-instructions: an FFMA or DFMA is 2 FLOPs, an HFMA2 4. Conversions run on
    # the quarter-rate pipe with the SFU (CUDA C++ Programming Guide, "Arithmetic
    # Instructions" throughput table).
    return (
        ("issue", _cycles(warps * pipes.issue_slots, rates.issue_per_cycle, "issue")),
        ("fp32", _cycles(lanes * pipes.fp32, rates.fp32_flops / 2.0, "fp32")),
        ("fp64", _cycles(lanes * pipes.fp64, rates.fp64_flops / 2.0, "fp64")),
        ("fp16", _cycles(lanes * pipes.fp16, rates.fp16_flops / 4.0, "fp16")),
        ("int", _cycles(lanes * pipes.integer, rates.int_ops, "int")),
        ("sfu", _cycles(lanes * (pipes.sfu + pipes.conversion), rates.sfu_ops, "sfu")),
        ("tensor", _cycles(lanes * work.tensor_flops, rates.tensor_flops, "tensor")),
        ("shared", _cycles(shared_path, wavefronts_per_cycle, "shared")),
        ("l1", _cycles(data_path, wavefronts_per_cycle, "shared")),
    )


def l1_wavefronts_per_warp(work: ThreadWork, request_cycles: float = 1.0) -> float:
    """A warp's wavefronts on the data path L1 and shared memory share, 128 B per cycle (CUDA
    C++ Programming Guide, "Shared Memory" and "L1 cache"): its shared requests and its global
    ones, each at least `request_cycles` (`PeakRates.l1_request_cycles`), and local bytes 4
    sectors to a wavefront."""
    return (
        shared_cycles_per_warp(work, request_cycles)
        + global_wavefronts_per_warp(work, request_cycles)
        + WARP_SIZE * work.local_bytes / SHARED_WAVEFRONT_BYTES
    )


def shared_cycles_per_warp(work: ThreadWork, request_cycles: float = 1.0) -> float:
    """A warp's cycles in the shared-memory banks: each request's wavefronts, and at least
    `request_cycles` (`PeakRates.l1_request_cycles`) per request."""
    if request_cycles <= 1.0:
        return work.shared_wavefronts
    sites = [site for site in work.sites if site.space == "shared" and not site.async_copy]
    if not sites:
        return max(work.shared_wavefronts, work.shared_accesses * request_cycles)
    return sum(site.accesses * max(site.wavefronts_per_request, request_cycles) for site in sites)


def global_wavefronts_per_warp(work: ThreadWork, request_cycles: float = 1.0) -> float:
    """L1 wavefronts of a warp's global loads and stores: a request's sectors pass the data
    stage four to a cycle, and every request takes at least one cycle, a broadcast of one word
    too (the MIO queue hands the LSU pipe one instruction per cycle per SM, and the L1TEX tag
    stage takes a request per wavefront: NVIDIA developer forums, "How does the LSU execute
    load/store instructions in the Ampere architecture", Nsight Compute team's answer, 2023),
    or `request_cycles` where the data array holds every request longer."""
    sites = [site for site in work.sites if site.space in _GLOBAL_SPACES]
    if not sites:
        per_thread = work.global_load_sectors + work.global_store_sectors
        return WARP_SIZE * per_thread / SECTORS_PER_WAVEFRONT
    # A request also returns its registers at one per cycle (128 bytes: one 4-byte register
    # of 32 lanes), so a 16-byte load takes four cycles however few sectors it touches (the
    # same answer of the Nsight Compute team as for shared memory, `memory.bank_conflicts`),
    # and more where its lanes conflict in the data array's banks (`wavefronts_per_request`).
    return sum(site_l1_wavefronts(site, request_cycles) for site in sites)


def site_l1_wavefronts(
    site: SiteWork, request_cycles: float = 1.0, wavefronts_per_request: float | None = None
) -> float:
    """One global site's L1 wavefronts per warp (`global_wavefronts_per_warp`); with
    `wavefronts_per_request`, as if each of its requests took that many in the banks."""
    banked = site.wavefronts_per_request
    if wavefronts_per_request is not None:
        banked = wavefronts_per_request
    return max(
        site.accesses * max(_registers_returned(site), banked, request_cycles),
        WARP_SIZE * site.sectors / SECTORS_PER_WAVEFRONT,
    )


def _registers_returned(site: SiteWork) -> float:
    if site.is_store or site.accesses <= 0.0:
        return 1.0
    return max(1.0, site.bytes_requested / site.accesses / 4.0)


def _cycles(operations: float, per_cycle: float, unit: str) -> float:
    if operations <= 0.0:
        return 0.0
    if per_cycle <= 0.0:
        raise ValueError(f"the GPU profile gives no {unit} throughput but the kernel uses it")
    return operations / per_cycle


def _load_levels(work: ThreadWork, dram_bytes: float) -> tuple[float, float, float]:
    """Shares of a thread's global load sectors that L1, L2 and DRAM serve: the requested
    sectors, those that miss L1 (`ThreadWork.global_load_l1_misses`) and those that reach DRAM
    on this launch (`dram_bytes` per thread less its stores and local traffic). Without load
    sectors, every load waits on DRAM."""
    requested = work.global_load_sectors
    if requested <= 0.0:
        return 0.0, 0.0, 1.0
    l1_misses = min(requested, work.global_load_l1_misses if work.global_load_l1_misses
                    is not None else requested)
    from_dram = (dram_bytes - work.local_bytes) / SECTOR_BYTES - work.global_store_sectors
    from_dram = min(l1_misses, max(0.0, from_dram))
    return ((requested - l1_misses) / requested, (l1_misses - from_dram) / requested,
            from_dram / requested)


def _working_warp_path(
    profile: GpuProfile, work: ThreadWork, levels: tuple[float, float, float]
) -> tuple[float, float, float]:
    """Dependent chain of one warp that does the main work: (cycles, barrier cycles, seconds).

    Per-thread counts average over idle threads too; the working threads carry all of it, so
    their chain is the average divided by the active fraction. Each round of loads in flight
    waits as long as the level that serves it, on average over `levels` (the shares of the
    load sectors L1, L2 and DRAM serve, `_load_levels`): L1 and L2 hits in SM cycles, DRAM in
    seconds (the memory clock does not follow the SM's).
    """
    working = 1.0 / max(work.active_fraction, 1e-6)
    loads = working * load_requests_per_thread(work)
    in_flight = min(max(loads, 1.0), max(1.0, work.load_parallelism))
    l1_share, l2_share, dram_share = levels
    dram_latency_s = dram_share * profile.dram_latency_cycles / (profile.boost_clock_mhz * 1e6)
    cache_cycles = l1_share * L1_HIT_LATENCY_CYCLES + l2_share * L2_HIT_LATENCY_CYCLES
    barrier_cycles = working * work.barriers * BARRIER_CYCLES
    if work.chain_cycles is not None:
        # The warp's schedule: independent chains (unrolled accumulators, shared loads issued
        # together) overlap, a single chain waits out every latency.
        compute_cycles = working * work.chain_cycles
    else:
        alu_cycles = working * work.pipe_work().issue_slots * ALU_DEPENDENT_LATENCY_CYCLES
        compute_cycles = alu_cycles + working * work.shared_wavefronts * (
            SHARED_LATENCY_CYCLES / in_flight
        )
    # Local memory (spills above all) is served by L1: each reload waits an L1 hit.
    local_cycles = work.local_bytes / 2.0 / 4.0 * L1_HIT_LATENCY_CYCLES
    path_cycles = compute_cycles + barrier_cycles + local_cycles + loads / in_flight * cache_cycles
    return path_cycles, barrier_cycles, loads / in_flight * dram_latency_s


def load_requests_per_thread(work: ThreadWork) -> float:
    """Memory requests a thread waits on: loads from global/local memory and atomics."""
    site_loads = sum(
        site.accesses for site in work.sites if site.space in _LOAD_SPACES and not site.is_store
    )
    if site_loads > 0.0:
        return site_loads + work.atomics
    # Without per-site counts, assume 4-byte accesses; spills are half stores, half loads.
    return (work.global_load_bytes + work.local_bytes / 2.0) / 4.0 + work.atomics


@dataclass(frozen=True)
class SiteTerms:
    """One global access site's L1 wavefronts per warp as the time model charges them, and as
    it would charge them were its requests free of bank conflicts."""

    site: SiteWork
    l1_wavefronts: float
    conflict_free_l1_wavefronts: float

    @property
    def conflict_wavefronts(self) -> float:
        """The wavefronts its bank conflicts add: what removing them would save."""
        return self.l1_wavefronts - self.conflict_free_l1_wavefronts


@dataclass(frozen=True)
class SharedSiteTerms:
    """One shared-memory site's cycles in the banks per request as the time model charges them
    (at least `PeakRates.l1_request_cycles`), and as it would charge them were its requests free
    of bank conflicts."""

    site: SiteWork
    request_cycles: float
    conflict_free_request_cycles: float

    @property
    def conflict_cycles(self) -> float:
        """The cycles per warp its bank conflicts add: what removing them would save."""
        return self.site.accesses * (self.request_cycles - self.conflict_free_request_cycles)


@dataclass(frozen=True)
class DataPathTerms:
    """A warp's load on the data path L1 and shared memory share, the terms the time model
    builds the `l1` and `shared` pipes from, so that explanations of the time (the energy
    drivers) use the model's own numbers rather than a copy of its equations."""

    l1_wavefronts: float  # `l1_wavefronts_per_warp`
    shared_cycles: float  # `shared_cycles_per_warp`
    sites: tuple[SiteTerms, ...]  # the global sites, in the order of `ThreadWork.sites`
    # The shared sites (asynchronous copies too), in the order of `ThreadWork.sites`.
    shared_sites: tuple[SharedSiteTerms, ...] = ()


def data_path_terms(work: ThreadWork, profile: GpuProfile) -> DataPathTerms:
    """The data-path terms of `work` on `profile`, at its `PeakRates.l1_request_cycles`."""
    request_cycles = profile.rates.l1_request_cycles
    return DataPathTerms(
        l1_wavefronts=l1_wavefronts_per_warp(work, request_cycles),
        shared_cycles=shared_cycles_per_warp(work, request_cycles),
        sites=tuple(
            _site_terms(site, request_cycles)
            for site in work.sites if site.space in _GLOBAL_SPACES
        ),
        shared_sites=tuple(
            _shared_site_terms(site, request_cycles)
            for site in work.sites if site.space == "shared"
        ),
    )


def _shared_site_terms(site: SiteWork, request_cycles: float) -> SharedSiteTerms:
    degree = max(site.bank_conflict_degree, 1.0)
    return SharedSiteTerms(
        site,
        max(site.wavefronts_per_request, request_cycles),
        max(site.wavefronts_per_request / degree, request_cycles),
    )


def _site_terms(site: SiteWork, request_cycles: float) -> SiteTerms:
    charged = site_l1_wavefronts(site, request_cycles)
    if site.bank_conflict_degree <= 1.0:
        return SiteTerms(site, charged, charged)
    free = site.wavefronts_per_request / site.bank_conflict_degree
    return SiteTerms(site, charged, site_l1_wavefronts(site, request_cycles, free))
