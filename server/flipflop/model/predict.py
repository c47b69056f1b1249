"""Prediction of time, power and energy for one launch configuration and power limit."""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.analysis.work import ThreadWork
from flipflop.gpu.occupancy import occupancy
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import Dim3, LaunchShape
from flipflop.model.constants import MAX_BLOCK_DIMS, WARP_SIZE
from flipflop.model.dvfs import clock_range_mhz, relative_voltage
from flipflop.model.performance import LaunchCost, launch_cost
from flipflop.model.power import DynamicEnergy, dynamic_energy
from flipflop.resources import Resources

# Largest grid extents (CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability": x up to 2^31 − 1, y and z up to 65535).
_MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
# Bisection steps for the clock under a power cap: 2^-30 of the clock range is far below 1 MHz.
_CLOCK_SEARCH_STEPS = 30


class UnlaunchableConfig(ValueError):
    """The block shape cannot run at all (too many threads, registers or shared memory)."""


@dataclass(frozen=True)
class TimeBreakdown:
    """Seconds each component would take on its own, summed over waves (they overlap)."""

    dram_s: float
    compute_s: tuple[tuple[str, float], ...]  # per pipeline: issue, fp32, ..., tensor
    shared_s: float
    latency_s: float  # dependent chain of a working warp, summed over waves
    barrier_s: float  # the barrier part of `latency_s`
    tail_s: float  # extra time of the partial last wave
    launch_s: float


@dataclass(frozen=True)
class PowerBreakdown:
    """Average watts over the launch; the parts sum to the predicted power before clamping."""

    idle_w: float
    constant_w: float
    static_w: float
    dynamic_w: tuple[tuple[str, float], ...]  # per unit: fp32, ..., issue, shared, l2
    dram_w: float

    @property
    def total_w(self) -> float:
        dynamic = sum(watts for _, watts in self.dynamic_w)
        return self.idle_w + self.constant_w + self.static_w + dynamic + self.dram_w


@dataclass(frozen=True)
class Breakdown:
    time: TimeBreakdown
    power: PowerBreakdown
    dram_bytes: float
    wave_fraction: float  # blocks / (SMs × active blocks per SM), e.g. 1.3
    last_wave_fill: float  # fraction of block slots the last wave uses (1.0 when it is full)
    idle_sms_last_wave: int
    lane_efficiency: float  # threads per block / lanes of the warps it occupies
    power_capped: bool  # the cap is below the power at the lowest clock


@dataclass(frozen=True)
class Prediction:
    block: Dim3
    grid: Dim3
    power_limit_w: float | None  # None: the GPU's default limit
    active_blocks_per_sm: int
    occupancy: float
    limiter: str
    waves: int
    clock_mhz: float
    time_s: float
    power_w: float
    energy_j: float
    bound: str  # "memory" | "compute" | "shared" | "latency" | "launch"
    breakdown: Breakdown
    pareto: bool = False


@dataclass(frozen=True)
class PreparedLaunch:
    """Everything about a launch that does not depend on the clock or the power limit."""

    shape: LaunchShape
    active_blocks_per_sm: int
    occupancy: float
    limiter: str
    cost: LaunchCost
    energy: DynamicEnergy


def predict(
    profile: GpuProfile,
    resources: Resources,
    work: ThreadWork,
    shape: LaunchShape,
    power_limit_w: float | None = None,
) -> Prediction:
    """Time, power and energy of `shape` on `profile`, under `power_limit_w` (default: TDP)."""
    return predict_prepared(profile, prepare_launch(profile, resources, work, shape), power_limit_w)


def prepare_launch(
    profile: GpuProfile, resources: Resources, work: ThreadWork, shape: LaunchShape
) -> PreparedLaunch:
    """Occupancy, wave costs and dynamic energy of `shape`; raises UnlaunchableConfig."""
    _check_shape(profile, shape)
    occ = occupancy(
        profile,
        threads_per_block=shape.threads_per_block,
        registers=resources.registers,
        static_smem_bytes=resources.static_smem_bytes,
        dynamic_smem_bytes=shape.dynamic_smem_bytes,
    )
    if occ.active_blocks_per_sm <= 0:
        raise UnlaunchableConfig(_unlaunchable_reason(resources, shape, str(occ.limiter)))
    return PreparedLaunch(
        shape=shape,
        active_blocks_per_sm=occ.active_blocks_per_sm,
        occupancy=occ.occupancy,
        limiter=str(occ.limiter),
        cost=launch_cost(profile, work, shape, occ.active_blocks_per_sm),
        energy=dynamic_energy(profile, work, shape),
    )


def predict_prepared(
    profile: GpuProfile, prepared: PreparedLaunch, power_limit_w: float | None = None
) -> Prediction:
    """Prediction of a prepared launch under a power limit: the clock is the highest that fits."""
    cap = profile.tdp_w if power_limit_w is None else power_limit_w
    if cap <= 0.0:
        raise ValueError(f"power limit must be positive, got {cap} W")
    clock_mhz, capped = _clock_under_cap(profile, prepared, cap)
    clock_hz = clock_mhz * 1e6
    cost = prepared.cost
    time_s = cost.time_s(clock_hz)
    power = _power_breakdown(profile, prepared, clock_mhz)
    power_w = min(max(power.total_w, profile.power.idle_w), max(cap, profile.power.idle_w))
    body_s = cost.body_s(clock_hz)
    dominant = cost.dominant_wave()
    bound = "launch" if cost.launch_s > body_s else dominant.bound(clock_hz)
    return Prediction(
        block=prepared.shape.block,
        grid=prepared.shape.grid,
        power_limit_w=power_limit_w,
        active_blocks_per_sm=prepared.active_blocks_per_sm,
        occupancy=prepared.occupancy,
        limiter=prepared.limiter,
        waves=cost.wave_count,
        clock_mhz=clock_mhz,
        time_s=time_s,
        power_w=power_w,
        energy_j=power_w * time_s,
        bound=bound,
        breakdown=_breakdown(profile, prepared, clock_hz, power, capped),
    )


