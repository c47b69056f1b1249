"""The advisor: evaluate every candidate configuration, keep the Pareto front, recommend one.

The recommendation is the lowest predicted energy among configurations within `slack` of the
fastest (docs/model.md, §5 "Recommendation"); it is compared with the current launch and with
NVIDIA's occupancy heuristic (`cudaOccupancyMaxPotentialBlockSize`), the baseline to beat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from flipflop.advice.confidence import energy_interval, same_configuration
from flipflop.advice.coverage import coverage
from flipflop.advice.describe import shape_text
from flipflop.advice.drivers import Driver, energy_drivers
from flipflop.advice.select import (
    Recommendation,
    check_slack,
    choose,
    power_limits_to_sweep,
    select,
    sweep,
)
from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.advice.ties import ConfigurationKey, TieGroup, configuration_key, tie_groups
from flipflop.analysis.work import ThreadWork
from flipflop.constraints import BlockConstraints
from flipflop.fast_init import fast_init
from flipflop.gpu.occupancy import max_potential_block_size
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import Dim3, LaunchShape, ProblemSize, volume
from flipflop.model import (
    Prediction,
    PreparedLaunch,
    UnlaunchableConfig,
    candidate_blocks,
    predict_prepared,
    prepare_launch,
)
from flipflop.model.error import ModelError, RatioInterval
from flipflop.resources import Resources

__all__ = [
    "Advice",
    "Excluded",
    "LaunchSearch",
    "NoLaunchableConfig",
    "Recommendation",  # defined in `flipflop.advice.select`, kept importable from here
    "advise",
]


class NoLaunchableConfig(ValueError):
    """Not one candidate block shape can run with this kernel's resources."""


@dataclass(frozen=True)
class Excluded:
    block: Dim3
    reason: str
    params: tuple[tuple[str, int | float | str], ...] = ()  # the tunables, in a search space


@dataclass(frozen=True)
class Advice:
    predictions: tuple[Prediction, ...]  # every evaluated configuration, `pareto` set
    front: tuple[Prediction, ...]  # the Pareto front, fastest first
    recommendation: Recommendation
    fastest: Prediction
    heuristic: Prediction | None  # NVIDIA's occupancy choice at the default power limit
    current: Prediction | None  # the launch as written, at the default power limit
    recommended_set: tuple[Prediction, ...]  # every configuration within `slack` of the fastest
    drivers: tuple[Driver, ...]  # energy drivers of the current launch (else the baseline)
    excluded: tuple[Excluded, ...]  # candidate shapes that cannot run, with the reason
    slack: float
    ties: tuple[TieGroup, ...] = ()  # configurations that are one answer at the model's precision
    # The configurations worth measuring (`flipflop.advice.shortlist`), at the default limit.
    shortlist: tuple[Prediction, ...] = ()
    # What the kernel's code needs of its block (`flipflop.constraints`), at this launch: only
    # shapes that meet it were candidates.
    constraints: BlockConstraints | None = None
    # The model's error on ratios (`flipflop.model.error`) the recommendation was judged with;
    # None: decisions on the point predictions.
    error: ModelError | None = None
    # Why a configuration predicted to save energy was not recommended: its saving is within
    # the model's error (`flipflop.advice.confidence`); None when nothing was held back.
    held_back: str | None = None

    @property
    def saving_interval(self) -> RatioInterval | None:
        """The interval of the recommendation's energy ratio to the launch as written; None when
        it is the launch as written."""
        if self.current is None or same_configuration(self.current,
                                                      self.recommendation.prediction):
            return None
        return energy_interval(self.error, self.current, self.recommendation.prediction)

    @property
    def kept_as_written(self) -> str | None:
        """Why the launch as written is the only candidate, when the code leaves no other:
        "the code fixes the block at 16×16: …", or FlipFlop's doubt."""
        constraints = self.constraints
        if constraints is None or self.current is None:
            return None
        if constraints.unsure:
            return "FlipFlop is unsure which blocks the code supports: " + "; ".join(
                u.describe() for u in constraints.unsure)
        others = [p for p in self.predictions if p.block != self.current.block]
        ruled_out = [e for e in self.excluded if e.block != self.current.block]
        if not others and ruled_out and all(
                e.reason.startswith("the code needs") for e in ruled_out):
            return constraints.summary()
        return None

    @property
    def search_space_reduction(self) -> float:
        """1 − |shortlist| / |configurations| at the default power limit (docs/model.md, §5
        "Recommended set")."""
        configurations = sum(1 for p in self.predictions if p.power_limit_w is None)
        return 1.0 - len(self.shortlist) / configurations if configurations else 0.0

    def tie_group(self, prediction: Prediction) -> TieGroup | None:
        """The tie group holding the configuration (block, tunables, power limit) of
        `prediction`."""
        return self._tie_index.get(configuration_key(prediction))

    @cached_property
    def _tie_index(self) -> dict[ConfigurationKey, TieGroup]:
        return {configuration_key(p): group for group in self.ties for p in group.members}


