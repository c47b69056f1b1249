"""The relative voltage–frequency curve behind power-limit modelling, derived from a clock sweep.

A compute-bound kernel run at several locked core clocks draws P(f) = P0 + k · f · V(f)^2, with
P0 the power that does not scale with the clock (idle board power and leakage at the lowest
voltage). At the lowest clocks the voltage sits at its floor, so P is linear in f there: a
straight line through the lowest points gives k·V_floor^2 as its slope and P0 as its intercept.
Then V(f) / V(f_max) = sqrt(((P(f) - P0) / f) / ((P(f_max) - P0) / f_max)).
The A100 sweep this is applied to is `calibration/data/reference/a100-pcie-fp32-clock-sweep.json`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class VoltageCurve:
    idle_intercept_w: float  # P0: power extrapolated to a zero clock at the floor voltage
    floor_slope_w_per_mhz: float  # k · V_floor^2
    points: tuple[tuple[float, float], ...]  # (clock / highest clock, V / V at highest clock)


def relative_voltage_curve(
    clocks_mhz: Sequence[float], power_w: Sequence[float], *, floor_points: int = 3
) -> VoltageCurve:
    """Fit the floor line through the `floor_points` lowest clocks and derive V(f) relative."""
    if len(clocks_mhz) != len(power_w) or len(clocks_mhz) < floor_points + 1:
        raise ValueError("a clock sweep needs matching clocks and powers, more than the floor")
    if floor_points < 2:
        raise ValueError("the floor line needs at least two points")
    ordered = sorted(zip(clocks_mhz, power_w, strict=True))
    floor = ordered[:floor_points]
    mean_f = sum(f for f, _ in floor) / floor_points
    mean_p = sum(p for _, p in floor) / floor_points
    slope = sum((f - mean_f) * (p - mean_p) for f, p in floor) / sum(
        (f - mean_f) ** 2 for f, _ in floor
    )
    intercept = mean_p - slope * mean_f
    top_f, top_p = ordered[-1]
    top_energy_per_cycle = (top_p - intercept) / top_f
    points = tuple(
        (f / top_f, math.sqrt(max(p - intercept, 0.0) / f / top_energy_per_cycle))
        for f, p in ordered
    )
    return VoltageCurve(intercept, slope, points)
