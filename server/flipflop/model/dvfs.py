"""Voltage as a function of clock, from the profile's DVFS points."""

from __future__ import annotations

from bisect import bisect_left

from flipflop.gpu.profile import GpuProfile


def clock_range_mhz(profile: GpuProfile) -> tuple[float, float]:
    """Lowest and highest clock the model lets DVFS choose."""
    lowest = min((clock for clock, _ in profile.dvfs_points), default=profile.base_clock_mhz)
    return min(lowest, profile.boost_clock_mhz), profile.boost_clock_mhz


def relative_voltage(profile: GpuProfile, clock_mhz: float) -> float:
    """V(f) relative to the boost clock's voltage, linear between DVFS points, flat outside."""
    points = sorted(profile.dvfs_points)
    if not points:
        return 1.0
    clocks = [clock for clock, _ in points]
    if clock_mhz <= clocks[0]:
        return points[0][1]
    if clock_mhz >= clocks[-1]:
        return points[-1][1]
    upper = bisect_left(clocks, clock_mhz)
    (f0, v0), (f1, v1) = points[upper - 1], points[upper]
    return v0 + (v1 - v0) * (clock_mhz - f0) / (f1 - f0)
