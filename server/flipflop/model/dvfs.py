"""Voltage as a function of clock, from the profile's DVFS points."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from flipflop.fast_init import fast_init
from flipflop.gpu.profile import GpuProfile


@fast_init
@dataclass(frozen=True)
class VoltageCurve:
    """V(f) relative to the boost clock's voltage, linear between DVFS points, flat outside."""

    clocks_mhz: tuple[float, ...]  # ascending
    voltages: tuple[float, ...]

    def at(self, clock_mhz: float) -> float:
        clocks, voltages = self.clocks_mhz, self.voltages
        if not clocks:
            return 1.0
        if clock_mhz <= clocks[0]:
            return voltages[0]
        if clock_mhz >= clocks[-1]:
            return voltages[-1]
        upper = bisect_left(clocks, clock_mhz)
        f0, f1 = clocks[upper - 1], clocks[upper]
        v0, v1 = voltages[upper - 1], voltages[upper]
        return v0 + (v1 - v0) * (clock_mhz - f0) / (f1 - f0)


def voltage_curve(profile: GpuProfile) -> VoltageCurve:
    points = sorted(profile.dvfs_points)
    return VoltageCurve(tuple(c for c, _ in points), tuple(v for _, v in points))


def relative_voltage(profile: GpuProfile, clock_mhz: float) -> float:
    return voltage_curve(profile).at(clock_mhz)


def clock_range_mhz(profile: GpuProfile) -> tuple[float, float]:
    """Lowest and highest clock the model lets DVFS choose."""
    lowest = min((clock for clock, _ in profile.dvfs_points), default=profile.base_clock_mhz)
    return min(lowest, profile.boost_clock_mhz), profile.boost_clock_mhz
