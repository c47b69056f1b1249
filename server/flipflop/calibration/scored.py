"""One configuration of a measured file, measured and predicted: what validation scores and what
the bias per parameter groups.

It stands apart from both so that the scoring (`flipflop.calibration.validation`) can report the
biases (`flipflop.calibration.bias`) without either importing the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScoredConfig:
    """One configuration, measured and predicted."""

    label: str  # "256" or "block_size_x=32,tile_size_x=2"
    measured_time_s: float
    measured_power_w: float | None
    measured_energy_j: float | None
    predicted_time_s: float
    predicted_power_w: float
    predicted_energy_j: float
    resident_threads: int  # active blocks per SM × threads per block, for the heuristic
    threads_per_block: int
    recommended: bool  # inside the recommended set: the shortlist worth measuring
    # The configuration's tunables (a Kernel Tuner cache) or its block (a measurement file),
    # as (name, value): what `flipflop.calibration.bias` groups the errors by.
    parameters: tuple[tuple[str, int | float | str], ...] = ()
    bound: str = ""  # what the model says limits it ("compute", "memory", ...)
    # Why the model predicts the time it does: each term of the time model alone, summed over
    # the waves (`flipflop.model.predict.TimeBreakdown`; they overlap, so they do not add up).
    time_parts: tuple[tuple[str, float], ...] = ()
    active_blocks_per_sm: int = 0
