"""Clock and power-limit tunables (`nvml_gr_clock`, `nvml_mem_clock`, `nvml_pwr_limit`): not
compiled in, each value the locked clock or limit of its configuration's prediction through the
DVFS path; in `analyze --tune`, the report, `--emit-kernel-tuner` and `validate` (on the real
wmma_gemm space, ten locked clocks on an RTX 4000 Ada). Values the GPU cannot be set to are an
error naming the tunable, and nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flipflop.analysis.work import ThreadWork
from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape
from flipflop.model import (
    GpuSettings,
    SettingsError,
    at_memory_clock,
    check_settings,
    predict_power_limits,
    prepare_launch,
)
from flipflop.model.dvfs import clock_range_mhz
from flipflop.resources import Resources

ROOT = Path(__file__).resolve().parents[1]
WMMA = ROOT / "calibration" / "data" / "measured" / "wmma_gemm"
SHAPE = LaunchShape((256, 1, 1), (65536, 1, 1))


def _work(**counts: float) -> ThreadWork:
    fields: dict[str, float] = {
        name: 0.0 for name, field in ThreadWork.__dataclass_fields__.items()
        if field.default is not None and not isinstance(field.default, tuple)
    }
    fields["active_fraction"] = 1.0
    fields.update(counts)
    return ThreadWork(**fields)  # type: ignore[arg-type]


FMA = _work(instructions=4104, chain_cycles=4104, fp32_flops=8192, int_ops=4,
            global_store_bytes=4, global_store_sectors=0.125)
COPY = _work(instructions=10, int_ops=4, global_load_bytes=4, global_store_bytes=4,
             global_load_sectors=0.125, global_store_sectors=0.125, branches=1)


def _at(gpu: str, work: ThreadWork, settings: GpuSettings) -> Any:
    profile = load_profile(gpu)
    launch = prepare_launch(at_memory_clock(profile, settings), Resources(registers=32), work,
                            SHAPE)
    (prediction,) = predict_power_limits(launch.profile, launch, (None,), settings)
    return prediction


def test_a_locked_clock_sets_the_clock_of_compute_bound_work() -> None:
    fast = _at("rtx4000-ada", FMA, GpuSettings(core_clock_mhz=1815))
    slow = _at("rtx4000-ada", FMA, GpuSettings(core_clock_mhz=1485))
    assert (fast.clock_mhz, slow.clock_mhz) == (1815, 1485)
    overhead = load_profile("rtx4000-ada").launch_overhead_s
    assert (slow.time_s - overhead) / (fast.time_s - overhead) == pytest.approx(1815 / 1485,
                                                                                rel=0.01)
    # Power follows f·V(f)²: lower at the lower lock, and the energy of compute-bound work too.
    assert slow.power_w < fast.power_w
    assert slow.settings.core_clock_mhz == 1485 and slow.limit_w is None


def test_a_locked_clock_barely_moves_memory_bound_work() -> None:
    fast = _at("rtx4000-ada", COPY, GpuSettings(core_clock_mhz=1815))
    slow = _at("rtx4000-ada", COPY, GpuSettings(core_clock_mhz=1485))
    assert slow.time_s <= fast.time_s * 1.10 and slow.energy_j < fast.energy_j


def test_a_lock_the_power_limit_cannot_hold_runs_below_it() -> None:
    # The RTX A4000 at its boost clock under a limit at its lowest: the limit wins.
    profile = load_profile("rtx-a4000")
    unlocked = _at("rtx-a4000", FMA, GpuSettings(core_clock_mhz=profile.boost_clock_mhz))
    capped = _at("rtx-a4000", FMA, GpuSettings(core_clock_mhz=profile.boost_clock_mhz,
                                               power_limit_w=profile.power_limit_min_w))
    assert capped.clock_mhz < unlocked.clock_mhz <= profile.boost_clock_mhz
    assert capped.power_w <= profile.power_limit_min_w + 1e-6
    # At the default 140 W the lock holds within a few MHz (this FMA stream nearly fills it).
    assert unlocked.power_w <= profile.tdp_w + 1e-6
    assert capped.limit_w == profile.power_limit_min_w


def test_a_locked_memory_clock_scales_the_dram_bandwidth() -> None:
    profile = load_profile("rtx-a4000")
    half = at_memory_clock(profile, GpuSettings(memory_clock_mhz=profile.memory_clock_mhz / 2))
    assert half.memory_bandwidth_gbs == pytest.approx(profile.memory_bandwidth_gbs / 2)
    full = _at("rtx-a4000", COPY, GpuSettings())
    slow = _at("rtx-a4000", COPY, GpuSettings(memory_clock_mhz=profile.memory_clock_mhz / 2))
    assert slow.time_s > 1.5 * full.time_s


@pytest.mark.parametrize(("settings", "message"), [
    (GpuSettings(core_clock_mhz=2500), "a locked clock of 2500 MHz is outside the clocks the "
     "NVIDIA RTX 4000 Ada Generation profile models"),
    (GpuSettings(core_clock_mhz=100), "a locked clock of 100 MHz is outside"),
    (GpuSettings(memory_clock_mhz=12000), "a memory clock of 12000 MHz is outside"),
    (GpuSettings(power_limit_w=200), "a power limit of 200 W is above the NVIDIA RTX 4000 Ada "
     "Generation's maximum of 130 W"),
    (GpuSettings(power_limit_w=10), "a power limit of 10 W is below"),
])
def test_settings_the_gpu_cannot_take_are_refused(settings: GpuSettings, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        check_settings(load_profile("rtx4000-ada"), settings)
    low, high = clock_range_mhz(load_profile("rtx4000-ada"))
    check_settings(load_profile("rtx4000-ada"), GpuSettings(low, 9000, 130))
    check_settings(load_profile("rtx4000-ada"), GpuSettings(high))


def test_a_profile_without_a_memory_clock_cannot_lock_one() -> None:
    with pytest.raises(SettingsError, match="gives no memory clock"):
        check_settings(load_profile("rtx3090"), GpuSettings(memory_clock_mhz=9000))


# ----------------------------------------------------------------------------- the real space


WMMA_OPTIONS = (
    str(WMMA / "kernels" / "gemm_kernel_float.cu"), "--kernel", "wmma_complex_gemm_opt",
    "--gpu", "rtx4000-ada", "-I", str(WMMA / "kernels"), "-I", str(WMMA / "include"),
    "--std", "c++17", "-D__CUDA_NO_HALF_CONVERSIONS__",
    *(f"-D{d}" for d in ("kernel_tuner=1", "BATCH_SIZE=1", "M_GLOBAL=4096", "N_GLOBAL=4096",
                         "K_GLOBAL=4096", "NBIT=16", "M_PER_WMMA=16", "N_PER_WMMA=16",
                         "K_PER_WMMA=16", "K_PADDING=0", "WARP_SIZE=32", "COMPLEX_MIDDLE=1",
                         "A_ROW_MAJOR=1", "B_COL_MAJOR=1", "C_ROW_MAJOR=1")),
    "--define", "N_PER_WARP=N_PER_BLOCK // block_size_y",
    "--define", "M_PER_WARP=M_PER_BLOCK // block_size_z",
    "--problem-size", "4096,4096,1", "--grid-div-x", "N_PER_BLOCK", "--grid-div-y",
    "M_PER_BLOCK", "--grid-div-z", "1",
    "--tune", "block_size_x=32", "--tune", "block_size_y=2", "--tune", "block_size_z=2,4",
    "--tune", "M_PER_BLOCK=64", "--tune", "N_PER_BLOCK=64", "--tune", "NBUFFER=2",
)


def _cli(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", *argv], capture_output=True, text=True,
        timeout=900, env={"FLIPFLOP_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )


@pytest.fixture(scope="module")
def clock_space(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    """The wmma_gemm kernel at two code configurations × three locked clocks."""
    folder = tmp_path_factory.mktemp("clocks")
    emitted = folder / "shortlist.json"
    done = _cli("analyze", *WMMA_OPTIONS, "--tune", "nvml_gr_clock=1485,1665,1815",
                "--format", "json", "--shortlist", "1", "--emit-kernel-tuner", str(emitted),
                cache=folder / "cache")
    assert done.returncode == 0, done.stderr
    table = _cli("analyze", *WMMA_OPTIONS, "--tune", "nvml_gr_clock=1485,1665,1815", "--all",
                 cache=folder / "cache")
    assert table.returncode == 0, table.stderr
    return json.loads(done.stdout), table.stdout, emitted


def test_clocks_are_not_compiled_in(clock_space: tuple[dict[str, Any], str, Path]) -> None:
    report, _, _ = clock_space
    (kernel,) = report["kernels"]
    space = kernel["space"]
    assert space["configurations"] == 6 and space["variants"] == 2
    assert "nvml_gr_clock" not in space["unused_tunables"]


def test_each_clock_is_the_lock_of_its_prediction(
        clock_space: tuple[dict[str, Any], str, Path]) -> None:
    report, _, _ = clock_space
    configs = report["kernels"][0]["configs"]
    assert len(configs) == 6
    by_code: dict[int, dict[int, dict[str, Any]]] = {}
    for config in configs:
        lock = config["params"]["nvml_gr_clock"]
        assert config["locked_clock_mhz"] == lock and config["clock_mhz"] <= lock
        by_code.setdefault(config["params"]["block_size_z"], {})[lock] = config
    for clocks in by_code.values():
        # Memory-bound code keeps its time when the clock falls, compute-bound code does not.
        assert clocks[1485]["time_s"] >= clocks[1665]["time_s"] >= clocks[1815]["time_s"]
        assert clocks[1485]["power_w"] < clocks[1815]["power_w"]
    assert any(clocks[1485]["time_s"] > 1.1 * clocks[1815]["time_s"]
               for clocks in by_code.values())
    # The front and the recommendation range over clocks as well as shapes.
    recommendation = report["kernels"][0]["recommendation"]
    assert recommendation["params"]["nvml_gr_clock"] in (1485, 1665, 1815)
    assert recommendation["locked_clock_mhz"] == recommendation["params"]["nvml_gr_clock"]
    # Without a lock the GPU runs its highest clock: that is the launch as written.
    assert report["kernels"][0]["space"]["current"]["nvml_gr_clock"] == 1815


def test_the_table_shows_the_clock(clock_space: tuple[dict[str, Any], str, Path]) -> None:
    _, table, _ = clock_space
    header = next(line for line in table.splitlines() if "limit" in line and "time" in line)
    assert "clock MHz" in header
    rows = [line.split() for line in table.splitlines() if "(32×" in line]
    assert len(rows) == 6
    for row in rows:  # block_size_z, nvml_gr_clock, (block), limit, clock MHz, ...
        assert row[3] == "default" and row[4] == row[1]


def test_the_kernel_tuner_input_keeps_the_clocks_and_defines(
        clock_space: tuple[dict[str, Any], str, Path]) -> None:
    _, _, emitted = clock_space
    document = json.loads(emitted.read_text())
    assert document["tune_params"]["nvml_gr_clock"] == [1485, 1665, 1815]
    assert document["defines"] == {"N_PER_WARP": "N_PER_BLOCK // block_size_y",
                                   "M_PER_WARP": "M_PER_BLOCK // block_size_z"}
    assert "NVMLObserver" in document["usage"] and "observers=observers" in document["usage"]


@pytest.mark.parametrize(("tune", "message"), [
    ("nvml_gr_clock=1485,2500", "nvml_gr_clock=2500: a locked clock of 2500 MHz is outside"),
    ("nvml_pwr_limit=100,200", "nvml_pwr_limit=200: a power limit of 200 W is above the NVIDIA "
     "RTX 4000 Ada Generation's maximum of 130 W"),
    ("nvml_mem_clock=9500", "nvml_mem_clock=9500: a memory clock of 9500 MHz is outside"),
])
def test_a_setting_the_gpu_cannot_take_is_an_error_and_nothing_is_written(
        tmp_path: Path, tune: str, message: str) -> None:
    emitted = tmp_path / "shortlist.json"
    done = _cli("analyze", *WMMA_OPTIONS, "--tune", tune, "--emit-kernel-tuner", str(emitted),
                cache=tmp_path / "cache")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{WMMA / 'kernels' / 'gemm_kernel_float.cu'}: error: "
                                  f"{message}")
    assert not emitted.exists() and done.stdout == ""


def test_validate_predicts_every_measured_clock(tmp_path: Path) -> None:
    done = _cli("validate", str(WMMA / "RTX_4000_Ada.json.gz"), "--sample", "8", "--seed", "3",
                "--format", "json", cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["gpu"] == "rtx4000-ada" and result["configs"] == 8
    assert result["measured"] == ["time", "power", "energy"]
    assert result["failed"] == {"RuntimeFailedConfig": 430}
    assert result["measured_from"] == {"energy": "ps_energy", "power": "ps_power"}
    clocks = {c["parameters"]["nvml_gr_clock"] for c in result["configurations"]}
    assert len(clocks) > 1
    for key in ("spearman_power", "spearman_energy", "mape_power", "mape_energy"):
        assert result["metrics"][key] is not None
