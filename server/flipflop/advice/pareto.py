"""The Pareto front over (time, energy): configurations nothing else beats on both."""

from __future__ import annotations

from collections.abc import Sequence


def pareto_flags(points: Sequence[tuple[float, float]]) -> tuple[bool, ...]:
    """For each (time, energy) point, whether no other point is at least as good on both and
    strictly better on one. Sorted by time, a point is on the front when its energy is below
    every energy seen at a smaller time (exact duplicates of a front point stay on it)."""
    flags = [False] * len(points)
    best_energy = float("inf")
    last_on_front: tuple[float, float] | None = None
    for index in sorted(range(len(points)), key=lambda i: points[i]):
        point = points[index]
        if point[1] < best_energy or point == last_on_front:
            flags[index] = True
            best_energy = point[1]
            last_on_front = point
    return tuple(flags)
