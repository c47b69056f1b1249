"""Validation metrics against hand-computed values on a synthetic measurement fixture."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from flipflop.calibration.records import read_measurement
from flipflop.calibration.validation import (
    KernelPrediction,
    PredictedConfig,
    heuristic_order,
    mape,
    spearman,
    summarize,
    validation_metrics,
)
from flipflop.commands import validate

FIXTURE = Path(__file__).parent / "data" / "synthetic-h200" / "workloads" / "vector_add.json"
B64, B128, B256, B1024 = (64, 1, 1), (128, 1, 1), (256, 1, 1), (1024, 1, 1)

# Measured (fixture): time 2.0, 1.8, 1.7, 1.75 (×1e-4 s); power 500, 520, 540, 560 W
# → energy 0.1, 0.0936, 0.0918, 0.098 J: the optimum is 256.
PREDICTION = KernelPrediction(
    configs=(
        PredictedConfig(B64, 2.2e-4, 450.0, 2.2e-4 * 450.0),
        PredictedConfig(B128, 1.9e-4, 480.0, 1.9e-4 * 480.0),
        PredictedConfig(B256, 1.6e-4, 500.0, 1.6e-4 * 500.0),
        PredictedConfig(B1024, 1.5e-4, 560.0, 1.5e-4 * 560.0),
    ),
    recommendation=B256,
    recommended_set=(B256, B1024),
    heuristic=B1024,
    # Equal resident threads everywhere, so ties go to the larger block.
    heuristic_order=heuristic_order([B64, B128, B256, B1024], [2048, 2048, 2048, 2048]),
)


def test_metrics_equal_hand_computed_values() -> None:
    result = validation_metrics(read_measurement(FIXTURE), PREDICTION)
    ours, occupancy = result.flipflop, result.heuristic
    assert result.measured_best == B256
    assert result.candidates == 4
    # energy ranks predicted (4,3,1,2) vs measured (4,2,1,3): Σd² = 2 → 1 − 6·2/(4·15)
    assert ours.spearman_energy == pytest.approx(0.8)
    # time ranks (4,3,2,1) vs (4,3,1,2): Σd² = 2
    assert ours.spearman_time == pytest.approx(0.8)
    assert ours.energy_regret == pytest.approx(0.0)
    assert ours.hit is True
    assert ours.search_space_reduction == pytest.approx(0.5)
    assert ours.mape_time == pytest.approx(
        100 * (0.2 / 2.0 + 0.1 / 1.8 + 0.1 / 1.7 + 0.25 / 1.75) / 4
    )
    assert ours.mape_power == pytest.approx(100 * (50 / 500 + 40 / 520 + 40 / 540 + 0) / 4)
    assert ours.mape_energy == pytest.approx(
        100 * (0.001 / 0.1 + 0.0024 / 0.0936 + 0.0118 / 0.0918 + 0.014 / 0.098) / 4
    )
    assert occupancy.pick == B1024
    assert occupancy.energy_regret == pytest.approx(0.098 / 0.0918 - 1)
    assert occupancy.hit is False
    assert occupancy.search_space_reduction == pytest.approx(0.75)
    # heuristic order 1024, 256, 128, 64 → ranks (4,3,2,1) vs energy (4,2,1,3): Σd² = 6
    assert occupancy.spearman_energy == pytest.approx(0.4)
    assert occupancy.spearman_time == pytest.approx(0.8)
    assert occupancy.mape_time is None


def test_summary_hit_rates_and_means() -> None:
    measured = read_measurement(FIXTURE)
    good = validation_metrics(measured, PREDICTION)
    missing = validation_metrics(
        measured,
        KernelPrediction(PREDICTION.configs, B64, (B64,), B64, PREDICTION.heuristic_order),
    )
    summary = summarize([good, missing])
    assert summary.flipflop_hit_rate == pytest.approx(0.5)
    assert summary.heuristic_hit_rate == pytest.approx(0.0)
    assert summary.flipflop.energy_regret == pytest.approx((0.0 + (0.1 / 0.0918 - 1)) / 2)
    assert summary.flipflop.search_space_reduction == pytest.approx((0.5 + 0.75) / 2)


def test_statistics_edge_cases() -> None:
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert spearman([1.0, 1.0], [1.0, 2.0]) is None  # constant: undefined
    assert mape([1.0], [0.0]) is None
    assert heuristic_order([B64, B256], [1024, 2048]) == (B256, B64)


def test_no_common_block_is_an_error() -> None:
    other = KernelPrediction((PredictedConfig((96, 1, 1), 1.0, 1.0, 1.0),), (96, 1, 1), ())
    with pytest.raises(ValueError, match="no measured block shape"):
        validation_metrics(read_measurement(FIXTURE), other)


def test_table_lists_both_methods() -> None:
    summary = summarize([validation_metrics(read_measurement(FIXTURE), PREDICTION)])
    table = validate.format_table(summary)
    assert "vector_add  flipflop" in table and "occupancy" in table
    assert "MEAN" in table and "100%" in table  # our hit rate
    assert json.loads(json.dumps(validate.summary_to_json(summary)))["flipflop_hit_rate"] == 1.0


def _validate_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    validate.register(parser.add_subparsers())
    return parser.parse_args(["validate", *argv])


def test_missing_measurements_are_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate.run(_validate_args([str(tmp_path / "none.json")])) == 1
    assert "no such file" in capsys.readouterr().err
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"schema": "something else"}')
    assert validate.run(_validate_args([str(bogus)])) == 1
    assert "not a flipflop.measurements/1 file" in capsys.readouterr().err


def test_predictions_come_from_the_analysis_of_the_measured_file() -> None:
    measured = read_measurement(FIXTURE)
    prediction = validate.predict(measured, FIXTURE, "h200", 0.05, None)
    assert {c.block for c in prediction.configs} == {B64, B128, B256, B1024}
    assert all(c.time_s > 0 and c.power_w > 0 and c.energy_j > 0 for c in prediction.configs)
    assert prediction.recommendation in {B64, B128, B256, B1024}
    assert set(prediction.recommended_set) <= {B64, B128, B256, B1024}


def test_validate_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate.run(_validate_args([str(FIXTURE), "--gpu", "h200", "--format", "json"])) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kernels"][0]["kernel"] == "vector_add"
    assert report["kernels"][0]["measured_best"] == [256, 1, 1]
