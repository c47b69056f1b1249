"""How far a predicted ratio between two configurations can be trusted: the model's error.

A recommendation rests on a ratio, not on an absolute figure: "block 96 takes 0.70 of the energy
of block 256". How wrong such ratios come out was measured on kernels the model was not shaped
on (`scripts/validate_all.py`, docs/validation.md): for every pair (a, b) of configurations of a
measured kernel, the residual is

    r = log(predicted_a / predicted_b) − log(measured_a / measured_b)

and the interval at level L is ±q around the predicted log ratio, with q the split-conformal
quantile of |r| (the ⌈(n + 1)·L⌉-th smallest of n calibration residuals: under exchangeable pairs
it covers at least L of new ones; Vovk et al., "Algorithmic Learning in a Random World", and
Lei et al. 2018, "Distribution-free predictive inference for regression"). Kernels are not
exchangeable with each other, so the coverage that matters is measured with each kernel held out
and reported beside the widths (docs/validation.md, "Confidence").

Two kinds of pair are kept apart, because their errors differ:
- `block`: the configurations differ only in the block shape (and the grid that follows it):
  what a launch's quick fix rests on;
- `code`: they differ in compile-time tunables too: what a search space's pick rests on.

The widths ship in `error.json` beside this module, written by `scripts/validate_all.py` from
every measured kernel; the held-out coverage of each is in the same file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Literal

Metric = Literal["time", "energy"]
PairKind = Literal["block", "code"]

DEFAULT_LEVEL = 0.8
"""The level of the intervals advice is judged at unless a user asks for another: wide enough
that a change it recommends is usually real, narrow enough that a real 20-30% saving still
shows (the level the issue tracker's goals name; any of `LEVELS` can be asked for)."""

LEVELS = (0.5, 0.8, 0.9, 0.95)
"""The levels `error.json` holds widths for."""


class ModelErrorFormatError(ValueError):
    """`error.json` (or a file given in its place) cannot be read."""


@dataclass(frozen=True)
class RatioInterval:
    """±`log_half_width` around a predicted log ratio holds the measured one with probability
    `level` (held out: `held_out_coverage`)."""

    metric: Metric
    kind: PairKind
    level: float
    log_half_width: float
    pairs: int  # calibration residuals behind the width
    kernels: tuple[str, ...]  # the measured kernels they came from
    held_out_coverage: float | None  # share of a held-out kernel's pairs inside, median

    @property
    def percent(self) -> float:
        """The half width as a percentage of the ratio, upwards: e^q − 1 (the wider side)."""
        return math.expm1(self.log_half_width) * 100.0

    def holds(self, saving: float) -> bool:
        """Whether a predicted saving (1 − new / old) is larger than the model's error: the
        whole interval of the ratio new / old lies below 1."""
        if saving >= 1.0:
            return True
        return math.log(1.0 / (1.0 - saving)) > self.log_half_width

    def saving_range(self, saving: float) -> tuple[float, float]:
        """The interval of a predicted saving (1 − new / old): the ratio's interval, r·e^±q,
        read as savings (lowest first)."""
        ratio = 1.0 - saving
        return 1.0 - ratio * math.exp(self.log_half_width), 1.0 - ratio * math.exp(
            -self.log_half_width)

    def describe(self, saving: float) -> str:
        """"83% (76% to 88% at 80%)": a saving with its interval at this level."""
        low, high = self.saving_range(saving)
        return (f"{_whole_percent(saving)} ({_whole_percent(low)} to {_whole_percent(high)} at "
                f"{self.level:.0%})")


def _whole_percent(value: float) -> str:
    rounded = round(100.0 * value)
    return f"{rounded + 0:d}%"  # + 0: no "-0%"


@dataclass(frozen=True)
class ModelError:
    """The intervals of one level, by metric and pair kind."""

    level: float
    intervals: tuple[RatioInterval, ...]
    source: str  # where the widths came from, for reports

    def interval(self, metric: Metric, kind: PairKind) -> RatioInterval | None:
        """The interval of `metric` for `kind` pairs; None when no measured kernel had such
        pairs."""
        for interval in self.intervals:
            if interval.metric == metric and interval.kind == kind:
                return interval
        return None


def conformal_half_width(residuals: Iterable[float], level: float) -> float:
    """The split-conformal half width of |residual| at `level`: the ⌈(n + 1)·level⌉-th smallest;
    infinite when there are too few residuals for that level."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"the level must be in (0, 1), got {level}")
    scores = sorted(abs(r) for r in residuals)
    rank = math.ceil((len(scores) + 1) * level)
    if rank > len(scores):
        return math.inf
    return scores[rank - 1]


def weighted_conformal_half_width(groups: Iterable[Sequence[float]], level: float) -> float:
    """The conformal half width when each group (a kernel's residuals) weighs the same, however
    many residuals it has: the smallest |r| whose cumulative weight reaches `level` of the total
    plus one mean weight (the weighted form of the (n + 1) rank; with groups of one residual each
    it is `conformal_half_width`). Infinite when that is out of reach."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"the level must be in (0, 1), got {level}")
    weighted = sorted((abs(r), 1.0 / len(group)) for group in groups if group for r in group)
    if not weighted:
        return math.inf
    total = sum(weight for _, weight in weighted)
    target = level * (total + total / len(weighted))
    reached = 0.0
    for score, weight in weighted:
        reached += weight
        if reached >= target - 1e-12:
            return score
    return math.inf


def log_ratio_residuals(
    predicted: Sequence[float],
    measured: Sequence[float],
    pairs: Iterable[tuple[int, int]],
) -> list[float]:
    """r = log(p_a / p_b) − log(m_a / m_b) for each pair of positions (a, b) whose four values are
    positive."""
    residuals = []
    for a, b in pairs:
        values = (predicted[a], predicted[b], measured[a], measured[b])
        if min(values) <= 0.0:
            continue
        residuals.append(math.log(predicted[a] / predicted[b])
                         - math.log(measured[a] / measured[b]))
    return residuals


def coverage(half_width: float, residuals: Sequence[float]) -> float | None:
    """The share of `residuals` within ±`half_width`; None without residuals."""
    if not residuals:
        return None
    return sum(1 for r in residuals if abs(r) <= half_width) / len(residuals)


def model_error(level: float = DEFAULT_LEVEL) -> ModelError:
    """The shipped widths at `level` (one of `LEVELS`)."""
    return _shipped()[_level_key(level)]


def _level_key(level: float) -> float:
    for known in LEVELS:
        if abs(known - level) < 1e-9:
            return known
    raise ValueError(f"no model error at level {level:g}: the levels measured are "
                     + ", ".join(f"{known:g}" for known in LEVELS))


@cache
def _shipped() -> dict[float, ModelError]:
    text = resources.files("flipflop.model").joinpath("error.json").read_text(encoding="utf-8")
    return parse_model_error(json.loads(text), origin="flipflop/model/error.json")


def parse_model_error(document: object, *, origin: str) -> dict[float, ModelError]:
    """The widths of an `error.json` document, by level."""
    if not isinstance(document, dict) or not isinstance(document.get("intervals"), list):
        raise ModelErrorFormatError(f"{origin}: expected an object with a list 'intervals'")
    source = str(document.get("source", origin))
    by_level: dict[float, list[RatioInterval]] = {}
    for position, entry in enumerate(document["intervals"]):
        where = f"{origin}: intervals[{position}]"
        if not isinstance(entry, dict):
            raise ModelErrorFormatError(f"{where}: expected an object")
        try:
            interval = RatioInterval(
                metric=_metric(entry["metric"], where),
                kind=_kind(entry["kind"], where),
                level=_level_key(float(entry["level"])),
                log_half_width=float(entry["log_half_width"]),
                pairs=int(entry["pairs"]),
                kernels=tuple(str(k) for k in entry["kernels"]),
                held_out_coverage=(None if entry.get("held_out_coverage") is None
                                   else float(entry["held_out_coverage"])),
            )
        except ModelErrorFormatError:
            raise
        except (KeyError, TypeError, ValueError) as error:
            raise ModelErrorFormatError(f"{where}: {error}") from error
        if not interval.log_half_width >= 0.0:
            raise ModelErrorFormatError(f"{where}: log_half_width must be ≥ 0")
        by_level.setdefault(interval.level, []).append(interval)
    return {level: ModelError(level, tuple(found), source)
            for level, found in by_level.items()}


def _metric(value: object, where: str) -> Metric:
    if value == "time" or value == "energy":
        return value
    raise ModelErrorFormatError(f"{where}: metric: expected time or energy, got {value!r}")


def _kind(value: object, where: str) -> PairKind:
    if value == "block" or value == "code":
        return value
    raise ModelErrorFormatError(f"{where}: kind: expected block or code, got {value!r}")
