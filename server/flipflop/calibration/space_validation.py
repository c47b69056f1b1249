"""Predictions for a measured search space (a Kernel Tuner cache or T4 results), scored.

Every measured configuration (or a seeded sample of them) is compiled and costed exactly as
`flipflop analyze --tune` does — Kernel Tuner's `#define`s, block and grid — and matched to its
measurement by its tunable values. The predicted best and the recommended set are chosen among
the configurations that were both measured and predicted, by the advisor's rules: the lowest
predicted energy within the slowdown budget of the predicted fastest, and the shortlist of the
predicted fastest (`flipflop.advice.shortlist`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from flipflop.advice.shortlist import fastest_share
from flipflop.calibration.scored import ScoredConfig
from flipflop.calibration.validation import FileValidation, score_file, time_parts
from flipflop.formats.measured import MeasuredConfig, MeasuredSpace
from flipflop.formats.t1 import T1Input
from flipflop.model.predict import Prediction
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.space.tunables import Configuration, choose_indices


class SpaceValidationError(ValueError):
    """The measured space cannot be predicted (no source, no kernel, nothing compiled)."""


@dataclass(frozen=True)
class MeasuredKernel:
    """What the prediction of a measured space needs beyond the measurements."""

    source: Path
    kernel: str
    gpu: str
    options: AnalysisOptions  # compile flags, parameters, slack; `space` refined here
    t1: T1Input | None = None


def validate_measured_space(
    measured: MeasuredSpace,
    kernel: MeasuredKernel,
    sample: int | None = None,
    seed: int = 0,
) -> FileValidation:
    """Predict the measured configurations (or `sample` of them) and score the predictions."""
    succeeded = [entry for entry in measured.succeeded if entry.time_s is not None]
    if not succeeded:
        raise SpaceValidationError(f"{measured.path}: no configuration was measured successfully")
    if sample is not None and sample < len(succeeded):
        succeeded = [succeeded[i] for i in choose_indices(len(succeeded), sample, seed)]
    base = kernel.options
    space = replace(
        base.space,
        tunables=measured.tunables,
        configurations=tuple(entry.config for entry in succeeded),
        launch=base.space.launch or (kernel.t1.launch if kernel.t1 is not None else None),
        include_current=False,
    )
    options = replace(base, gpu=kernel.gpu, kernel=kernel.kernel, space=space)
    result = analyze(kernel.source, None, options)
    if not result.kernels:
        raise SpaceValidationError(
            f"{kernel.source}: kernel {kernel.kernel} was not analysed "
            f"({'; '.join(result.notes) or 'nothing compiled'})"
        )
    advice = result.kernels[0].primary.advice
    predicted: dict[tuple[object, ...], Prediction] = {
        p.params: p for p in advice.predictions if p.power_limit_w is None
    }
    pairs = [
        (entry, predicted[tuple(entry.config.items())])
        for entry in succeeded
        if tuple(entry.config.items()) in predicted
    ]
    if not pairs:
        raise SpaceValidationError(f"{measured.path}: no measured configuration was predicted")
    fastest = min(p.time_s for _, p in pairs)
    budget = fastest * (1.0 + base.slack)
    within = [pair for pair in pairs if pair[1].time_s <= budget]
    pick = min(within, key=lambda pair: (pair[1].energy_j, pair[1].time_s))
    kept = fastest_share(pairs, [p.time_s for _, p in pairs], [p.energy_j for _, p in pairs],
                         base.shortlist_share, pick)
    pick_entry = pick[0]
    recommended = {id(entry) for entry, _ in kept}
    scored = [
        _scored(entry, prediction, id(entry) in recommended) for entry, prediction in pairs
    ]
    scored_file = score_file(
        measured.path, result.profile.id, measured.kernel_name or kernel.kernel, scored,
        _label(pick_entry.config), excluded=len(succeeded) - len(pairs),
    )
    return replace(scored_file, failed=measured.failures, sources=measured_from(measured))


def measured_from(measured: MeasuredSpace) -> tuple[tuple[str, str], ...]:
    """The observer field each of energy and power was read from, or how it was derived."""
    energy, power = measured.energy_field, measured.power_field
    found: list[tuple[str, str]] = []
    if energy is not None or power is not None:
        found.append(("energy", energy or f"{power} x time"))
        found.append(("power", power or f"{energy} / time"))
    return tuple(found)


def _scored(entry: MeasuredConfig, prediction: Prediction, recommended: bool) -> ScoredConfig:
    assert entry.time_s is not None
    threads = prediction.launch.shape.threads_per_block
    return ScoredConfig(
        label=_label(entry.config),
        measured_time_s=entry.time_s,
        measured_power_w=entry.power_w,
        measured_energy_j=entry.energy_j,
        predicted_time_s=prediction.time_s,
        predicted_power_w=prediction.power_w,
        predicted_energy_j=prediction.energy_j,
        resident_threads=prediction.active_blocks_per_sm * threads,
        threads_per_block=threads,
        recommended=recommended,
        parameters=tuple(entry.config.items()),
        bound=prediction.bound,
        time_parts=time_parts(prediction.breakdown.time),
        active_blocks_per_sm=prediction.active_blocks_per_sm,
    )


def _label(config: Configuration | Mapping[str, object]) -> str:
    return ",".join(str(value) for value in config.values())
