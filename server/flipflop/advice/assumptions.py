"""Which launch inputs were guessed, and how much the advice rests on each guess.

Static analysis cannot know everything the numbers depend on: how big the problem is when the
source does not say, a kernel argument that bounds a loop, a loop whose bound is read from
memory, dynamic shared memory sized at run time. For each such guess the advice is computed
again with the guess 4× larger and 4× smaller (the model is cheap to re-evaluate); the guess
that moves the recommendation or the saving the most comes first, with the `// flipflop:`
annotation that would replace it by the real value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from flipflop.advice.advise import Advice, LaunchSearch, NoLaunchableConfig
from flipflop.advice.select import Recommendation
from flipflop.advice.ties import configuration_key, values_tie
from flipflop.analysis import KernelFeatures
from flipflop.analysis import expr as ex
from flipflop.analysis.spelling import source_spelling
from flipflop.analysis.work import ThreadWork
from flipflop.launch import Dim3, LaunchShape, ProblemSize
from flipflop.model.predict import Prediction
from flipflop.source.annotations import RESERVED_KEYS
from flipflop.source.model import Kernel as SourceKernel
from flipflop.source.model import LaunchSite
from flipflop.space.problem import LaunchInputs, LaunchRequest, launch_inputs
from flipflop.units import format_shape

GuessKind = Literal["problem size", "parameter", "trip count", "dynamic shared memory"]

# How much larger and smaller a guess is tried: far enough to cross a wave or an occupancy
# step, near enough to be a plausible error of the guess.
FACTOR = 4.0
# Dynamic shared memory that the source sizes at run time is taken as 0 B; these are the sizes
# tried instead (a small reduction buffer, a tile), since 4× of nothing is nothing.
SMEM_TRIALS = (4 * 1024, 16 * 1024)


@dataclass(frozen=True)
class Variation:
    """One alternative value of a guess, as a change to the analysis inputs."""

    label: str  # "4× larger"
    default_problem: ProblemSize | None = None  # problem size: the one assumed instead
    loops: tuple[int, ...] = ()  # trip-count factors whose assumed value is scaled
    scale: float = 1.0
    dynamic_smem_bytes: int | None = None

    def features(self, features: KernelFeatures) -> KernelFeatures:
        """The kernel's features with this variation's loop guesses scaled."""
        if not self.loops:
            return features
        factors = list(features.factors)
        for index in self.loops:
            factor = factors[index]
            if factor.assumed:  # the bound is unreadable: the count itself is the guess
                guessed = ex.const(factor.default * self.scale)
                factors[index] = replace(factor, expression=guessed)
            else:  # a parameter the bound needs is missing: its stand-in is the guess
                factors[index] = replace(factor, default=factor.default * self.scale)
        return replace(features, factors=tuple(factors))


@dataclass(frozen=True)
class Guess:
    kind: GuessKind
    name: str  # what a reader calls it: "problem size", "columns", "dynamic shared memory"
    assumed: str  # what was assumed, e.g. "1048576 threads (the default)"
    annotation: str | None  # the `// flipflop:` comment that pins it; None when none does
    lines: tuple[int, ...]  # source lines it affects
    variations: tuple[Variation, ...]


@dataclass(frozen=True)
class Outcome:
    """The advice under one variation of a guess."""

    label: str
    recommendation: Recommendation | None  # None: no configuration can launch then
    pick_regret: float | None  # extra energy of today's pick then; None: it cannot launch then
    saving_shift: float | None  # change of the saving the report leads with
    moves: bool  # another configuration would be recommended (not one that ties)

    @property
    def weight(self) -> float:
        if self.recommendation is None or self.pick_regret is None:
            return 1.0
        # A saving that moves by less than half a percentage point reads as the same.
        shift = abs(self.saving_shift or 0.0)
        return max(self.pick_regret if self.moves else 0.0, shift if shift >= 0.005 else 0.0)


@dataclass(frozen=True)
class Influence:
    guess: Guess
    outcomes: tuple[Outcome, ...]
    baseline: Recommendation

    @property
    def score(self) -> float:
        return max((outcome.weight for outcome in self.outcomes), default=0.0)

    @property
    def moves_recommendation(self) -> bool:
        return any(outcome.moves for outcome in self.outcomes)

    def decisive(self, min_regret: float) -> Outcome | None:
        """The variation that moves the recommendation most, when today's pick would then cost
        at least `min_regret` more energy (or could not launch); None when none does."""
        moving = [
            outcome for outcome in self.outcomes
            if outcome.moves and (outcome.pick_regret is None or outcome.pick_regret >= min_regret)
        ]  # fmt: skip
        return max(moving, key=lambda outcome: outcome.weight, default=None)

    def effects(self) -> str:
        """"4× larger: block 512 instead (block 256 would use 9% more energy); 4× smaller: no
        change"."""
        return "; ".join(_effect(outcome, self.baseline) for outcome in self.outcomes)

    def describe(self) -> str:
        """One line: the guess, what its variations do, and how to pin it."""
        pin = (
            f" Pin it with `{self.guess.annotation}` above the launch."
            if self.guess.annotation
            else " No annotation sets it."
        )
        return f"{self.guess.name} ({self.guess.assumed}) — {self.effects()}.{pin}"


