"""The selector shared by the advisor of one launch (`flipflop.advice.advise`) and of a search
space (`flipflop.advice.space`): sweep the power limits, flag the Pareto front, choose.

The choice is the lowest predicted energy among the configurations within `slack` of the
fastest (docs/model.md, §5 "Recommendation"). A tie at the model's precision keeps the launch as
written, and so does a saving within the model's error (`flipflop.advice.confidence`). Both
advisors differ only in how they find their configurations and their baseline; what they do
with the predictions is here, once, so a change to the rule reaches both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from flipflop.advice.confidence import held_back
from flipflop.advice.describe import describe_configuration
from flipflop.advice.pareto import pareto_flags
from flipflop.advice.shortlist import shortlist
from flipflop.advice.ties import TIE_TOLERANCE, values_tie
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import Dim3
from flipflop.model import (
    DEFAULT_SETTINGS,
    GpuSettings,
    Prediction,
    PreparedLaunch,
    power_limit_candidates,
    predict_power_limits,
)
from flipflop.model.error import ModelError, PairKind
from flipflop.units import format_time

# Power limits swept with `power_limits=True` (`analyze --power-limits`; docs/model.md §4).
POWER_LIMIT_COUNT = 10


@dataclass(frozen=True)
class Recommendation:
    block: Dim3
    power_limit_w: float | None
    time_s: float
    power_w: float
    energy_j: float
    energy_saving_vs_current: float | None  # 1 − E_rec / E_current
    energy_saving_vs_occupancy_heuristic: float | None  # 1 − E_rec / E_heuristic
    slowdown_vs_fastest: float  # T_rec / T_fastest − 1
    reasons: tuple[str, ...]
    prediction: Prediction


@dataclass(frozen=True)
class Selection:
    """Every prediction, Pareto-flagged, and where the choice is made among them."""

    predictions: tuple[Prediction, ...]  # every configuration × power limit, `pareto` set
    front: tuple[Prediction, ...]  # the Pareto front, fastest first
    fastest: Prediction
    within: tuple[Prediction, ...]  # every configuration within `slack` of the fastest
    lowest: Prediction  # the lowest predicted energy among `within`
    slack: float


@dataclass(frozen=True)
class Choice:
    """The configuration recommended, why, and which to measure."""

    chosen: Prediction
    recommendation: Recommendation
    shortlist: tuple[Prediction, ...]  # the configurations worth measuring
    # Why a configuration predicted to save energy was not recommended; None: nothing was.
    held_back: str | None


def check_slack(slack: float) -> None:
    """ValueError for a negative slowdown budget; the advisors check it before any work."""
    if slack < 0.0:
        raise ValueError(f"slack must be a non-negative fraction, got {slack}")


def power_limits_to_sweep(profile: GpuProfile, power_limits: bool) -> tuple[float | None, ...]:
    """The default limit (None) and, with `power_limits`, `POWER_LIMIT_COUNT` settable limits
    below it (the board's TDP is the default already)."""
    limits: tuple[float | None, ...] = (None,)
    if power_limits:
        swept = power_limit_candidates(profile, POWER_LIMIT_COUNT)
        limits += tuple(limit for limit in swept if limit != profile.tdp_w)
    return limits


def sweep(
    launch: PreparedLaunch,
    limits: Sequence[float | None],
    settings: GpuSettings = DEFAULT_SETTINGS,
) -> tuple[Prediction, ...]:
    """The predictions of one prepared launch at each of `limits`. A configuration that sets
    its own power limit is not swept over others: that limit is part of the configuration."""
    own = (None,) if settings.power_limit_w is not None else limits
    return predict_power_limits(launch.profile, launch, own, settings)


def select(raw: Sequence[Prediction], slack: float) -> Selection:
    """Flag the Pareto front over (time, energy) and find the fastest, the configurations within
    `slack` of it and the lowest in energy among those (ties: the faster)."""
    check_slack(slack)
    flags = pareto_flags([(p.time_s, p.energy_j) for p in raw])
    predictions = tuple(
        replace(p, pareto=True) if flag else p for p, flag in zip(raw, flags, strict=True)
    )
    fastest = min(predictions, key=lambda p: (p.time_s, p.energy_j))
    within = tuple(p for p in predictions if p.time_s <= fastest.time_s * (1.0 + slack))
    lowest = min(within, key=lambda p: (p.energy_j, p.time_s))
    front = tuple(sorted((p for p in predictions if p.pareto), key=lambda p: p.time_s))
    return Selection(predictions, front, fastest, within, lowest, slack)


def choose(
    selection: Selection,
    current: Prediction | None,
    heuristic: Prediction | None,
    *,
    error: ModelError | None,
    shortlist_share: float,
    differ_in: PairKind,
) -> Choice:
    """Recommend one configuration of `selection` over the launch as written (`current`) and
    the occupancy heuristic's pick. `differ_in`: what the configurations differ in ("block":
    shapes of one kernel, "code": variants), which model error the shortlist is cut with."""
    chosen = _settle(selection.lowest, selection.within, current)
    kept_back = held_back(error, current, chosen)
    if kept_back is not None and current is not None:
        chosen = current
    recommendation = _recommend(chosen, selection.fastest, selection.within, heuristic, current,
                                selection.slack, selection.lowest)
    if kept_back is not None:
        recommendation = _kept_back(recommendation, kept_back)
    worth_measuring = shortlist(selection.predictions, chosen, shortlist_share,
                                error.interval("time", differ_in) if error else None)
    return Choice(chosen, recommendation, worth_measuring, kept_back)


def _settle(
    lowest: Prediction,
    within: tuple[Prediction, ...],
    current: Prediction | None,
) -> Prediction:
    if current is None:
        return lowest
    # A tie keeps the launch as written rather than asking for an edit that changes nothing
    # measurable.
    same = [
        p for p in within
        if p.block == current.block and p.params == current.params and p.power_limit_w is None
    ]
    if same and values_tie(same[0].energy_j, lowest.energy_j):
        return same[0]
    return lowest


def _kept_back(recommendation: Recommendation, why: str) -> Recommendation:
    """The recommendation of the launch as written, led by why the better-predicted
    configuration was held back."""
    return replace(recommendation, reasons=(why, *recommendation.reasons[1:]))


def _saving(chosen: Prediction, other: Prediction | None) -> float | None:
    if other is None or other.energy_j <= 0.0:
        return None
    return 1.0 - chosen.energy_j / other.energy_j


def _recommend(
    chosen: Prediction,
    fastest: Prediction,
    within: tuple[Prediction, ...],
    heuristic: Prediction | None,
    current: Prediction | None,
    slack: float,
    lowest: Prediction | None = None,
) -> Recommendation:
    slowdown = chosen.time_s / fastest.time_s - 1.0
    vs_heuristic = _saving(chosen, heuristic)
    vs_current = _saving(chosen, current)
    reasons = [
        f"Lowest predicted energy among the {len(within)} configurations within {slack:.0%} of "
        f"the fastest ({describe_configuration(fastest)}, {format_time(fastest.time_s)})."
        if chosen is not fastest
        else f"The fastest configuration is also the lowest in energy within {slack:.0%} of it.",
        f"{chosen.bound.capitalize()}-bound at {chosen.occupancy:.0%} occupancy "
        f"({_count(chosen.active_blocks_per_sm, 'block')}/SM, limited by {chosen.limiter}), "
        f"{_count(chosen.waves, 'wave')}.",
    ]
    if lowest is not None and lowest is not chosen:
        reasons[0] = (
            f"Within {TIE_TOLERANCE:.0%} of the lowest predicted energy "
            f"({describe_configuration(lowest)}), a tie at the model's precision, so the launch as"
            " written is kept."
        )
    if chosen.power_limit_w is not None:
        reasons.append(
            f"A {chosen.power_limit_w:.0f} W power limit lowers the clock to "
            f"{chosen.clock_mhz:.0f} MHz and the power to {chosen.power_w:.0f} W for a "
            f"{slowdown:.1%} slowdown."
        )
    if heuristic is not None and vs_heuristic is not None:
        reasons.append(
            f"{_relative(vs_heuristic)} NVIDIA's occupancy heuristic "
            f"({describe_configuration(heuristic)}, {heuristic.occupancy:.0%} occupancy)."
        )
    if current is not None and vs_current is not None:
        reasons.append(
            f"{_relative(vs_current)} the current {'configuration' if current.params else 'launch'}"
            f" ({describe_configuration(current)})."
        )
    return Recommendation(
        block=chosen.block,
        power_limit_w=chosen.power_limit_w,
        time_s=chosen.time_s,
        power_w=chosen.power_w,
        energy_j=chosen.energy_j,
        energy_saving_vs_current=vs_current,
        energy_saving_vs_occupancy_heuristic=vs_heuristic,
        slowdown_vs_fastest=slowdown,
        reasons=tuple(reasons),
        prediction=chosen,
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _relative(saving: float) -> str:
    if abs(saving) < 0.005:
        return "Same predicted energy as"
    if saving > 0.0:
        return f"{saving:.0%} less energy than"
    return f"{-saving:.0%} more energy than"
