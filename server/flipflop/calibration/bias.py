"""Which tunable the time model misjudges: the bias of the predictions per parameter value.

A ranking goes wrong where the error of the prediction depends on a parameter: if every
configuration with `VWM=8` measures 25% faster than predicted while those with `VWM=1` measure 8%
slower, the model ranks the vector widths the wrong way round, whatever its ρ over the whole
space. For each parameter of a scored file, the configurations are grouped by its value, and each
group's bias is the geometric mean of measured over predicted time in the group, over the same
mean across the file, minus one (+0.25: the group measures 25% slower than the model's typical
error says). A parameter's spread is the largest over the smallest of its groups' ratios, minus
one, over the values that `MIN_GROUP` configurations or more share; parameters come out largest
spread first. The file-wide mean takes out the model's overall scale (MAPE), so only what
changes the ranking is left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from flipflop.calibration.scored import ScoredConfig

ParameterValue = int | float | str

MIN_GROUP = 3
"""Configurations a value needs to have its bias shown: fewer are one or two measurements' noise
(our choice)."""


@dataclass(frozen=True)
class ValueBias:
    value: ParameterValue
    configs: int
    bias: float  # measured/predicted of the group over that of the file, minus one


@dataclass(frozen=True)
class ParameterBias:
    parameter: str
    values: tuple[ValueBias, ...]  # in the parameter's value order
    spread: float  # largest over smallest group ratio, minus one

    def describe(self) -> str:
        """`VWM: 1 +8%, 8 -25%` — every value's bias in percent."""
        parts = ", ".join(f"{v.value} {100.0 * v.bias:+.0f}%" for v in self.values)
        return f"{self.parameter}: {parts}"


def bias_by_parameter(configs: Sequence[ScoredConfig]) -> tuple[ParameterBias, ...]:
    """Time bias per value of every parameter with two or more values of `MIN_GROUP`
    configurations or more (the other values left out), largest spread first. Configurations
    without parameters (or with a non-positive time) are left out."""
    usable = [
        c for c in configs
        if c.parameters and c.measured_time_s > 0.0 and c.predicted_time_s > 0.0
    ]
    if len(usable) < 2:
        return ()
    log_ratios = [math.log(c.measured_time_s / c.predicted_time_s) for c in usable]
    file_mean = sum(log_ratios) / len(usable)
    parameters = [dict(c.parameters) for c in usable]
    names = sorted({name for named in parameters for name in named})
    found = []
    for name in names:
        groups: dict[ParameterValue, list[float]] = {}
        for named, log_ratio in zip(parameters, log_ratios, strict=True):
            if name in named:
                groups.setdefault(named[name], []).append(log_ratio - file_mean)
        groups = {value: group for value, group in groups.items() if len(group) >= MIN_GROUP}
        if len(groups) < 2:
            continue
        values = tuple(
            ValueBias(value, len(group), math.exp(sum(group) / len(group)) - 1.0)
            for value, group in sorted(groups.items(), key=lambda item: _order(item[0]))
        )
        ratios = [1.0 + v.bias for v in values]
        found.append(ParameterBias(name, values, max(ratios) / min(ratios) - 1.0))
    return tuple(sorted(found, key=lambda p: (-p.spread, p.parameter)))


def _order(value: ParameterValue) -> tuple[int, float, str]:
    if isinstance(value, (int, float)):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def bias_to_json(biases: Sequence[ParameterBias]) -> list[dict[str, object]]:
    return [
        {
            "parameter": p.parameter,
            "spread": p.spread,
            "values": [{"value": v.value, "configs": v.configs, "bias": v.bias} for v in p.values],
        }
        for p in biases
    ]