def _then(pick_regret: float) -> str:
    """What today's pick would cost under the variation, against the new recommendation: more
    energy, or less but no longer within the slowdown budget (it lost its place on time)."""
    if pick_regret >= 0.005:
        return f"would use {pick_regret:.0%} more energy"
    if pick_regret <= -0.005:
        return f"would use {-pick_regret:.0%} less energy but be slower than the budget allows"
    return "would use the same energy"


def _effect(outcome: Outcome, baseline: Recommendation) -> str:
    label = outcome.label
    rec = outcome.recommendation
    if rec is None:
        return f"{label}: no block shape can launch"
    picked = _config(baseline.prediction)
    if outcome.moves:
        if outcome.pick_regret is None:
            return f"{label}: {_config(rec.prediction)} instead ({picked} cannot launch then)"
        return f"{label}: {_config(rec.prediction)} instead ({picked} {_then(outcome.pick_regret)})"
    before, after, against = _savings(baseline, rec)
    if f"{after:.0%}" != f"{before:.0%}":
        return f"{label}: same pick, saving vs {against} {after:.0%} instead of {before:.0%}"
    return f"{label}: no change"


def _config(prediction: Prediction) -> str:
    limit = "" if prediction.power_limit_w is None else f" at {prediction.power_limit_w:.0f} W"
    return f"block {format_shape(prediction.block)}{limit}"


def _savings(baseline: Recommendation, other: Recommendation) -> tuple[float, float, str]:
    """(saving before, after, against what): vs the current launch when there is one."""
    if baseline.energy_saving_vs_current is not None and other.energy_saving_vs_current is not None:
        return baseline.energy_saving_vs_current, other.energy_saving_vs_current, "current"
    before = baseline.energy_saving_vs_occupancy_heuristic or 0.0
    after = other.energy_saving_vs_occupancy_heuristic or 0.0
    return before, after, "NVIDIA's heuristic"


# --------------------------------------------------------------------------- the whole step


