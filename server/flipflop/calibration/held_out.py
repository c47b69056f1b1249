"""Figures with the kernel held out: what the model's error and shortlist do on a kernel that took
no part in choosing them.

Input: every measured file as scored by `flipflop validate` (each configuration's predicted and
measured time, and energy where measured). For each measured kernel K, the interval widths
(`flipflop.model.error`) are computed from the other kernels' pairs alone, each kernel weighing
the same, and then judged on K:

- coverage: the share of K's pairs whose measured log ratio lies inside the interval;
- the shortlist: the configurations whose time ratio to the predicted fastest has an interval
  that reaches 1 (they may be at least as fast, within the model's error); whether K's measured
  fastest is inside it, and how large a share of K's configurations it is.

The widths shipped to users are computed the same way from every kernel.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE, fastest_share, within_error
from flipflop.model.error import (
    LEVELS,
    Metric,
    PairKind,
    coverage,
    log_ratio_residuals,
    weighted_conformal_half_width,
)

MIN_KERNELS = 3
"""Kernels a shipped width must rest on: with fewer, one kernel's quirks set it, and its held-out
coverage is judged on one or two kernels alone."""

PAIRS_PER_KERNEL = 2000
"""Residuals drawn from each kernel (all of them when it has fewer), evenly from its files: a
bound on the work; the weighing of kernels is the width's own (`weighted_conformal_half_width`)."""


@dataclass(frozen=True)
class MeasuredPoint:
    """One configuration of a measured file: its tunables and both sides of each figure."""

    parameters: tuple[tuple[str, str], ...]  # every tunable but the block's, as text
    block: tuple[str, ...]  # the block-size tunables' values
    predicted_time_s: float
    measured_time_s: float
    predicted_energy_j: float | None
    measured_energy_j: float | None


@dataclass(frozen=True)
class MeasuredFile:
    kernel: str  # the measured kernel's folder name: what is held out together
    file: str
    points: tuple[MeasuredPoint, ...]


@dataclass(frozen=True)
class HeldOutInterval:
    """The interval of one metric and pair kind at one level, judged on one held-out kernel."""

    kernel: str
    metric: Metric
    kind: PairKind
    level: float
    log_half_width: float  # from the other kernels
    coverage: float | None  # on this kernel's pairs; None when it has none of this kind
    pairs: int  # this kernel's pairs judged


@dataclass(frozen=True)
class HeldOutShortlist:
    """The interval shortlist of one held-out file at one level."""

    kernel: str
    file: str
    level: float
    size: int
    configurations: int
    holds_best: bool  # the measured fastest is inside
    best_regret: float  # best measured time inside over the measured best, minus one

    @property
    def share(self) -> float:
        return self.size / self.configurations


def pairs_of(points: Sequence[MeasuredPoint], kind: PairKind) -> Iterator[tuple[int, int]]:
    """Every unordered pair of positions of one kind: `block` when only the block differs,
    `code` when other tunables differ too."""
    for a in range(len(points)):
        for b in range(a + 1, len(points)):
            same_code = points[a].parameters == points[b].parameters
            wanted = (not same_code) if kind == "code" else (
                same_code and points[a].block != points[b].block)
            if wanted:
                yield a, b


def residuals(measured: MeasuredFile, metric: Metric, kind: PairKind) -> list[float]:
    """The log-ratio residuals of one file's pairs for `metric` (none for energy where the file
    did not measure it)."""
    points = measured.points
    if metric == "time":
        predicted = [p.predicted_time_s for p in points]
        actual = [p.measured_time_s for p in points]
    else:
        if any(p.measured_energy_j is None or p.predicted_energy_j is None for p in points):
            return []
        predicted = [p.predicted_energy_j or 0.0 for p in points]
        actual = [p.measured_energy_j or 0.0 for p in points]
    return log_ratio_residuals(predicted, actual, pairs_of(points, kind))


def kernel_residuals(files: Sequence[MeasuredFile], metric: Metric, kind: PairKind,
                     seed: int) -> dict[str, list[float]]:
    """Per kernel, at most `PAIRS_PER_KERNEL` residuals drawn evenly from its files (seeded)."""
    by_kernel: dict[str, list[list[float]]] = {}
    for measured in files:
        found = residuals(measured, metric, kind)
        if found:
            by_kernel.setdefault(measured.kernel, []).append(found)
    drawn: dict[str, list[float]] = {}
    for kernel, per_file in sorted(by_kernel.items()):
        share = PAIRS_PER_KERNEL // len(per_file)
        rng = random.Random(f"{seed}:{kernel}:{metric}:{kind}")
        drawn[kernel] = [r for found in per_file
                         for r in (found if len(found) <= share else rng.sample(found, share))]
    return drawn