@fast_init
@dataclass(frozen=True)
class _Evaluated:
    prepared: PreparedLaunch
    work: ThreadWork


@dataclass(frozen=True)
class LaunchSearch:
    """The advisor with one launch's settings fixed. What may still vary is what the analysis
    had to guess: the problem size, the work per shape (loop trip counts, kernel arguments)
    and the dynamic shared memory; `flipflop.advice.assumptions` asks again with each guess
    changed."""

    profile: GpuProfile
    resources: Resources
    two_d: bool = False
    three_d: bool = False
    current_block: Dim3 | None = None
    blocks: Sequence[Dim3] | None = None
    power_limits: bool = False
    slack: float = 0.05
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE
    block_limit: int | None = None
    constraints: BlockConstraints | None = None
    size_assumed: bool = False
    error: ModelError | None = None

    def advise(self, problem: ProblemSize, work_for: Callable[[LaunchShape], ThreadWork],
               dynamic_smem_bytes: int = 0) -> Advice:
        return advise(
            self.profile, self.resources, work_for, problem,
            two_d=self.two_d, three_d=self.three_d, current_block=self.current_block,
            blocks=self.blocks, power_limits=self.power_limits, slack=self.slack,
            dynamic_smem_bytes=dynamic_smem_bytes, block_limit=self.block_limit,
            shortlist_share=self.shortlist_share, constraints=self.constraints,
            size_assumed=self.size_assumed, error=self.error,
        )