def launch_assumptions(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    inputs: LaunchInputs,
    request: LaunchRequest,
    file_constants: Mapping[str, int],
    advice: Advice,
    search: LaunchSearch,
) -> tuple[Influence, ...]:
    """The guessed inputs of one launch, ranked by how much `advice` rests on them; `search`
    is the advisor that gave `advice`, asked again with each guess changed."""
    params = dict(inputs.params)
    shape = advice.recommendation.prediction.launch.shape
    guesses = find_guesses(
        features, source_kernel, site,
        origin=inputs.origin, problem=inputs.problem, params=params,
        dynamic_smem_given=_smem_given(source_kernel, site, request), shape=shape,
    )  # fmt: skip

    def evaluate(variation: Variation) -> Advice | None:
        varied = inputs
        if variation.default_problem is not None:
            varied = launch_inputs(
                features, source_kernel, site, request, file_constants, variation.default_problem
            )
        varied_features = variation.features(features)
        varied_params = dict(varied.params)
        smem = variation.dynamic_smem_bytes
        counted: dict[LaunchShape, ThreadWork] = {}

        def work_for(launch: LaunchShape) -> ThreadWork:
            if launch not in counted:
                counted[launch] = varied_features.work(launch, varied_params)
            return counted[launch]

        try:
            return search.advise(
                varied.problem, work_for, inputs.dynamic_smem_bytes if smem is None else smem
            )
        except NoLaunchableConfig:
            return None

    return rank_guesses(guesses, advice, evaluate)


def _smem_given(
    source_kernel: SourceKernel | None, site: LaunchSite | None, request: LaunchRequest
) -> bool:
    if request.dynamic_smem_bytes is not None:
        return True
    notes = (site.annotation if site else None, source_kernel.annotation if source_kernel else None)
    return any(note is not None and note.dynamic_smem_bytes is not None for note in notes)


# --------------------------------------------------------------------------- finding guesses


def find_guesses(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    site: LaunchSite | None,
    *,
    origin: str,
    problem: ProblemSize,
    params: Mapping[str, float],
    dynamic_smem_given: bool,
    shape: LaunchShape,
) -> tuple[Guess, ...]:
    """Every input of this launch that the analysis guessed (none when all are known).

    `params` are the PTX parameter values used; `dynamic_smem_given` says whether an option or
    an annotation set the dynamic shared memory; `shape` is any launch shape of the search (the
    parameters a loop misses do not depend on it).
    """
    found: list[Guess] = []
    if origin == "default" and (problem.threads is not None or problem.grid is not None):
        found.append(_problem_guess(problem, site))
    found.extend(_parameter_guesses(features, source_kernel, params, shape))
    trips = _trip_count_guess(features)
    if trips is not None:
        found.append(trips)
    if site is not None and not dynamic_smem_given:
        smem = _smem_guess(site)
        if smem is not None:
            found.append(smem)
    return tuple(found)


def _problem_guess(problem: ProblemSize, site: LaunchSite | None) -> Guess:
    fixed = problem.grid is not None
    shape = problem.grid if problem.grid is not None else problem.threads
    assert shape is not None

    def scaled(factor: float) -> ProblemSize:
        # Spread the factor over the axes the default fills (a 2-D default grows on both).
        axes = [i for i in range(3) if shape[i] > 1] or [0]
        per_axis = factor ** (1.0 / len(axes))
        x, y, z = (_at_least_one(shape[i] * per_axis) if i in axes else shape[i]
                   for i in range(3))
        return ProblemSize(grid=(x, y, z)) if fixed else ProblemSize(threads=(x, y, z))

    shown = format_shape(shape)
    needs = grid_needs(site)
    if site is not None and any(axis.kind == "unknown" for axis in site.grid_axes):
        needs = ()  # the names alone do not say how the grid follows the block
    if any(name.lower() not in RESERVED_KEYS for name in needs):
        annotation = _pin(needs, "grid")
    else:
        key = "grid" if fixed else "threads"
        annotation = f"// flipflop: {key}={'…,…' if shape[1] > 1 else '…'}"
    if needs:
        why = f"the grid needs {_names(needs)}, not known in this file"
    else:
        why = "the launch does not say"
    what = f"grid {shown}" if fixed else f"{shown} threads"
    return Guess(
        kind="problem size",
        name="problem size",
        assumed=f"{what}, the default: {why}",
        annotation=annotation,
        lines=(),
        variations=(
            Variation(f"{FACTOR:g}× larger", default_problem=scaled(FACTOR)),
            Variation(f"{FACTOR:g}× smaller", default_problem=scaled(1.0 / FACTOR)),
        ),
    )


