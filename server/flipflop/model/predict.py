"""Prediction of time, power and energy for one launch configuration and power limit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from flipflop.analysis.work import ThreadWork
from flipflop.fast_init import fast_init
from flipflop.gpu.occupancy import occupancy
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import Dim3, LaunchShape
from flipflop.model.constants import MAX_BLOCK_DIMS, WARP_SIZE
from flipflop.model.dvfs import VoltageCurve, clock_range_mhz, voltage_curve
from flipflop.model.performance import LaunchCost, launch_cost
from flipflop.model.power import DynamicEnergy, dynamic_energy
from flipflop.model.settings import DEFAULT_SETTINGS, GpuSettings
from flipflop.model.spills import with_spills
from flipflop.resources import Resources

# Largest grid extents (CUDA C++ Programming Guide, "Technical Specifications per Compute
# Capability": x up to 2^31 − 1, y and z up to 65535).
_MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)
# The clock under a power cap is found to within 1 MHz (finer than the ~15 MHz steps real GPUs
# switch clocks in) or to within 0.01 W of the cap, whichever comes first.
_CLOCK_TOLERANCE_MHZ = 1.0
_POWER_TOLERANCE_W = 0.01
_CLOCK_SEARCH_STEPS = 60


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


@fast_init
@dataclass(frozen=True)
class PreparedLaunch:
    """Everything about a launch that does not depend on the power limit."""

    shape: LaunchShape
    active_blocks_per_sm: int
    occupancy: float
    limiter: str
    cost: LaunchCost
    energy: DynamicEnergy
    voltage: VoltageCurve
    boost_power_w: float  # average power at the boost clock, before any cap
    boost_time_s: float
    boost_bound: str
    profile: GpuProfile = field(compare=False, repr=False)


@fast_init
@dataclass(frozen=True)
class Prediction:
    block: Dim3
    power_limit_w: float | None  # None: the GPU's default limit
    clock_mhz: float
    time_s: float
    power_w: float
    energy_j: float
    bound: str  # "memory" | "compute" | "shared" | "latency" | "launch"
    power_capped: bool  # the cap is below the power at the lowest clock
    launch: PreparedLaunch = field(compare=False, repr=False)
    pareto: bool = False
    # The compile-time tunables of the configuration (empty when only the launch varies).
    params: tuple[tuple[str, int | float | str], ...] = ()
    # What the configuration sets on the GPU (locked clocks, a power limit), beside `params`.
    settings: GpuSettings = DEFAULT_SETTINGS

    @property
    def limit_w(self) -> float | None:
        """The power limit the prediction runs under: swept, set by the configuration, or
        None for the board's default."""
        return self.power_limit_w if self.power_limit_w is not None else \
            self.settings.power_limit_w

    # What does not depend on the power limit is read from the prepared launch: an advisor
    # builds ten predictions per launch, and each field costs its construction.
    @property
    def profile(self) -> GpuProfile:
        return self.launch.profile

    @property
    def grid(self) -> Dim3:
        return self.launch.shape.grid

    @property
    def active_blocks_per_sm(self) -> int:
        return self.launch.active_blocks_per_sm

    @property
    def occupancy(self) -> float:
        return self.launch.occupancy

    @property
    def limiter(self) -> str:
        return self.launch.limiter

    @property
    def waves(self) -> int:
        return self.launch.cost.wave_count

    @cached_property
    def breakdown(self) -> Breakdown:
        """Time and power by component (computed on first use: the advisor needs few)."""
        return _breakdown(self.profile, self.launch, self.clock_mhz, self.power_capped)


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
    work = with_spills(work, resources)
    cost = launch_cost(profile, work, shape, occ.active_blocks_per_sm)
    energy = dynamic_energy(profile, work, shape, cost.dram_bytes)
    boost_time_s, boost_bound = _time_and_bound(cost, profile.boost_clock_mhz)
    voltage = voltage_curve(profile)
    return PreparedLaunch(
        shape=shape,
        active_blocks_per_sm=occ.active_blocks_per_sm,
        occupancy=occ.occupancy,
        limiter=str(occ.limiter),
        cost=cost,
        energy=energy,
        voltage=voltage,
        boost_power_w=_power_w(profile, cost, energy, voltage, profile.boost_clock_mhz),
        boost_time_s=boost_time_s,
        boost_bound=boost_bound,
        profile=profile,
    )


def _time_and_bound(cost: LaunchCost, clock_mhz: float) -> tuple[float, str]:
    clock_hz = clock_mhz * 1e6
    time_s, body_s, _ = cost.timing(clock_hz)
    return time_s, "launch" if cost.launch_s > body_s else cost.bound(clock_hz)