def advise(
    profile: GpuProfile,
    resources: Resources,
    work_for: Callable[[LaunchShape], ThreadWork],
    problem: ProblemSize,
    *,
    two_d: bool = False,
    three_d: bool = False,
    current_block: Dim3 | None = None,
    blocks: Sequence[Dim3] | None = None,
    power_limits: bool = False,
    slack: float = 0.05,
    dynamic_smem_bytes: int = 0,
    block_limit: int | None = None,
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE,
    constraints: BlockConstraints | None = None,
    size_assumed: bool = False,
    error: ModelError | None = None,
) -> Advice:
    """Predict every candidate (block shape × power limit) and recommend one.

    `constraints`: what the kernel's code needs of its block at this launch; shapes that break
    it are excluded with the reason, and when FlipFlop is unsure what the code supports only the
    launch as written is evaluated. `size_assumed`: the problem size is a default, so drivers
    give per-thread figures only. `error`: the model's error on ratios; a saving within it
    keeps the launch as written (`flipflop.advice.confidence`).
    """
    check_slack(slack)
    if block_limit is not None and block_limit < 1:
        raise ValueError(f"block limit must be positive, got {block_limit}")
    if blocks is not None:
        shapes = tuple(dict.fromkeys(blocks))
    else:
        fixed = constraints.fixed_shape() if constraints is not None else None
        include = tuple(b for b in (current_block, fixed) if b is not None)
        shapes = candidate_blocks(profile, two_d=two_d, three_d=three_d, include=include)

    def evaluate(block: Dim3) -> _Evaluated | Excluded:
        refused = _refused(constraints, block, current_block)
        if refused is not None:
            return Excluded(block, refused)
        return evaluate_without_constraints(block)

    def evaluate_without_constraints(block: Dim3) -> _Evaluated | Excluded:
        if block_limit is not None and volume(block) > block_limit:
            return Excluded(block, f"{volume(block)} threads exceed the launch bound {block_limit}")
        shape = LaunchShape(block, problem.grid_for(block), dynamic_smem_bytes)
        work = work_for(shape)
        try:
            return _Evaluated(prepare_launch(profile, resources, work, shape), work)
        except UnlaunchableConfig as refusal:
            return Excluded(block, str(refusal))

    outcomes = {block: evaluate(block) for block in shapes}
    if problem.has_fixed_axis:
        outcomes = _conserving_work(outcomes, problem, current_block, work_for,
                                    dynamic_smem_bytes)
    launchable = {b: o for b, o in outcomes.items() if isinstance(o, _Evaluated)}
    if not launchable and constraints is not None and current_block is not None:
        # The code's requirements leave nothing (they contradict the launch as written): the
        # launch itself is still predicted and kept, and the conflict is reported.
        kept = evaluate_without_constraints(current_block)
        if isinstance(kept, _Evaluated):
            launchable = {current_block: kept}
            outcomes[current_block] = kept
    excluded = tuple(o for o in outcomes.values() if isinstance(o, Excluded))
    if not launchable:
        reasons = "; ".join(f"{shape_text(e.block)}: {e.reason}" for e in excluded[:3])
        raise NoLaunchableConfig(f"no candidate block shape can launch ({reasons})")

    limits = power_limits_to_sweep(profile, power_limits)
    selection = select(
        [p for evaluated in launchable.values() for p in sweep(evaluated.prepared, limits)],
        slack,
    )
    predictions = selection.predictions
    default_limit = {p.block: p for p in predictions if p.power_limit_w is None}

    heuristic = _heuristic(
        profile, resources, work_for, problem, dynamic_smem_bytes, block_limit, default_limit
    )
    current = _at_default_limit(
        profile, resources, work_for, problem, dynamic_smem_bytes, current_block, default_limit
    )
    # Shapes of one kernel differ in their block alone.
    choice = choose(selection, current, heuristic, error=error,
                    shortlist_share=shortlist_share, differ_in="block")
    subject_block = next(
        (p.block for p in (current, heuristic) if p is not None and p.block in launchable),
        choice.chosen.block,
    )
    subject = launchable[subject_block]
    drivers = energy_drivers(profile, resources, subject.work, default_limit[subject_block],
                             size_assumed)
    recommendation = choice.recommendation
    note = _constraint_note(constraints, excluded, launchable, current_block)
    if note is not None:
        recommendation = replace(recommendation, reasons=(*recommendation.reasons, note))
    return Advice(
        predictions=predictions,
        front=selection.front,
        recommendation=recommendation,
        fastest=selection.fastest,
        heuristic=heuristic,
        current=current,
        recommended_set=selection.within,
        drivers=drivers,
        excluded=excluded,
        slack=slack,
        ties=tie_groups(predictions),
        shortlist=choice.shortlist,
        constraints=constraints,
        error=error,
        held_back=choice.held_back,
    )


def _constraint_note(
    constraints: BlockConstraints | None,
    excluded: tuple[Excluded, ...],
    launchable: dict[Dim3, _Evaluated],
    current_block: Dim3 | None,
) -> str | None:
    """The sentence that says how the code's needs shaped the advice."""
    if constraints is None:
        return None
    by_code = sum(1 for e in excluded if e.reason.startswith(("the code needs", "FlipFlop is")))
    if constraints.unsure:
        doubts = "; ".join(u.describe() for u in constraints.unsure)
        if current_block is not None:
            return f"The launch as written is kept: FlipFlop is unsure which blocks the code " \
                   f"supports ({doubts})."
        return (f"FlipFlop is unsure which blocks the code supports ({doubts}): check this "
                "block against the code, or state what it needs with `// flipflop: block=…`.")
    if not by_code:
        return None
    others = [e for e in excluded if e.block != current_block]
    if current_block is not None and set(launchable) <= {current_block} and all(
            e.reason.startswith("the code needs") for e in others):
        return f"The launch as written is kept: {constraints.summary()}."
    return f"Only block shapes the code supports were considered ({by_code} ruled out): " \
           f"{constraints.summary()}."


def _refused(constraints: BlockConstraints | None, block: Dim3,
             current_block: Dim3 | None) -> str | None:
    """Why the kernel's code rules `block` out, if it does."""
    if constraints is None:
        return None
    broken = constraints.violations(block)
    if broken:
        return f"the code needs {broken[0].describe()}"
    if constraints.unsure and current_block is not None and block != current_block:
        return f"FlipFlop is unsure the code supports it: {constraints.unsure[0].describe()}"
    return None


