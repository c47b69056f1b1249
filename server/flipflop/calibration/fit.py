"""Profile coefficients from microbenchmark measurements: pure functions, no GPU needed.

Each microbenchmark header declares its per-launch work (`dram_bytes`, `fp32_flops`, …,
`active_sms`); dividing by the measured time gives rates. From those:

- achievable bandwidths and per-SM per-clock peak rates are the best rate any configuration
  reached (a microbenchmark exists to reach the peak);
- the power model P − P_idle = P_active + P_sm × active_SMs + Σ_u e_u × rate_u is a linear
  least-squares fit with non-negative coefficients (scipy.optimize.lsq_linear), the form of
  Hong & Kim (ISCA 2010) and GPUWattch;
- V(f) follows from power at several clocks: P = a + b·f·V(f)², V(f)/V(f_max) =
  max(v_min, 1 − s·(1 − f/f_max)) — flat at the lowest voltage, then rising linearly, the
  shape the public A100 clock sweep shows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np
from scipy.optimize import least_squares, lsq_linear  # type: ignore[import-untyped]

from flipflop.calibration.records import MeasurementSet

# work key -> (rate field in the profile, energy field in the profile)
UNITS: tuple[tuple[str, str | None, str], ...] = (
    ("fp32_flops", "rates.fp32_flops", "power.pj_per_fp32_flop"),
    ("fp64_flops", "rates.fp64_flops", "power.pj_per_fp64_flop"),
    ("fp16_flops", "rates.fp16_flops", "power.pj_per_fp16_flop"),
    ("int_ops", "rates.int_ops", "power.pj_per_int_op"),
    ("sfu_ops", "rates.sfu_ops", "power.pj_per_sfu_op"),
    ("tensor_flops", "rates.tensor_flops", "power.pj_per_tensor_flop"),
    ("shared_bytes", "rates.shared_bytes", "power.pj_per_shared_byte"),
    ("l2_bytes", None, "power.pj_per_l2_byte"),
    ("dram_bytes", None, "power.pj_per_dram_byte"),
)


class FitError(ValueError):
    """The measurements cannot determine the coefficients asked for."""


@dataclass(frozen=True)
class FittedValue:
    value: float
    source: str  # how the number was derived, naming the measurements


@dataclass(frozen=True)
class CalibrationFit:
    """Fitted profile numbers keyed by dotted profile field (e.g. `power.idle_w`)."""

    values: Mapping[str, FittedValue]
    power_residual_rms_w: float | None
    samples: int


@dataclass(frozen=True)
class VoltageFit:
    static_w: float  # a: power that does not scale with f·V²
    dynamic_w_per_mhz: float  # b
    v_min: float
    slope: float
    max_clock_mhz: float
    residual_rms_w: float

    def voltage(self, clock_mhz: float) -> float:
        return max(self.v_min, 1.0 - self.slope * (1.0 - clock_mhz / self.max_clock_mhz))

    def power(self, clock_mhz: float) -> float:
        return self.static_w + self.dynamic_w_per_mhz * clock_mhz * self.voltage(clock_mhz) ** 2


@dataclass(frozen=True)
class _Sample:
    origin: str
    time_s: float
    power_w: float
    idle_w: float
    clock_hz: float
    sms: int
    work: Mapping[str, float]


def _samples(sets: Sequence[MeasurementSet]) -> list[_Sample]:
    samples = []
    for data in sets:
        for config in data.configs:
            if config.correct is False or config.time_s <= 0:
                continue
            clock = config.sm_clock_mhz or data.device.sm_clock_mhz
            block = "x".join(str(d) for d in config.block)
            samples.append(
                _Sample(
                    origin=f"{data.kernel}@{block}",
                    time_s=config.time_s,
                    power_w=config.power_w,
                    idle_w=data.idle_power_w,
                    clock_hz=clock * 1e6,
                    sms=data.device.sms,
                    work=config.work,
                )
            )
    return samples


def fit_profile(sets: Sequence[MeasurementSet], citation: str) -> CalibrationFit:
    """Fit every coefficient the measurements determine; `citation` names the data files."""
    samples = _samples(sets)
    if not samples:
        raise FitError("no usable measurements (none correct with a positive time)")
    values: dict[str, FittedValue] = {}

    idle = median(data.idle_power_w for data in sets)
    values["power.idle_w"] = FittedValue(idle, f"median idle board power, NVML; {citation}")

    def best(key: str) -> _Sample | None:
        having = [s for s in samples if s.work.get(key, 0.0) > 0]
        return max(having, key=lambda s: s.work[key] / s.time_s) if having else None

    dram = best("dram_bytes")
    if dram is not None:
        values["memory_bandwidth_gbs"] = FittedValue(
            dram.work["dram_bytes"] / dram.time_s / 1e9,
            f"best DRAM bytes/time ({dram.origin}); {citation}",
        )
    l2 = best("l2_bytes")
    if l2 is not None:
        values["l2_bandwidth_gbs"] = FittedValue(
            l2.work["l2_bytes"] / l2.time_s / 1e9, f"best L2 bytes/time ({l2.origin}); {citation}"
        )
    for key, rate_field, _ in UNITS:
        top = best(key)
        if rate_field is None or top is None:
            continue
        per_sm_cycle = top.work[key] / top.time_s / (top.sms * top.clock_hz)
        values[rate_field] = FittedValue(
            per_sm_cycle, f"best {key}/time/(SMs×clock) ({top.origin}); {citation}"
        )
    launches = [s.time_s for s in samples if s.work.get("empty_launch", 0.0) > 0]
    if launches:
        values["launch_overhead_s"] = FittedValue(
            median(launches), f"median time of an empty kernel; {citation}"
        )

    residual = _fit_power(samples, values, citation)
    return CalibrationFit(values=values, power_residual_rms_w=residual, samples=len(samples))


def _fit_power(
    samples: Sequence[_Sample], values: dict[str, FittedValue], citation: str
) -> float | None:
    rows = [s for s in samples if "active_sms" in s.work]
    if not rows:
        return None
    units = [(key, field) for key, _, field in UNITS if any(s.work.get(key, 0) > 0 for s in rows)]
    names = ["power.constant_active_w", "power.static_per_sm_w"] + [f for _, f in units]
    # Rates in 1e12 per second, so the energy coefficients come out in pJ directly.
    matrix = np.array(
        [
            [1.0, s.work["active_sms"]]
            + [s.work.get(key, 0.0) / s.time_s / 1e12 for key, _ in units]
            for s in rows
        ]
    )
    target = np.array([s.power_w - s.idle_w for s in rows])
    if len(rows) < len(names):
        raise FitError(
            f"power fit needs at least {len(names)} configurations, got {len(rows)}"
        )
    result = lsq_linear(matrix, target, bounds=(0.0, np.inf))
    for name, coefficient in zip(names, result.x, strict=True):
        values[name] = FittedValue(
            float(coefficient),
            f"non-negative least squares of board power above idle over {len(rows)} "
            f"microbenchmark configurations; {citation}",
        )
    residual = matrix @ result.x - target
    return float(math.sqrt(float(np.mean(residual**2))))


def fit_voltage_curve(
    clocks_mhz: Sequence[float], power_w: Sequence[float], max_clock_mhz: float | None = None
) -> VoltageFit:
    """Fit P(f) = a + b·f·V(f)² with V(f) = max(v_min, 1 − s·(1 − f/f_max)) to power at clocks."""
    if len(clocks_mhz) != len(power_w) or len(set(clocks_mhz)) < 4:
        raise FitError("a V(f) fit needs power at 4 or more distinct clocks")
    f = np.asarray(clocks_mhz, dtype=float)
    p = np.asarray(power_w, dtype=float)
    f_max = float(max_clock_mhz or f.max())

    def model(theta: np.ndarray) -> np.ndarray:
        a, b, v_min, slope = theta
        v = np.maximum(v_min, 1.0 - slope * (1.0 - f / f_max))
        return np.asarray(a + b * f * v**2)

    best = None
    for v_start in (0.5, 0.7, 0.9):
        for slope_start in (0.3, 0.8, 1.2):
            start = np.array([float(p.min()) * 0.5, float(p.max()) / f_max, v_start, slope_start])
            fit = least_squares(
                lambda t: model(t) - p,
                start,
                bounds=([0.0, 0.0, 0.2, 0.0], [np.inf, np.inf, 1.0, 2.0]),
            )
            if best is None or fit.cost < best.cost:
                best = fit
    assert best is not None
    a, b, v_min, slope = (float(x) for x in best.x)
    rms = float(math.sqrt(float(np.mean((model(best.x) - p) ** 2))))
    return VoltageFit(a, b, v_min, slope, f_max, rms)


def dvfs_points(fit: VoltageFit, clocks_mhz: Sequence[float]) -> tuple[tuple[float, float], ...]:
    """(clock, relative voltage) points for the profile, one per clock, ascending."""
    return tuple((float(c), round(fit.voltage(c), 4)) for c in sorted(set(clocks_mhz)))


def clock_power_pairs(sets: Sequence[MeasurementSet]) -> tuple[list[float], list[float]]:
    """(clock, power) of every configuration that recorded its mean clock."""
    clocks, powers = [], []
    for data in sets:
        for config in data.configs:
            if config.sm_clock_mhz is not None:
                clocks.append(config.sm_clock_mhz)
                powers.append(config.power_w)
    return clocks, powers