def predict_prepared(
    profile: GpuProfile, prepared: PreparedLaunch, power_limit_w: float | None = None
) -> Prediction:
    """Prediction of a prepared launch under a power limit: the clock is the highest that fits."""
    return _predict_under_cap(profile, prepared, power_limit_w, {})


def predict_power_limits(
    profile: GpuProfile,
    prepared: PreparedLaunch,
    power_limits: Sequence[float | None],
    settings: GpuSettings = DEFAULT_SETTINGS,
) -> tuple[Prediction, ...]:
    """`predict_prepared` for several limits, sharing the power evaluated at DVFS points;
    `settings` lock the clock (the highest it may run at) or set the default limit (a swept
    limit replaces it)."""
    known: dict[float, float] = {}
    return tuple(_predict_under_cap(profile, prepared, limit, known, settings)
                 for limit in power_limits)


def _predict_under_cap(
    profile: GpuProfile,
    prepared: PreparedLaunch,
    power_limit_w: float | None,
    known: dict[float, float],
    settings: GpuSettings = DEFAULT_SETTINGS,
) -> Prediction:
    limit = settings.power_limit_w if power_limit_w is None else power_limit_w
    cap = profile.tdp_w if limit is None else limit
    if cap <= 0.0:
        raise ValueError(f"power limit must be positive, got {cap} W")
    cost = prepared.cost
    top = settings.core_clock_mhz
    if top is None or top == profile.boost_clock_mhz:
        top, top_power = profile.boost_clock_mhz, prepared.boost_power_w
        top_time, top_bound = prepared.boost_time_s, prepared.boost_bound
    else:
        top_power = _power_w(profile, cost, prepared.energy, prepared.voltage, top)
        top_time, top_bound = _time_and_bound(cost, top)
    if top_power <= cap:
        clock_mhz, capped, power_w = top, False, top_power
        time_s, bound = top_time, top_bound
    else:
        clock_mhz, capped, power_w = _clock_under_cap(profile, prepared, cap, known,
                                                      (top, top_power))
        time_s, bound = _time_and_bound(cost, clock_mhz)
    power_w = min(max(power_w, profile.power.idle_w), max(cap, profile.power.idle_w))
    return Prediction(
        block=prepared.shape.block,
        power_limit_w=power_limit_w,
        clock_mhz=clock_mhz,
        time_s=time_s,
        power_w=power_w,
        energy_j=power_w * time_s,
        bound=bound,
        power_capped=capped,
        launch=prepared,
        settings=settings,
    )


def _check_shape(profile: GpuProfile, shape: LaunchShape) -> None:
    (bx, by, bz), (gx, gy, gz) = shape.block, shape.grid
    if min(bx, by, bz, gx, gy, gz) < 1:
        raise ValueError(f"block {shape.block} and grid {shape.grid} need positive extents")
    if shape.dynamic_smem_bytes < 0:
        raise ValueError("dynamic shared memory cannot be negative")
    if gx > _MAX_GRID_DIMS[0] or gy > _MAX_GRID_DIMS[1] or gz > _MAX_GRID_DIMS[2]:
        raise ValueError(f"grid {shape.grid} exceeds the CUDA limit {_MAX_GRID_DIMS}")
    if bx > MAX_BLOCK_DIMS[0] or by > MAX_BLOCK_DIMS[1] or bz > MAX_BLOCK_DIMS[2]:
        raise UnlaunchableConfig(f"block {shape.block} exceeds the CUDA limit {MAX_BLOCK_DIMS}")
    if bx * by * bz > profile.limits.max_threads_per_block:
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
    profile: GpuProfile, prepared: PreparedLaunch, cap_w: float, known: dict[float, float],
    top: tuple[float, float] | None = None,
) -> tuple[float, bool, float]:
    """Highest clock whose power is within the cap (never above it): (clock, capped, power).

    P(f) rises with f but bends at every DVFS point, where V(f) changes slope: first a binary
    search over the DVFS points finds the segment holding the cap, then false position inside
    the segment, where P(f) is smooth. Each step keeps a hundredth of the bracket away from its
    ends, so the bracket always shrinks. `known` remembers P at DVFS points across caps. `top`
    is the highest clock and its power (a locked clock; default the boost clock).
    """
    cost, energy, voltage = prepared.cost, prepared.energy, prepared.voltage

    def power_at_point(clock: float) -> float:
        if clock not in known:
            known[clock] = _power_w(profile, cost, energy, voltage, clock)
        return known[clock]

    lowest, highest = clock_range_mhz(profile)
    power_above = prepared.boost_power_w
    if top is not None:
        highest, power_above = top
    power_below = power_at_point(lowest)
    if power_below > cap_w:
        return lowest, True, power_below
    clocks = [lowest, *(c for c in voltage.clocks_mhz if lowest < c < highest), highest]
    low, high = 0, len(clocks) - 1
    while high - low > 1:
        middle = (low + high) // 2
        power = power_at_point(clocks[middle])
        if power <= cap_w:
            low, power_below = middle, power
        else:
            high, power_above = middle, power
    below, above = clocks[low], clocks[high]
    # Illinois false position: an end kept twice in a row has its distance from the cap halved
    # in the interpolation, so the bracket closes from both sides (superlinear, not linear).
    excess_below, excess_above = power_below - cap_w, power_above - cap_w
    kept = 0  # +1: the upper end was kept last time, −1: the lower one
    for _ in range(_CLOCK_SEARCH_STEPS):
        if above - below <= _CLOCK_TOLERANCE_MHZ or cap_w - power_below <= _POWER_TOLERANCE_W:
            break
        width = above - below
        guess = below + width * -excess_below / (excess_above - excess_below)
        guess = min(max(guess, below + 0.01 * width), above - 0.01 * width)
        power = _power_w(profile, cost, energy, voltage, guess)
        if power <= cap_w:
            below, power_below, excess_below = guess, power, power - cap_w
            excess_above = excess_above / 2.0 if kept == 1 else excess_above
            kept = 1
        else:
            above, excess_above = guess, power - cap_w
            excess_below = excess_below / 2.0 if kept == -1 else excess_below
            kept = -1
    return below, False, power_below