def pooled_half_width(by_kernel: Mapping[str, Sequence[float]], level: float,
                      leave_out: str | None = None) -> tuple[float, int]:
    """The conformal width of the kernels' residuals but `leave_out`'s, each kernel weighing the
    same, with the number of residuals used."""
    kept = [found for kernel, found in sorted(by_kernel.items()) if kernel != leave_out]
    return weighted_conformal_half_width(kept, level), sum(len(found) for found in kept)


def held_out_intervals(files: Sequence[MeasuredFile], metric: Metric, kind: PairKind,
                       level: float, seed: int = 1) -> list[HeldOutInterval]:
    """For each kernel with pairs of this kind, the width from the others and its coverage."""
    by_kernel = kernel_residuals(files, metric, kind, seed)
    judged = []
    for kernel, found in sorted(by_kernel.items()):
        width, _ = pooled_half_width(by_kernel, level, leave_out=kernel)
        judged.append(HeldOutInterval(kernel, metric, kind, level, width,
                                      coverage(width, found), len(found)))
    return judged


def stand_in_intervals(files: Sequence[MeasuredFile], kind: PairKind, level: float,
                       seed: int = 1) -> list[HeldOutInterval]:
    """For each kernel with measured energy, how often the time width of `kind` pairs taken from
    the other kernels holds its energy ratios: the width advice judges energy savings with until
    energy has been measured on enough kernels for a width of its own."""
    times = kernel_residuals(files, "time", kind, seed)
    energies = kernel_residuals(files, "energy", kind, seed)
    judged = []
    for kernel, found in sorted(energies.items()):
        width, _ = pooled_half_width(times, level, leave_out=kernel)
        judged.append(HeldOutInterval(kernel, "energy", kind, level, width,
                                      coverage(width, found), len(found)))
    return judged


def interval_shortlist(points: Sequence[MeasuredPoint], log_half_width: float,
                       share: float = DEFAULT_SHORTLIST_SHARE) -> list[int]:
    """Positions of the shortlist `flipflop.advice.shortlist` hands to measurement: of the
    predicted fastest `share` of the file, those whose predicted time ratio to the predicted
    fastest has an interval that reaches 1 (log(t / t_fastest) ≤ q)."""
    times = [p.predicted_time_s for p in points]
    energies = [p.predicted_energy_j or 0.0 for p in points]
    fastest = min(times)
    return [i for i in fastest_share(range(len(points)), times, energies, share)
            if within_error(times[i], fastest, log_half_width)]


def held_out_shortlists(files: Sequence[MeasuredFile], level: float,
                        seed: int = 1) -> list[HeldOutShortlist]:
    """Each file's interval shortlist, with the time width of `code` pairs from the other
    kernels (what a search space's shortlist rests on)."""
    by_kernel = kernel_residuals(files, "time", "code", seed)
    judged = []
    for measured in files:
        width, _ = pooled_half_width(by_kernel, level, leave_out=measured.kernel)
        points = measured.points
        chosen = interval_shortlist(points, width)
        best = min(p.measured_time_s for p in points)
        inside = min(points[i].measured_time_s for i in chosen)
        judged.append(HeldOutShortlist(
            measured.kernel, measured.file, level, len(chosen), len(points),
            holds_best=inside <= best, best_regret=inside / best - 1.0))
    return judged


def shipped_intervals(files: Sequence[MeasuredFile], seed: int = 1) -> dict[str, object]:
    """The `flipflop/model/error.json` document: widths from every kernel at every level, each
    with its median held-out coverage."""
    intervals: list[dict[str, object]] = []
    metrics: tuple[Metric, ...] = ("time", "energy")
    kinds: tuple[PairKind, ...] = ("block", "code")
    for metric in metrics:
        for kind in kinds:
            by_kernel = kernel_residuals(files, metric, kind, seed)
            if len(by_kernel) < MIN_KERNELS:
                continue  # advice falls back to the time width (flipflop.advice.confidence)
            for level in LEVELS:
                width, count = pooled_half_width(by_kernel, level)
                judged = held_out_intervals(files, metric, kind, level, seed)
                covered = [j.coverage for j in judged if j.coverage is not None]
                intervals.append({
                    "metric": metric, "kind": kind, "level": level,
                    "log_half_width": round(width, 6) if math.isfinite(width) else None,
                    "pairs": count, "kernels": sorted(by_kernel),
                    "held_out_coverage": (round(statistics.median(covered), 4)
                                          if covered else None),
                })
    return {"intervals": [i for i in intervals if i["log_half_width"] is not None]}
