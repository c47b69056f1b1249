"""When two predictions are the same answer: the model's tie tolerance, used by every output.

The model's own error is far larger than 1%, so configurations whose predicted time and energy
agree that closely are one choice to a reader, not a ranking. The advisor keeps the launch as
written when it ties with the lowest energy; the table, the hover and the chart collapse tied
shapes into one row with their count and range.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flipflop.fast_init import fast_init
from flipflop.launch import Dim3
from flipflop.model.predict import Prediction

ConfigurationKey = tuple[Dim3, tuple[tuple[str, "int | float | str"], ...], "float | None"]

TIE_TOLERANCE = 0.01
"""Relative difference at or below which two predicted values tie (our choice: well inside the
model's own error, see docs/model.md)."""


def values_tie(a: float, b: float) -> bool:
    """Whether two non-negative predicted values agree within `TIE_TOLERANCE` of the smaller."""
    low, high = (a, b) if a <= b else (b, a)
    return high <= low * (1.0 + TIE_TOLERANCE)


def configuration_key(prediction: Prediction) -> ConfigurationKey:
    """What tells configurations apart: block, compile-time tunables, power limit."""
    return (prediction.block, prediction.params, prediction.power_limit_w)


def predictions_tie(a: Prediction, b: Prediction) -> bool:
    """Same power limit, and both time and energy tie."""
    return (
        a.power_limit_w == b.power_limit_w
        and values_tie(a.time_s, b.time_s)
        and values_tie(a.energy_j, b.energy_j)
    )


@fast_init
@dataclass(frozen=True)
class TieGroup:
    """Two or more configurations that tie with the group's fastest member (its first)."""

    index: int
    members: tuple[Prediction, ...]  # fastest first

    @property
    def anchor(self) -> Prediction:
        return self.members[0]


def tie_groups(predictions: Sequence[Prediction]) -> tuple[TieGroup, ...]:
    """Every group of tied configurations, fastest group first.

    Each group is anchored on the fastest configuration not yet grouped and takes every other
    ungrouped one that ties with it, so a chain of near neighbours cannot drift into one group
    that spans more than the tolerance from its anchor.
    """
    order = sorted(predictions, key=lambda p: (p.time_s, p.energy_j))
    # Only predictions under one power limit can tie: each limit is grouped on its own, in the
    # order of the whole, and the groups are put back in the order of their anchors.
    by_limit: dict[float | None, list[int]] = {}
    for position, prediction in enumerate(order):
        by_limit.setdefault(prediction.power_limit_w, []).append(position)
    anchored: list[tuple[int, tuple[Prediction, ...]]] = []
    for positions in by_limit.values():
        taken = [False] * len(positions)
        for at, position in enumerate(positions):
            if taken[at]:
                continue
            anchor = order[position]
            members = [anchor]
            ceiling = anchor.time_s * (1.0 + TIE_TOLERANCE)
            for later in range(at + 1, len(positions)):
                other = order[positions[later]]
                if other.time_s > ceiling:
                    break  # sorted by time: nothing later ties on time
                if not taken[later] and values_tie(anchor.energy_j, other.energy_j):
                    members.append(other)
                    taken[later] = True
            if len(members) > 1:
                anchored.append((position, tuple(members)))
    anchored.sort(key=lambda item: item[0])
    return tuple(TieGroup(index, members) for index, (_, members) in enumerate(anchored))
