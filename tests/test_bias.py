"""The time bias per parameter value (`flipflop.calibration.bias`) against hand-computed values."""

from __future__ import annotations

import math

import pytest

from flipflop.calibration.bias import MIN_GROUP, bias_by_parameter, bias_to_json
from flipflop.calibration.scored import ScoredConfig
from flipflop.calibration.validation import score_file, validation_to_json


def _config(label: str, measured: float, predicted: float,
            **parameters: int | str) -> ScoredConfig:
    return ScoredConfig(label, measured, None, None, predicted, 100.0, predicted * 100.0, 1024,
                        256, False, parameters=tuple(parameters.items()))


# Width 1 measures twice its prediction, width 8 half of it, width 2 as predicted; the unroll
# factor does not change the error. Three configurations per value (MIN_GROUP).
CONFIGS = [
    _config(f"{vw},{unroll}", measured, 1.0, VW=vw, UNROLL=unroll)
    for vw, measured in ((1, 2.0), (2, 1.0), (8, 0.5))
    for unroll in (1, 2, 4)
]


def test_bias_is_each_values_error_over_the_files() -> None:
    assert MIN_GROUP == 3
    biases = bias_by_parameter(CONFIGS)
    assert [b.parameter for b in biases] == ["VW", "UNROLL"]  # largest spread first
    vw, unroll = biases
    # File mean of log(measured/predicted): (log 2 + 0 + log 0.5) / 3 = 0 → bias = ratio - 1.
    assert [v.value for v in vw.values] == [1, 2, 8]
    assert [v.configs for v in vw.values] == [3, 3, 3]
    assert [v.bias for v in vw.values] == pytest.approx([1.0, 0.0, -0.5])
    assert vw.spread == pytest.approx(3.0)  # 2.0 / 0.5 - 1
    assert unroll.spread == pytest.approx(0.0, abs=1e-12)
    assert vw.describe() == "VW: 1 +100%, 2 +0%, 8 -50%"


def test_the_models_overall_scale_is_not_a_bias() -> None:
    # Every prediction 3x too fast: the same ranking, no bias.
    scaled = [_config(c.label, c.measured_time_s * 3.0, c.predicted_time_s,
                      **dict(c.parameters)) for c in CONFIGS]
    assert [v.bias for v in bias_by_parameter(scaled)[0].values] == pytest.approx(
        [1.0, 0.0, -0.5])


def test_values_with_too_few_configurations_are_left_out() -> None:
    configs = [*CONFIGS, _config("16,1", 40.0, 1.0, VW=16, UNROLL=1)]
    vw = next(b for b in bias_by_parameter(configs) if b.parameter == "VW")
    assert 16 not in [v.value for v in vw.values]
    # A parameter left with one value has no bias; configurations without parameters none.
    single = [_config(str(i), float(i + 1), 1.0, VW=4) for i in range(4)]
    assert bias_by_parameter(single) == ()
    bare = [ScoredConfig(str(i), 1.0 + i, None, None, 1.0, 1.0, 1.0, 1, 1, False)
            for i in range(4)]
    assert bias_by_parameter(bare) == ()


def test_the_json_report_carries_the_bias_and_every_configuration() -> None:
    result = score_file("f", "g", "k", CONFIGS, pick="1,1")
    as_json = validation_to_json(result)
    assert as_json["bias_by_parameter"] == bias_to_json(result.bias)
    first = as_json["bias_by_parameter"][0]  # type: ignore[index]
    assert first["parameter"] == "VW" and math.isclose(first["spread"], 3.0)
    configurations = as_json["configurations"]
    assert isinstance(configurations, list) and len(configurations) == len(CONFIGS)
    assert configurations[0] == {
        "label": "1,1", "parameters": {"VW": 1, "UNROLL": 1}, "measured_time_s": 2.0,
        "predicted_time_s": 1.0, "measured_energy_j": None, "predicted_energy_j": 100.0,
        "bound": "", "predicted_time_parts_s": {}, "active_blocks_per_sm": 0,
        "recommended": False,
    }
