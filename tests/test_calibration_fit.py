"""Fitting profile coefficients: synthetic fixtures with known coefficients, the public A100
clock sweep, and the calibrate command in fit-only mode."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest

from flipflop.calibration.fit import FitError, dvfs_points, fit_profile, fit_voltage_curve
from flipflop.calibration.records import read_measurements
from flipflop.commands import calibrate
from flipflop.gpu.profiles import load_profile_file

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_fixtures as known  # noqa: E402  (the generator holds the true coefficients)

MICROBENCH = DATA / "synthetic-h200" / "microbench"
A100_SWEEP = (Path(__file__).resolve().parents[1] / "calibration" / "data" / "reference"
              / "a100-pcie-fp32-clock-sweep.json")


def _fit():  # type: ignore[no-untyped-def]
    return fit_profile(read_measurements(MICROBENCH), "synthetic fixtures")


def test_fit_recovers_bandwidth_rates_and_overhead() -> None:
    values = _fit().values
    assert values["memory_bandwidth_gbs"].value == pytest.approx(known.DRAM_GBS, rel=1e-9)
    assert values["l2_bandwidth_gbs"].value == pytest.approx(known.L2_GBS, rel=1e-9)
    for unit, rate in known.RATES.items():
        assert values[f"rates.{unit}"].value == pytest.approx(rate, rel=1e-9), unit
    assert values["launch_overhead_s"].value == pytest.approx(known.LAUNCH_OVERHEAD_S)
    assert values["power.idle_w"].value == pytest.approx(known.IDLE_W)


def test_fit_recovers_power_coefficients() -> None:
    fit = _fit()
    values = fit.values
    assert values["power.constant_active_w"].value == pytest.approx(
        known.CONSTANT_ACTIVE_W, rel=1e-6
    )
    assert values["power.static_per_sm_w"].value == pytest.approx(known.STATIC_PER_SM_W, rel=1e-6)
    for unit, pj in known.PJ.items():
        field = {
            "fp32_flops": "pj_per_fp32_flop", "fp64_flops": "pj_per_fp64_flop",
            "fp16_flops": "pj_per_fp16_flop", "int_ops": "pj_per_int_op",
            "sfu_ops": "pj_per_sfu_op", "tensor_flops": "pj_per_tensor_flop",
            "shared_bytes": "pj_per_shared_byte", "l2_bytes": "pj_per_l2_byte",
            "dram_bytes": "pj_per_dram_byte",
        }[unit]
        assert values[f"power.{field}"].value == pytest.approx(pj, rel=1e-6), unit
    assert fit.power_residual_rms_w is not None and fit.power_residual_rms_w < 1e-6
    assert all("synthetic fixtures" in v.source for v in values.values())


def test_fit_rejects_data_without_usable_configurations() -> None:
    with pytest.raises(FitError):
        fit_profile((), "nothing")


@pytest.mark.skipif(not A100_SWEEP.is_file(), reason="shared A100 clock sweep not present")
def test_voltage_curve_of_the_public_a100_clock_sweep() -> None:
    cache = json.loads(A100_SWEEP.read_text())["cache"].values()
    clocks = [entry["core_freq"] for entry in cache]
    power = [entry["nvml_power"] for entry in cache]
    fit = fit_voltage_curve(clocks, power)
    assert fit.residual_rms_w < 2.0  # 10 points between 42 W and 153 W
    points = dvfs_points(fit, clocks)
    voltages = [v for _, v in points]
    assert voltages == sorted(voltages)  # never lower at a higher clock
    assert voltages[-1] == pytest.approx(1.0)
    assert 0.5 < voltages[0] < 0.9  # a floor voltage well below the top one
    assert fit.power(1410.0) == pytest.approx(153.408, abs=3.0)


def test_voltage_curve_needs_several_clocks() -> None:
    with pytest.raises(FitError):
        fit_voltage_curve([1000.0, 1000.0, 1200.0], [100.0, 100.0, 120.0])


def _calibrate_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    calibrate.register(parser.add_subparsers())
    return parser.parse_args(["calibrate", *argv])


def test_calibrate_from_data_writes_a_loadable_measured_profile(tmp_path: Path) -> None:
    out = tmp_path / "h200-calibrated.json"
    args = _calibrate_args(["--from-data", str(MICROBENCH), "--base", "h200", "--out", str(out)])
    assert calibrate.run(args) == 0
    profile = load_profile_file(out)
    assert profile.memory_bandwidth_gbs == pytest.approx(known.DRAM_GBS)
    assert profile.power.pj_per_dram_byte == pytest.approx(known.PJ["dram_bytes"], rel=1e-5)
    assert profile.kinds["power.pj_per_dram_byte"] == "measured"
    assert str(MICROBENCH) in profile.sources["power.pj_per_dram_byte"]
    assert profile.kinds["tdp_w"] != "measured"  # untouched fields keep the base's provenance
    report = json.loads(out.with_suffix(".fit.json").read_text())
    assert "l2_bandwidth_gbs" in report["not_in_profile"]
    assert math.isclose(report["values"]["rates.fp32_flops"]["value"], 256.0)


def test_calibrate_reports_bad_data_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _calibrate_args(["--from-data", str(tmp_path), "--base", "h200"])
    assert calibrate.run(args) == 1
    assert "no flipflop.measurements/1 files" in capsys.readouterr().err


def _gpu_present() -> bool:
    import shutil

    return shutil.which("nvidia-smi") is not None


@pytest.mark.skipif(_gpu_present(), reason="a GPU is present, so the no-GPU error cannot occur")
def test_calibrate_without_a_gpu_is_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert calibrate.run(_calibrate_args(["--base", "h200"])) == 3
    err = capsys.readouterr().err
    assert err.startswith("flipflop calibrate: error: no GPU to measure on:")


@pytest.mark.skipif(_gpu_present(), reason="a GPU is present, so the no-GPU exit cannot occur")
def test_run_all_stops_clearly_without_a_gpu() -> None:
    import os
    import subprocess

    script = Path(__file__).resolve().parents[1] / "calibration" / "run_all.sh"
    env = {**os.environ, "SKIP_INSTALL": "1", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3
    assert "needs an NVIDIA GPU" in done.stderr
