"""Advice over a search space of compile-time tunables: every configuration its own variant.

Each configuration brings its own resources (ptxas) and work (features of its PTX), and its own
block and grid (Kernel Tuner's launch semantics); the Pareto front, the recommendation under the
slowdown budget and the comparison with the current configuration are the same as for block
shapes of one kernel (`flipflop.advice.advise`).

NVIDIA's occupancy heuristic chooses only a block size. Its pick in a space is the block it
would choose for the current values of the other tunables: among the configurations that share
them, the most resident threads per SM, ties to the larger block (as
`cudaOccupancyMaxPotentialBlockSize`); with no current configuration, over the whole space.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from flipflop.advice.advise import Advice, Excluded, NoLaunchableConfig
from flipflop.advice.drivers import energy_drivers
from flipflop.advice.select import check_slack, choose, power_limits_to_sweep, select, sweep
from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.advice.ties import tie_groups
from flipflop.analysis.work import ThreadWork
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import LaunchShape
from flipflop.model import (
    DEFAULT_SETTINGS,
    GpuSettings,
    Prediction,
    PreparedLaunch,
    UnlaunchableConfig,
    at_memory_clock,
    prepare_launch,
)
from flipflop.model.error import ModelError
from flipflop.resources import Resources

ParamValue = int | float | str
Params = tuple[tuple[str, ParamValue], ...]


@dataclass(frozen=True)
class SpaceCandidate:
    """One configuration of the space, compiled and analysed."""

    params: Params
    shape: LaunchShape
    resources: Resources
    work: ThreadWork
    # Clocks and power limit the configuration sets on the GPU (its nvml_* tunables).
    settings: GpuSettings = DEFAULT_SETTINGS


def advise_space(
    profile: GpuProfile,
    candidates: Sequence[SpaceCandidate],
    *,
    excluded: Sequence[Excluded] = (),
    current: Params | None = None,
    block_names: Collection[str] = (),
    power_limits: bool = False,
    slack: float = 0.05,
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE,
    error: ModelError | None = None,
) -> Advice:
    """Predict every configuration (× power limit) and recommend one; with the model's
    `error`, a saving within it keeps the `current` configuration."""
    check_slack(slack)
    prepared: dict[Params, tuple[SpaceCandidate, PreparedLaunch]] = {}
    dropped = list(excluded)
    for candidate in candidates:
        try:
            launch = prepare_launch(at_memory_clock(profile, candidate.settings),
                                    candidate.resources, candidate.work, candidate.shape)
        except UnlaunchableConfig as refusal:
            dropped.append(Excluded(candidate.shape.block, str(refusal), candidate.params))
            continue
        prepared.setdefault(candidate.params, (candidate, launch))
    if not prepared:
        reasons = "; ".join(f"{_describe(e.params)}: {e.reason}" for e in dropped[:3])
        raise NoLaunchableConfig(f"no configuration of the space can launch ({reasons})")

    limits = power_limits_to_sweep(profile, power_limits)
    selection = select(
        [
            replace(prediction, params=params)
            for params, (candidate, launch) in prepared.items()
            for prediction in sweep(launch, limits, candidate.settings)
        ],
        slack,
    )
    predictions = selection.predictions
    default_limit = {p.params: p for p in predictions if p.power_limit_w is None}

    current_prediction = default_limit.get(current) if current is not None else None
    heuristic = heuristic_pick(list(default_limit.values()), current, block_names)
    # Configurations of a space differ in their code and GPU settings, not the block alone.
    choice = choose(selection, current_prediction, heuristic, error=error,
                    shortlist_share=shortlist_share, differ_in="code")
    subject = current_prediction or heuristic or choice.chosen
    subject_candidate = prepared[subject.params][0]
    drivers = energy_drivers(
        profile, subject_candidate.resources, subject_candidate.work, default_limit[subject.params]
    )
    return Advice(
        predictions=predictions,
        front=selection.front,
        recommendation=choice.recommendation,
        fastest=selection.fastest,
        heuristic=heuristic,
        current=current_prediction,
        recommended_set=selection.within,
        drivers=drivers,
        excluded=tuple(dropped),
        slack=slack,
        ties=tie_groups(predictions),
        shortlist=choice.shortlist,
        error=error,
        held_back=choice.held_back,
    )


def heuristic_pick(
    predictions: Sequence[Prediction], current: Params | None, block_names: Collection[str]
) -> Prediction | None:
    """The occupancy heuristic's configuration (see the module docstring)."""
    family = list(predictions)
    if current is not None:
        others = _without(current, block_names)
        family = [p for p in predictions if _without(p.params, block_names) == others] or family
    if not family:
        return None
    return min(
        enumerate(family),
        key=lambda item: (
            -item[1].active_blocks_per_sm * item[1].launch.shape.threads_per_block,
            -item[1].launch.shape.threads_per_block,
            item[0],
        ),
    )[1]


def _without(params: Params, names: Collection[str]) -> Params:
    return tuple((name, value) for name, value in params if name not in names)


def _describe(params: Params) -> str:
    return ", ".join(f"{name}={value}" for name, value in params) or "default"