def _power_w(
    profile: GpuProfile,
    cost: LaunchCost,
    energy: DynamicEnergy,
    voltage_of: VoltageCurve,
    clock_mhz: float,
) -> float:
    """P = idle + constant while running + static per busy SM × V + (E_dyn × V^k + E_DRAM) / T."""
    coeff = profile.power
    time_s, body_s, sm_seconds = cost.timing(clock_mhz * 1e6)
    voltage = voltage_of.at(clock_mhz)
    joules = (
        coeff.constant_active_w * body_s
        + coeff.static_per_sm_w * voltage * sm_seconds
        + energy.core_j * float(voltage**coeff.voltage_exponent)
        + energy.dram_j
    )
    return coeff.idle_w + joules / time_s


def _power_breakdown(
    profile: GpuProfile, prepared: PreparedLaunch, clock_mhz: float
) -> PowerBreakdown:
    """The terms of `_power_w`, one by one."""
    coeff = profile.power
    time_s, body_s, sm_seconds = prepared.cost.timing(clock_mhz * 1e6)
    voltage = prepared.voltage.at(clock_mhz)
    dynamic_scale = float(voltage**coeff.voltage_exponent) / time_s
    return PowerBreakdown(
        idle_w=coeff.idle_w,
        constant_w=coeff.constant_active_w * body_s / time_s,
        static_w=coeff.static_per_sm_w * voltage * sm_seconds / time_s,
        dynamic_w=tuple(
            (unit, joules * dynamic_scale) for unit, joules in prepared.energy.core_by_unit
        ),
        dram_w=prepared.energy.dram_j / time_s,
    )


def _breakdown(
    profile: GpuProfile, prepared: PreparedLaunch, clock_mhz: float, capped: bool
) -> Breakdown:
    cost = prepared.cost
    clock_hz = clock_mhz * 1e6
    per_unit = dict.fromkeys((unit for unit, _ in cost.block_unit_cycles), 0.0)
    for wave in cost.waves:
        for unit, cycles in cost.block_unit_cycles:
            per_unit[unit] += wave.count * wave.blocks_on_busiest_sm * cycles / clock_hz
    threads = prepared.shape.threads_per_block
    lanes = -(-threads // WARP_SIZE) * WARP_SIZE
    last = cost.last
    wave_count = sum(wave.count for wave in cost.waves)
    return Breakdown(
        time=TimeBreakdown(
            dram_s=sum(wave.count * wave.dram_s for wave in cost.waves),
            compute_s=tuple((unit, s) for unit, s in per_unit.items() if unit != "shared"),
            shared_s=per_unit.get("shared", 0.0),
            latency_s=wave_count * cost.latency_s(clock_hz),
            barrier_s=wave_count * cost.barrier_cycles / clock_hz,
            tail_s=cost.tail_s(clock_hz),
            launch_s=cost.launch_s,
        ),
        power=_power_breakdown(profile, prepared, clock_mhz),
        dram_bytes=cost.dram_bytes,
        wave_fraction=prepared.shape.blocks / cost.full.blocks,
        last_wave_fill=1.0 if last is None else last.blocks / cost.full.blocks,
        idle_sms_last_wave=0 if last is None else profile.sms - last.active_sms,
        lane_efficiency=threads / lanes,
        power_capped=capped,
    )
