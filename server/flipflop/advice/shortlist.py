"""The shortlist: the configurations worth measuring, as a share of the space.

A static model resolves configurations that differ in what it costs, not ones within its own
error of each other: on the measured search spaces (docs/validation.md) the measured fastest
configuration is usually among the predicted fastest few percent of the space, yet rarely
first. Static pruning then measurement (Kernel Tuner on the shortlist) closes that gap:
the shortlist is the predicted fastest `share` of the configurations at the default power limit,
at least one, and always holds the recommendation. Ties in predicted time go to the lower
predicted energy, as the recommendation's rule does.

With the model's error on time ratios (`flipflop.model.error`), the shortlist also leaves out
every configuration the model can tell apart from the predicted fastest: one whose interval of
its time ratio to the fastest lies wholly above 1 (log(t / t_fastest) > q) is slower beyond the
model's error, so measuring it is not needed to find the best. The share stays the upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from flipflop.model import Prediction
from flipflop.model.error import RatioInterval

# The share of the space handed to measurement by default: the largest our goals allow (a
# recommended set of at most 10% of the space, docs/validation.md), near the FlipFlop paper's
# 93.4% search-space reduction (a 6.6% set).
DEFAULT_SHORTLIST_SHARE = 0.10

_Ranked = TypeVar("_Ranked")


def shortlist_size(configurations: int, share: float) -> int:
    """How many of `configurations` a shortlist of `share` keeps: at least one, at most all."""
    if not 0.0 < share <= 1.0:
        raise ValueError(f"the shortlist share must be in (0, 1], got {share}")
    if configurations <= 0:
        return 0
    return min(configurations, max(1, math.ceil(share * configurations - 1e-9)))


def fastest_share(
    items: Sequence[_Ranked],
    time_s: Sequence[float],
    energy_j: Sequence[float],
    share: float,
    keep: _Ranked | None = None,
) -> list[_Ranked]:
    """The `share` of `items` with the lowest predicted time (ties: lower energy), in that
    order; `time_s` and `energy_j` are the items' predictions, position by position. `keep`,
    one of the items, takes the last place when it is not among them."""
    order = sorted(range(len(items)), key=lambda i: (time_s[i], energy_j[i], i))
    kept = [items[i] for i in order[: shortlist_size(len(items), share)]]
    if keep is not None and kept and keep not in kept:
        kept[-1] = keep
    return kept


def shortlist(
    predictions: Sequence[Prediction], recommended: Prediction, share: float,
    time_error: RatioInterval | None = None,
) -> tuple[Prediction, ...]:
    """The configurations to measure among `predictions` (module docstring): the predicted
    fastest `share` of those at the default power limit, with the recommendation in place of
    the last one when it is not among them; with `time_error`, only those within it of the
    fastest (and the recommendation)."""
    default_limit = [p for p in predictions if p.power_limit_w is None]
    pick = next((p for p in default_limit if p.block == recommended.block
                 and p.params == recommended.params), None)
    kept = fastest_share(default_limit, [p.time_s for p in default_limit],
                         [p.energy_j for p in default_limit], share, pick)
    if time_error is not None and kept:
        # Fastest first, so what is left is the part of the share inside the model's error.
        fastest = min(p.time_s for p in default_limit)
        kept = [p for p in kept
                if p is pick or within_error(p.time_s, fastest, time_error.log_half_width)]
    return tuple(kept)


def within_error(time_s: float, fastest_s: float, log_half_width: float) -> bool:
    """Whether a configuration's interval of its time ratio to the fastest reaches 1."""
    return fastest_s > 0.0 and math.log(time_s / fastest_s) <= log_half_width