def size_unknown_because(site: LaunchSite | None) -> str:
    """Why a launch's problem size is the default, naming what it needs and how to give it."""
    needs = grid_needs(site)
    if site is None:
        return "no launch in this file says how big the problem is"
    if any(axis.kind == "unknown" for axis in site.grid_axes):
        return ("the grid is computed from the block in a way the analysis does not follow;"
                " give the threads to cover with `// flipflop: threads=…` above the launch")
    if not needs:
        return "the launch does not say how big the problem is"
    return (f"the grid needs {_names(needs)}, not known in this file; give "
            f"{'it' if len(needs) == 1 else 'them'} with `{_pin(needs, 'grid')}` above the "
            f"launch")


def block_unknown_because(site: LaunchSite | None, block: Dim3 | None) -> str | None:
    """Why the block the launch is written with is not known, and how to give it; None when
    it is known or there is no launch."""
    if site is None or block is not None:
        return None
    needs = tuple(dict.fromkeys(n for n in site.block_folded.unresolved if n in site.needs))
    if not needs:
        return (f"`{site.block.text}` does not fold to a constant; give it with "
                "`// flipflop: block=…` above the launch")
    subject = (f"`{site.block.text}` is" if needs == (site.block.text.strip(),)
               else f"`{site.block.text}` needs {_names(needs)},")
    return (f"{subject} not known in this file; give {'it' if len(needs) == 1 else 'them'} "
            f"with `{_pin(needs, 'block')}` above the launch")


def _pin(needs: Sequence[str], key: str) -> str:
    named = [name for name in needs if name.lower() not in RESERVED_KEYS]
    if not named:
        return f"// flipflop: {key}=…"
    return "// flipflop: " + " ".join(f"{name}=…" for name in named)


def grid_needs(site: LaunchSite | None) -> tuple[str, ...]:
    """The names a launch's grid waits for, as the source spells them."""
    if site is None:
        return ()
    found = dict.fromkeys(
        name for axis in site.grid_axes for name in axis.unresolved if name in site.needs
    )
    return tuple(found)