# Shapes whose coverage differs from the reference by more than this do a different job.
_COVERAGE_TOLERANCE = 0.02


def _conserving_work(
    outcomes: dict[Dim3, _Evaluated | Excluded],
    problem: ProblemSize,
    current_block: Dim3 | None,
    work_for: Callable[[LaunchShape], ThreadWork],
    dynamic_smem_bytes: int,
) -> dict[Dim3, _Evaluated | Excluded]:
    """With a fixed grid, keep only the shapes that write the same output and read all of the
    input of the launch as written (`flipflop.advice.coverage`).

    Fewer threads than a guard's bound skip elements (less output, or less input read); more
    threads than the data hold write past it, which only counts when every axis is fixed
    (covered axes round up to whole blocks). The reference is the current launch, else the
    shape that writes the most.
    """
    covered = {
        block: coverage(o.work, o.prepared.shape)
        for block, o in outcomes.items()
        if isinstance(o, _Evaluated)
    }
    if not covered:
        return outcomes
    if current_block is not None:
        shape = LaunchShape(current_block, problem.grid_for(current_block), dynamic_smem_bytes)
        reference = coverage(work_for(shape), shape)
    else:
        reference = max(covered.values(), key=lambda c: (c.written_bytes, c.read_bytes))
    if reference.written_bytes <= 0.0:
        return outcomes
    low, high = 1.0 - _COVERAGE_TOLERANCE, 1.0 + _COVERAGE_TOLERANCE
    kept: dict[Dim3, _Evaluated | Excluded] = {}
    for block, outcome in outcomes.items():
        found = covered.get(block)
        reason = None
        if found is not None:
            written = found.written_bytes / reference.written_bytes
            read = found.read_bytes / reference.read_bytes if reference.read_bytes > 0 else 1.0
            if written < low or (problem.grid is not None and written > high):
                reason = (f"with the grid fixed, {volume(block)} threads per block write "
                          f"{written:.0%} of the output of the launch as written")
            elif read < low:
                reason = (f"with the grid fixed, {volume(block)} threads per block read "
                          f"{read:.0%} of the input of the launch as written")
        kept[block] = Excluded(block, reason) if reason is not None else outcome
    return kept


def _predict_at(
    profile: GpuProfile,
    resources: Resources,
    work_for: Callable[[LaunchShape], ThreadWork],
    problem: ProblemSize,
    dynamic_smem_bytes: int,
    block: Dim3,
) -> Prediction | None:
    shape = LaunchShape(block, problem.grid_for(block), dynamic_smem_bytes)
    try:
        prepared = prepare_launch(profile, resources, work_for(shape), shape)
    except UnlaunchableConfig:
        return None
    return predict_prepared(profile, prepared)


def _heuristic(
    profile: GpuProfile,
    resources: Resources,
    work_for: Callable[[LaunchShape], ThreadWork],
    problem: ProblemSize,
    dynamic_smem_bytes: int,
    block_limit: int | None,
    evaluated: dict[Dim3, Prediction],
) -> Prediction | None:
    """The block NVIDIA's occupancy heuristic picks, as a 1-D block of that many threads."""
    size, _ = max_potential_block_size(
        profile,
        registers=resources.registers,
        static_smem_bytes=resources.static_smem_bytes,
        dynamic_smem_bytes=dynamic_smem_bytes,
        block_size_limit=block_limit or 0,
    )
    if size <= 0:
        return None
    return _at_default_limit(
        profile, resources, work_for, problem, dynamic_smem_bytes, (size, 1, 1), evaluated
    )


def _at_default_limit(
    profile: GpuProfile,
    resources: Resources,
    work_for: Callable[[LaunchShape], ThreadWork],
    problem: ProblemSize,
    dynamic_smem_bytes: int,
    block: Dim3 | None,
    evaluated: dict[Dim3, Prediction],
) -> Prediction | None:
    """The prediction at `block` and the default power limit, reusing the sweep's when present."""
    if block is None:
        return None
    if block in evaluated:
        return evaluated[block]
    return _predict_at(profile, resources, work_for, problem, dynamic_smem_bytes, block)
