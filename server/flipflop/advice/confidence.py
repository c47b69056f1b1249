"""Whether a predicted saving is larger than the model's error (`flipflop.model.error`).

A recommendation changes a launch only when the whole interval of its energy ratio to the launch
as written lies below 1; otherwise the launch is kept and the advice says the difference is
within the model's error. The interval used depends on what the two configurations differ in:
the block alone (`block` pairs) or code and GPU settings too (`code` pairs).
"""

from __future__ import annotations

from flipflop.advice.describe import describe_configuration
from flipflop.model.error import ModelError, PairKind, RatioInterval
from flipflop.model.predict import Prediction


def pair_kind(a: Prediction, b: Prediction) -> PairKind:
    """`block` when only the block differs between two configurations, else `code`."""
    same = (a.params == b.params and a.power_limit_w == b.power_limit_w
            and a.settings == b.settings)
    return "block" if same else "code"


def energy_interval(error: ModelError | None, a: Prediction, b: Prediction
                    ) -> RatioInterval | None:
    """The interval of the energy ratio between two configurations. Energy has been measured on
    too few kernels for a width of its own (`flipflop.calibration.held_out.MIN_KERNELS`); until
    then the time width of the same kind stands in, and docs/validation.md reports how often it
    holds the measured energy ratios."""
    if error is None:
        return None
    kind = pair_kind(a, b)
    return error.interval("energy", kind) or error.interval("time", kind)


def saving_holds(error: ModelError | None, current: Prediction, chosen: Prediction) -> bool:
    """Whether `chosen` saves energy over `current` by more than the model's error (always, when
    no error is given: decisions on the point predictions)."""
    interval = energy_interval(error, current, chosen)
    if interval is None or current.energy_j <= 0.0:
        return True
    return interval.holds(1.0 - chosen.energy_j / current.energy_j)


def format_saving(saving: float, interval: RatioInterval | None) -> str:
    """"83% (76% to 88% at 80%)": a predicted saving with the model's error, when known."""
    if interval is None:
        return f"{saving:.0%}"
    return interval.describe(saving)


def held_back(error: ModelError | None, current: Prediction | None, chosen: Prediction
              ) -> str | None:
    """Why `chosen` is not recommended over the launch as written, when its predicted saving is
    within the model's error, as a sentence: "Block 96 is predicted to use 30% (0% to 51% at
    80%) less energy …"; None when the saving holds, when nothing is written to keep, or when
    they are the same configuration."""
    if current is None or same_configuration(current, chosen):
        return None
    if saving_holds(error, current, chosen):
        return None
    interval = energy_interval(error, current, chosen)
    saving = 1.0 - chosen.energy_j / current.energy_j
    described = describe_configuration(chosen)
    return (f"{described[0].upper()}{described[1:]} is predicted to use "
            f"{format_saving(saving, interval)} less energy than the launch as written: within "
            "the model's error, so the launch as written is kept.")


def same_configuration(a: Prediction, b: Prediction) -> bool:
    """Block, tunables, power limit and clocks all equal: one configuration."""
    return (a.block == b.block and a.params == b.params
            and a.power_limit_w == b.power_limit_w and a.settings == b.settings)
