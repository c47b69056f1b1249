"""Whether a predicted saving is larger than the model's error (`flipflop.model.error`).

A recommendation changes a launch only when the whole interval of its energy ratio to the launch
as written lies below 1; otherwise the launch is kept and the advice says the difference is
within the model's error. The interval used depends on what the two configurations differ in:
the block alone (`block` pairs) or code and GPU settings too (`code` pairs).
"""

from __future__ import annotations

from flipflop.model.error import ModelError, PairKind, RatioInterval
from flipflop.model.predict import Prediction


def pair_kind(a: Prediction, b: Prediction) -> PairKind:
    """`block` when only the block differs between two configurations, else `code`."""
    same = (a.params == b.params and a.power_limit_w == b.power_limit_w
            and a.settings == b.settings)
    return "block" if same else "code"


def energy_interval(error: ModelError | None, a: Prediction, b: Prediction
                    ) -> RatioInterval | None:
    """The interval of the energy ratio between two configurations. Energy was measured on
    fewer kernels than time; where it has no pairs of this kind, the time interval of this
    kind stands in when it is the wider (an energy ratio is a time ratio times a power ratio,
    so its error is rarely smaller)."""
    if error is None:
        return None
    kind = pair_kind(a, b)
    energy = error.interval("energy", kind)
    if energy is not None:
        return energy
    time = error.interval("time", kind)
    other = error.interval("energy", "code" if kind == "block" else "block")
    candidates = [i for i in (time, other) if i is not None]
    return max(candidates, key=lambda i: i.log_half_width) if candidates else None


def saving_holds(error: ModelError | None, current: Prediction, chosen: Prediction) -> bool:
    """Whether `chosen` saves energy over `current` by more than the model's error (always, when
    no error is given: decisions on the point predictions)."""
    interval = energy_interval(error, current, chosen)
    if interval is None or current.energy_j <= 0.0:
        return True
    return interval.holds(1.0 - chosen.energy_j / current.energy_j)


def format_saving(saving: float, interval: RatioInterval | None) -> str:
    """"30% (±22%, 80%)": a predicted saving with the model's error, when known."""
    if interval is None:
        return f"{saving:.0%}"
    return f"{saving:.0%} (±{interval.percent:.0f}%, {interval.level:.0%})"
