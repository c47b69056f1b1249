"""Validation metrics against hand-computed values; `flipflop validate` on measurement files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from flipflop.calibration.records import read_measurement
from flipflop.calibration.scored import ScoredConfig
from flipflop.calibration.validation import (
    mape,
    score_file,
    spearman,
    time_parts,
    top_recall,
    validation_to_json,
)
from flipflop.commands import validate
from flipflop.model.predict import TimeBreakdown

FIXTURE = Path(__file__).parent / "data" / "synthetic-h200" / "workloads" / "vector_add.json"


def _config(label: str, measured: tuple[float, float], predicted: tuple[float, float],
            resident: int, threads: int, recommended: bool) -> ScoredConfig:
    (mt, mp), (pt, pp) = measured, predicted
    return ScoredConfig(label, mt, mp, mt * mp, pt, pp, pt * pp, resident, threads, recommended)


# Measured: time 2.0, 1.8, 1.7, 1.75 (×1e-4 s); power 500, 520, 540, 560 W
# → energy 0.1, 0.0936, 0.0918, 0.098 J: the optimum is 256, the fastest 256 too.
CONFIGS = [
    _config("64", (2.0e-4, 500.0), (2.2e-4, 450.0), 2048, 64, False),
    _config("128", (1.8e-4, 520.0), (1.9e-4, 480.0), 2048, 128, False),
    _config("256", (1.7e-4, 540.0), (1.6e-4, 500.0), 2048, 256, True),
    _config("1024", (1.75e-4, 560.0), (1.5e-4, 560.0), 2048, 1024, True),
]


def test_metrics_equal_hand_computed_values() -> None:
    result = score_file("f.json", "h200", "vector_add", CONFIGS, pick="256")
    m = result.metrics
    assert result.measured == ("time", "power", "energy")
    assert result.measured_best == "256" and result.predicted_fastest == "1024"
    # energy ranks predicted (4,3,1,2) vs measured (4,2,1,3): Σd² = 2 → 1 − 6·2/(4·15)
    assert m.spearman_energy == pytest.approx(0.8)
    # time ranks (4,3,2,1) vs (4,3,1,2): Σd² = 2
    assert m.spearman_time == pytest.approx(0.8)
    assert m.spearman_power == pytest.approx(1.0)
    # predicted fastest 1024 measured 1.75 vs best 1.7; the pick 256 is the energy optimum
    assert m.regret_time == pytest.approx(1.75 / 1.7 - 1)
    assert m.regret_energy == pytest.approx(0.0)
    # best 5% of 4 → 1 config (256); predicted best 10% → 1 config (1024): no overlap
    assert m.top5_recall_time == pytest.approx(0.0)
    assert m.hit_rate == 1.0
    assert m.search_space_reduction == pytest.approx(0.5)
    assert m.mape_time == pytest.approx(100 * (0.2 / 2.0 + 0.1 / 1.8 + 0.1 / 1.7 + 0.25 / 1.75) / 4)
    assert m.mape_power == pytest.approx(100 * (50 / 500 + 40 / 520 + 40 / 540 + 0) / 4)
    # The shortlist (256, 1024) holds both optima: measuring it finds the best of each.
    assert m.regret_shortlist_time == 0.0 and m.regret_shortlist_energy == 0.0
    # Equal resident threads: the heuristic's tie goes to the larger block, 1024.
    assert result.occupancy_heuristic.ties == 1
    assert result.occupancy_heuristic.regret_energy == pytest.approx(0.098 / 0.0918 - 1)
    assert result.most_threads.regret_time == pytest.approx(1.75 / 1.7 - 1)


def test_a_baseline_that_ties_scores_the_mean_of_its_ties() -> None:
    # Two configurations with 256 threads and the same occupancy: the heuristic cannot choose.
    tied = [
        _config("a", (1.0, 100.0), (1.0, 100.0), 2048, 256, True),
        _config("b", (3.0, 100.0), (2.0, 100.0), 2048, 256, False),
        _config("c", (2.0, 100.0), (3.0, 100.0), 1024, 128, False),
    ]
    result = score_file("f", "g", "k", tied, pick="a")
    assert result.occupancy_heuristic.ties == 2
    assert result.occupancy_heuristic.regret_time == pytest.approx((1.0 + 3.0) / 2 / 1.0 - 1)
    assert result.metrics.regret_time == 0.0 and result.metrics.hit_rate == 1.0


def test_the_shortlist_regret_is_the_best_measured_inside_it() -> None:
    # Shortlisted: "b" (measured 3.0) and "c" (2.0); the measured best, "a" (1.5), is not.
    configs = [
        _config("a", (1.5, 100.0), (3.0, 100.0), 2048, 256, False),
        _config("b", (3.0, 100.0), (1.0, 100.0), 2048, 256, True),
        _config("c", (2.0, 100.0), (2.0, 100.0), 1024, 128, True),
    ]
    m = score_file("f", "g", "k", configs, pick="b").metrics
    assert m.hit_rate == 0.0
    assert m.regret_time == pytest.approx(3.0 / 1.5 - 1)
    assert m.regret_shortlist_time == pytest.approx(2.0 / 1.5 - 1)
    assert m.regret_shortlist_energy == pytest.approx(200.0 / 150.0 - 1)
    assert m.search_space_reduction == pytest.approx(1 / 3)


def test_time_only_data_has_no_energy_figures() -> None:
    time_only = [ScoredConfig(str(i), t, None, None, p, 100.0, p * 100, 1024, 256, i == 0)
                 for i, (t, p) in enumerate([(1.0, 1.0), (2.0, 3.0), (3.0, 2.0)])]
    result = score_file("f", "g", "k", time_only, pick="0")
    as_json = validation_to_json(result)
    assert as_json["measured"] == ["time"]
    metrics = as_json["metrics"]
    assert isinstance(metrics, dict)
    assert metrics["spearman_energy"] is None and metrics["regret_energy"] is None
    assert metrics["spearman_time"] == pytest.approx(0.5)
    assert result.metrics.hit_rate == 1.0  # the measured fastest is the one recommended


def test_statistics_edge_cases() -> None:
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert spearman([1.0, 1.0], [1.0, 2.0]) is None  # constant: undefined
    assert mape([1.0], [0.0]) is None
    # 40 configurations: the measured best 2 against the predicted best 4.
    measured = [float(i) for i in range(40)]
    predicted = [float(i) for i in (3, 1, 2, 0, *range(4, 40))]
    assert top_recall(predicted, measured) == 1.0
    assert top_recall(list(reversed(measured)), measured) == 0.0


def test_no_scored_configuration_is_an_error() -> None:
    with pytest.raises(ValueError, match="no measured configuration"):
        score_file("f", "g", "k", [], pick="1")


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
    result = validate.validate_measurements(measured, FIXTURE, "h200", 0.05, None)
    assert result.configs == 4 and result.excluded == 0
    assert result.pick in {"64", "128", "256", "1024"}
    assert result.metrics.mape_time is not None and result.metrics.mape_time > 0


def test_validate_command_prints_the_documented_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate.run(_validate_args([str(FIXTURE), "--gpu", "h200", "--format", "json"])) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kernel"] == "vector_add" and report["gpu"] == "h200"
    assert report["configs"] == 4 and report["measured"] == ["time", "power", "energy"]
    assert set(report["metrics"]) == {
        "spearman_time", "spearman_power", "spearman_energy", "regret_time", "regret_energy",
        "top5_recall_time", "hit_rate", "search_space_reduction", "mape_time", "mape_power",
        "regret_shortlist_time", "regret_shortlist_energy",
        "mape_energy",
    }
    assert set(report["baselines"]) == {"occupancy_heuristic", "most_threads"}
    assert report["measured_best"] == "256"
    # Every scored shape, with its block as the parameters the bias is grouped by.
    shapes = {c["label"]: c for c in report["configurations"]}
    assert set(shapes) == {"64", "128", "256", "1024"}
    assert shapes["256"]["parameters"] == {"block.x": 256, "block.y": 1, "block.z": 1}
    assert shapes["256"]["bound"] in {"memory", "compute", "shared", "latency", "launch"}
    assert [c["recommended"] for c in report["configurations"]].count(True) >= 1
    # Why each time is what it is: the terms of the time model, none longer than the time
    # (it is each term at its longest, the others hidden under it), the bound the longest.
    for shape in shapes.values():
        parts = shape["predicted_time_parts_s"]
        assert {"issue", "dram", "latency", "tail", "launch"} <= set(parts)
        assert all(seconds <= shape["predicted_time_s"] * (1 + 1e-9) for seconds in parts.values())
        longest = max((name for name in parts if name not in {"latency", "barrier", "tail"}),
                      key=parts.__getitem__)
        assert (longest == "dram") == (shape["bound"] == "memory")
        assert shape["active_blocks_per_sm"] >= 1
    # Four shapes, one of each block.x: no value has the configurations a bias needs.
    assert report["bias_by_parameter"] == []


def test_time_parts_name_every_unit_that_works_the_shared_banks_too() -> None:
    breakdown = TimeBreakdown(
        dram_s=2.0, compute_s=(("issue", 3.0), ("fp32", 0.0), ("l1", 1.0)), shared_s=4.0,
        latency_s=5.0, barrier_s=0.5, tail_s=0.25, launch_s=0.125,
    )  # fmt: skip
    assert time_parts(breakdown) == (
        ("issue", 3.0), ("l1", 1.0), ("shared", 4.0), ("dram", 2.0), ("latency", 5.0),
        ("barrier", 0.5), ("tail", 0.25), ("launch", 0.125),
    )  # fmt: skip
    idle_banks = TimeBreakdown(2.0, (("issue", 3.0),), 0.0, 5.0, 0.5, 0.25, 0.125)
    assert "shared" not in dict(time_parts(idle_banks))


def test_validate_command_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate.run(_validate_args([str(FIXTURE.parent), "--gpu", "h200"])) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("file") and "vector_add.json" in table


MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"


def test_a_kernel_tuner_cache_validates_end_to_end(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert MEASURED.is_dir(), f"{MEASURED} is missing: the tests need the shared measured data"
    cache = MEASURED / "pnpoly" / "RTX_3090.json.gz"
    argv = [str(cache), "--sample", "8", "--seed", "5", "--param", "n=20000000",
            "--format", "json", "--no-cache"]
    assert validate.run(_validate_args(argv)) == 0
    report = json.loads(capsys.readouterr().out)
    # The profile comes from the measured device's name, the kernel from the T1 file beside it.
    assert report["gpu"] == "rtx3090" and report["kernel"] == "cn_pnpoly"
    assert report["configs"] + report["excluded"] == 8
    assert report["measured"] == ["time"]
    assert -1.0 <= report["metrics"]["spearman_time"] <= 1.0
    assert report["metrics"]["regret_time"] >= 0.0
    assert report["baselines"]["occupancy_heuristic"]["regret_energy"] is None
    # Each configuration carries the cache's tunables; the bias is grouped by them.
    tunables = {"block_size_x", "tile_size", "between_method", "use_method",
                "use_precomputed_slopes"}
    assert len(report["configurations"]) == report["configs"]
    assert all(set(c["parameters"]) <= tunables and c["predicted_time_s"] > 0
               for c in report["configurations"])
    assert {b["parameter"] for b in report["bias_by_parameter"]} <= tunables


def test_a_cache_without_its_source_is_a_clear_error(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "RTX_3090.json.gz"
    copy.write_bytes((MEASURED / "gemm" / "RTX_3090.json.gz").read_bytes())
    assert validate.run(_validate_args([str(copy)])) == 1
    assert "give --source" in capsys.readouterr().err
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    assert validate.run(_validate_args([str(broken)])) == 1
    assert "broken.json.gz" in capsys.readouterr().err


def test_variants_are_compiled_by_the_compiler_that_built_the_measured_code(
    tmp_path: Path,
) -> None:
    from flipflop.formats.t1 import read_t1

    t1 = read_t1(MEASURED / "pnpoly" / "T1.json")
    assert t1.language == "CUDA"
    # Kernel Tuner's CUDA backend (PyCUDA) compiles with nvcc.
    assert validate.measuring_compiler("auto", t1, None) == "nvcc"
    assert validate.measuring_compiler("auto", None, None) == "nvcc"  # a cache without T1
    assert validate.measuring_compiler("nvrtc", t1, None) == "nvrtc"  # asked for: kept
    # Without the nvcc it names, the next best is the usual choice.
    assert validate.measuring_compiler("auto", t1, str(tmp_path / "no-nvcc")) == "auto"
    raw = json.loads((MEASURED / "pnpoly" / "T1.json").read_text())
    raw["KernelSpecification"]["Language"] = "HIP"
    hip = tmp_path / "T1.json"
    hip.write_text(json.dumps(raw))
    hip_t1 = read_t1(hip, kernel_file=MEASURED / "pnpoly" / "pnpoly.cu")
    assert validate.measuring_compiler("auto", hip_t1, None) == "auto"


def test_a_folder_with_its_t1_file_validates_with_one_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    # expdist: an unclosed cache, a problem size that depends on the configuration, NVML
    # energy, scalar arguments (m, n) in its T1 file; nothing given on the command line.
    argv = [str(MEASURED / "expdist"), "--sample", "4", "--seed", "2", "--format", "json",
            "--no-cache"]
    assert validate.run(_validate_args(argv)) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["gpu"] == "rtx-a4000" and report["kernel"] == "ExpDist"
    assert report["configs"] == 4 and report["measured"] == ["time", "power", "energy"]
    assert report["failed"] == {"CompilationFailedConfig": 1380}
    assert report["measured_from"] == {"energy": "nvml_energy", "power": "nvml_energy / time"}


def test_a_file_that_cannot_be_validated_does_not_stop_the_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "measured"
    folder.mkdir()
    good = json.loads((MEASURED / "pnpoly" / "T1.json").read_text())
    good["KernelSpecification"]["KernelFile"] = str(MEASURED / "pnpoly" / "pnpoly.cu")
    (folder / "T1.json").write_text(json.dumps(good))
    (folder / "RTX_3090.json.gz").write_bytes((MEASURED / "pnpoly" / "RTX_3090.json.gz")
                                              .read_bytes())
    document = {"device_name": "NVIDIA GeForce RTX 3090", "kernel_name": "cn_pnpoly",
                "problem_size": [20000000], "tune_params_keys": ["block_size_x"],
                "tune_params": {"block_size_x": [32]},
                "cache": {"32": {"block_size_x": 32, "GFLOP/s": "RuntimeFailedConfig"}}}
    (folder / "all_failed.json").write_text(json.dumps(document))
    argv = [str(folder), "--sample", "4", "--param", "n=20000000", "--format", "json",
            "--no-cache"]
    assert validate.run(_validate_args(argv)) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"{folder / 'all_failed.json'}: error: nothing to validate: "
                                   "all 1 entries failed or hold no time (RuntimeFailedConfig 1)")
    (report,) = json.loads(captured.out)
    assert report["kernel"] == "cn_pnpoly" and report["configs"] + report["excluded"] == 4