def _check_shape(profile: GpuProfile, shape: LaunchShape) -> None:
    if any(extent < 1 for extent in (*shape.block, *shape.grid)):
        raise ValueError(f"block {shape.block} and grid {shape.grid} need positive extents")
    if shape.dynamic_smem_bytes < 0:
        raise ValueError("dynamic shared memory cannot be negative")
    if any(extent > most for extent, most in zip(shape.grid, _MAX_GRID_DIMS, strict=True)):
        raise ValueError(f"grid {shape.grid} exceeds the CUDA limit {_MAX_GRID_DIMS}")
    if any(extent > most for extent, most in zip(shape.block, MAX_BLOCK_DIMS, strict=True)):
        raise UnlaunchableConfig(f"block {shape.block} exceeds the CUDA limit {MAX_BLOCK_DIMS}")
    if shape.threads_per_block > profile.limits.max_threads_per_block:
        raise UnlaunchableConfig(
            f"{shape.threads_per_block} threads per block exceed the GPU's limit of "
            f"{profile.limits.max_threads_per_block}"
        )


def _unlaunchable_reason(resources: Resources, shape: LaunchShape, limiter: str) -> str:
    threads = shape.threads_per_block
    if "reg" in limiter.lower():
        return (
            f"{resources.registers} registers/thread × {threads} threads do not fit in one SM's "
            f"register file"
        )
    if "shared" in limiter.lower() or "smem" in limiter.lower():
        smem = resources.static_smem_bytes + shape.dynamic_smem_bytes
        return f"{smem} B of shared memory per block do not fit in one SM"
    return f"a block of {threads} threads cannot be resident on an SM (limited by {limiter})"


def _clock_under_cap(
    profile: GpuProfile, prepared: PreparedLaunch, cap_w: float
) -> tuple[float, bool]:
    """Highest clock whose power is within the cap; P(f) rises with f, so bisection works."""
    lowest, highest = clock_range_mhz(profile)
    if _power_breakdown(profile, prepared, highest).total_w <= cap_w:
        return highest, False
    if _power_breakdown(profile, prepared, lowest).total_w > cap_w:
        return lowest, True
    below, above = lowest, highest
    for _ in range(_CLOCK_SEARCH_STEPS):
        middle = (below + above) / 2.0
        if _power_breakdown(profile, prepared, middle).total_w <= cap_w:
            below = middle
        else:
            above = middle
    return below, False


def _power_breakdown(
    profile: GpuProfile, prepared: PreparedLaunch, clock_mhz: float
) -> PowerBreakdown:
    """P = idle + constant while running + static per busy SM × V + (E_dyn × V^k + E_dram) / T."""
    coeff = profile.power
    clock_hz = clock_mhz * 1e6
    cost = prepared.cost
    time_s = cost.time_s(clock_hz)
    voltage = relative_voltage(profile, clock_mhz)
    dynamic_scale = voltage**coeff.voltage_exponent / time_s
    busy_fraction = cost.body_s(clock_hz) / time_s
    return PowerBreakdown(
        idle_w=coeff.idle_w,
        constant_w=coeff.constant_active_w * busy_fraction,
        static_w=coeff.static_per_sm_w * voltage * cost.sm_seconds(clock_hz) / time_s,
        dynamic_w=tuple(
            (unit, joules * dynamic_scale) for unit, joules in prepared.energy.core_by_unit
        ),
        dram_w=prepared.energy.dram_j / time_s,
    )


def _breakdown(
    profile: GpuProfile,
    prepared: PreparedLaunch,
    clock_hz: float,
    power: PowerBreakdown,
    capped: bool,
) -> Breakdown:
    cost = prepared.cost
    waves = cost.waves
    units = [unit for unit, _ in cost.full.unit_cycles]
    per_unit = {unit: 0.0 for unit in units}
    for wave in waves:
        for unit, cycles in wave.unit_cycles:
            per_unit[unit] += wave.count * cycles / clock_hz
    capacity = cost.full.blocks
    threads = prepared.shape.threads_per_block
    lanes = -(-threads // WARP_SIZE) * WARP_SIZE
    last = cost.last
    return Breakdown(
        time=TimeBreakdown(
            dram_s=sum(wave.count * wave.dram_s for wave in waves),
            compute_s=tuple((unit, per_unit[unit]) for unit in units if unit != "shared"),
            shared_s=per_unit.get("shared", 0.0),
            latency_s=sum(wave.count * wave.latency_s(clock_hz) for wave in waves),
            barrier_s=sum(wave.count * wave.barrier_cycles / clock_hz for wave in waves),
            tail_s=cost.tail_s(clock_hz),
            launch_s=cost.launch_s,
        ),
        power=power,
        dram_bytes=cost.dram_bytes,
        wave_fraction=prepared.shape.blocks / capacity,
        last_wave_fill=1.0 if last is None else last.blocks / capacity,
        idle_sms_last_wave=0 if last is None else profile.sms - last.active_sms,
        lane_efficiency=threads / lanes,
        power_capped=capped,
    )