def _names(names: Sequence[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    if len(quoted) == 1:
        return quoted[0]
    return ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def _at_least_one(value: float) -> int:
    return max(1, round(value))


def _parameter_guesses(
    features: KernelFeatures,
    source_kernel: SourceKernel | None,
    params: Mapping[str, float],
    shape: LaunchShape,
) -> list[Guess]:
    env = features.environment(shape, params)
    ptx_names = features.parameter_names
    loops_of: dict[str, list[int]] = {}
    for index, factor in enumerate(features.factors):
        if factor.kind != "loop" or factor.assumed:
            continue
        for symbol in sorted(factor.expression.symbols() - env.keys()):
            if symbol in ptx_names:
                loops_of.setdefault(symbol, []).append(index)
    guesses = []
    for ptx_name, loops in loops_of.items():
        name = _source_name(features, source_kernel, ptx_name)
        lines = tuple(sorted({line for i in loops for line in features.factors[i].lines}))
        trips = sorted({features.factors[i].default for i in loops})
        guesses.append(
            Guess(
                kind="parameter",
                name=f"kernel argument {name}",
                assumed=(
                    f"its value is unknown: the loop{'s' if len(loops) > 1 else ''}"
                    f"{_at_lines(lines)} assume{'' if len(loops) > 1 else 's'} {_trips(trips)}"
                ),
                annotation=f"// flipflop: {name}=…",
                lines=lines,
                variations=(
                    Variation(f"{FACTOR:g}× larger", loops=tuple(loops), scale=FACTOR),
                    Variation(f"{FACTOR:g}× smaller", loops=tuple(loops), scale=1.0 / FACTOR),
                ),
            )
        )
    return guesses


def _trip_count_guess(features: KernelFeatures) -> Guess | None:
    loops = tuple(i for i, f in enumerate(features.factors) if f.kind == "loop" and f.assumed)
    if not loops:
        return None
    lines = tuple(sorted({line for i in loops for line in features.factors[i].lines}))
    trips = sorted({features.factors[i].default for i in loops})
    reasons = "; ".join(dict.fromkeys(
        source_spelling(features.factors[i].description, features) for i in loops
    ))
    plural = len(loops) > 1
    return Guess(
        kind="trip count",
        name=f"trip count{'s' if plural else ''} of the loop{'s' if plural else ''}"
        f"{_at_lines(lines)}",
        assumed=f"not readable statically: {reasons}; {_trips(trips)} assumed",
        annotation=None,
        lines=lines,
        variations=(
            Variation(f"{FACTOR:g}× more trips", loops=loops, scale=FACTOR),
            Variation(f"{FACTOR:g}× fewer trips", loops=loops, scale=1.0 / FACTOR),
        ),
    )


def _smem_guess(site: LaunchSite) -> Guess | None:
    if site.shared_memory is None or site.shared_memory_folded.value is not None:
        return None
    written = site.shared_memory.text.strip()
    unresolved = [name for name in site.shared_memory_folded.unresolved if name != written]
    if unresolved:
        because = f" (it depends on {', '.join(unresolved)})"
    elif written.isidentifier():
        because = " (its value is set at run time, or differently on the paths to the launch)"
    else:
        because = ""
    return Guess(
        kind="dynamic shared memory",
        name="dynamic shared memory",
        assumed=f"`{site.shared_memory.text}` is not a constant{because}; 0 B assumed",
        annotation="// flipflop: smem=…",
        lines=(site.line + 1,),
        variations=tuple(
            Variation(f"{size // 1024} KiB per block", dynamic_smem_bytes=size)
            for size in SMEM_TRIALS
        ),
    )


def _source_name(
    features: KernelFeatures, source_kernel: SourceKernel | None, ptx_name: str
) -> str:
    index = features.parameter_names.index(ptx_name)
    names: Sequence[str] = (
        [p.name for p in source_kernel.parameters]
        if source_kernel is not None
        else features.source_parameter_names
    )
    return names[index] if index < len(names) and names[index] else ptx_name


def _at_lines(lines: tuple[int, ...]) -> str:
    if not lines:
        return ""
    if len(lines) == 1:
        return f" at line {lines[0]}"
    return " at lines " + ", ".join(str(n) for n in lines[:-1]) + f" and {lines[-1]}"


def _trips(trips: list[float]) -> str:
    counts = " or ".join(f"{t:g}" for t in trips)
    return f"{counts} trip{'' if trips == [1.0] else 's'}"


# --------------------------------------------------------------------------- ranking


def rank_guesses(
    guesses: Sequence[Guess],
    advice: Advice,
    evaluate: Callable[[Variation], Advice | None],
) -> tuple[Influence, ...]:
    """Each guess with the advice under its variations, the most influential first.

    `evaluate` re-runs the advisor with one variation applied (None: nothing can launch then).
    """
    baseline = advice.recommendation
    ranked = [
        Influence(guess, tuple(_outcome(v, baseline, evaluate(v)) for v in guess.variations),
                  baseline)
        for guess in guesses
    ]  # fmt: skip
    return tuple(sorted(ranked, key=lambda influence: -influence.score))


def _outcome(variation: Variation, baseline: Recommendation, varied: Advice | None) -> Outcome:
    if varied is None:
        return Outcome(variation.label, None, None, None, True)
    rec = varied.recommendation
    key = configuration_key(baseline.prediction)
    pick = next((p for p in varied.predictions if configuration_key(p) == key), None)
    regret = None if pick is None else pick.energy_j / rec.energy_j - 1.0
    still_fine = (
        pick is not None
        and any(configuration_key(p) == key for p in varied.recommended_set)
        and values_tie(pick.energy_j, rec.energy_j)
    )
    moves = configuration_key(rec.prediction) != key and not still_fine
    before, after, _ = _savings(baseline, rec)
    return Outcome(variation.label, rec, regret, after - before, moves)
