"""Kernel Tuner caches written by FlipFlop: byte for byte what Kernel Tuner itself writes, read
back by Kernel Tuner (`read_cache`, simulation mode) and by FlipFlop, continued like Kernel
Tuner continues a cache, and still readable when the writer was stopped half way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kernel_tuner  # the dev extra installs it: the writer is checked against the real thing
import pytest
from kernel_tuner import util as kt_util
from kernel_tuner.interface import Options

from flipflop.formats.errors import FormatError
from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache
from flipflop.formats.kernel_tuner_writer import (
    RUNTIME_FAILED,
    CacheHeader,
    KernelTunerCacheWriter,
)

TUNE_PARAMS = {"block_size_x": [32, 64, 128], "tile_size": [1, 2], "use_method": [0, 1]}
HEADER = CacheHeader("NVIDIA H200", "cn_pnpoly", 20000000, TUNE_PARAMS)


def _entry(bx: int, tile: int, method: int, time_ms: float, energy: float) -> dict[str, Any]:
    return {"block_size_x": bx, "tile_size": tile, "use_method": method, "time": time_ms,
            "times": [time_ms * 0.99, time_ms * 1.01], "compile_time": 120.5,
            "verification_time": 3.0, "benchmark_time": 1100.0, "strategy_time": 0,
            "framework_time": 2.5, "timestamp": "2026-11-20 10:00:00.000000+00:00",
            "nvml_energy": energy, "nvml_power": energy / time_ms * 1e3, "core_freq": 1980.0,
            "temperature": 41.0}


ENTRIES = {
    "32,1,0": _entry(32, 1, 0, 12.5, 6.25),
    "64,2,1": _entry(64, 2, 1, 8.0, 3.5),
    "128,1,1": {"block_size_x": 128, "tile_size": 1, "use_method": 1, "time": RUNTIME_FAILED,
                "compile_time": 100.0, "verification_time": 0, "benchmark_time": 0,
                "strategy_time": 0, "framework_time": 1.0,
                "timestamp": "2026-11-20 10:00:05.000000+00:00"},
}


def _kernel_tuner_writes(path: Path) -> str:
    """The same cache written by Kernel Tuner's own process_cache/store_cache/close_cache."""
    kernel_options = Options(kernel_name="cn_pnpoly", problem_size=20000000)
    tuning_options = Options(tune_params=TUNE_PARAMS, objective="time", simulation_mode=False)

    class Device:
        name = "NVIDIA H200"

    class Runner:
        simulation_mode = False

        def get_device_info(self) -> Device:
            return Device()

    cache = kt_util.process_cache(str(path), kernel_options, tuning_options, Runner())
    for key, entry in ENTRIES.items():
        kt_util.store_cache(key, entry, str(path), cache)
    kt_util.close_cache(str(path))
    return path.read_text()


def test_the_file_is_byte_for_byte_kernel_tuners(tmp_path: Path) -> None:
    ours = tmp_path / "ours.json"
    with KernelTunerCacheWriter(ours, HEADER) as writer:
        for key, entry in ENTRIES.items():
            writer.append(key, entry)
    assert ours.read_text() == _kernel_tuner_writes(tmp_path / "theirs.json")


def test_kernel_tuner_reads_it_and_simulates_a_tuning_run(tmp_path: Path) -> None:
    path = tmp_path / "pnpoly.json"
    with KernelTunerCacheWriter(path, HEADER) as writer:
        for key, entry in ENTRIES.items():
            writer.append(key, entry)
    data = kt_util.read_cache(str(path), open_cache=False)
    assert data["device_name"] == "NVIDIA H200" and set(data["cache"]) == set(ENTRIES)
    assert isinstance(data["cache"]["128,1,1"]["__error__"], kt_util.RuntimeFailedConfig)
    results, env = kernel_tuner.tune_cache(str(path), objective="nvml_energy",
                                          objective_higher_is_better=False, quiet=True)
    best = env["best_config"]
    assert (best["block_size_x"], best["nvml_energy"]) == (64, 3.5)
    assert {r["block_size_x"] for r in results if "__error__" not in r} == {32, 64}
    # FlipFlop's reader: times in seconds, energy in joules, the failure kept as a failure.
    space = read_kernel_tuner_cache(path)
    by_key = {entry.key: entry for entry in space.entries}
    assert by_key["64,2,1"].time_s == pytest.approx(8.0e-3)
    assert by_key["64,2,1"].energy_j == 3.5 and by_key["64,2,1"].power_w == pytest.approx(437.5)
    assert by_key["128,1,1"].failure == RUNTIME_FAILED
    assert space.measured == ("time", "power", "energy") and space.complete


def test_a_stopped_writer_leaves_a_cache_both_readers_read(tmp_path: Path) -> None:
    path = tmp_path / "stopped.json"
    writer = KernelTunerCacheWriter(path, HEADER)
    writer.append("32,1,0", ENTRIES["32,1,0"])
    # No close(): the process was killed after its first entry.
    assert path.read_text().endswith(",")
    space = read_kernel_tuner_cache(path)
    assert not space.complete and [e.key for e in space.entries] == ["32,1,0"]
    assert list(kt_util.read_cache(str(path), open_cache=False)["cache"]) == ["32,1,0"]


def test_an_existing_cache_is_continued_as_kernel_tuner_continues_it(tmp_path: Path) -> None:
    path = tmp_path / "continued.json"
    with KernelTunerCacheWriter(path, HEADER) as writer:
        writer.append("32,1,0", ENTRIES["32,1,0"])
    with KernelTunerCacheWriter(path, HEADER) as writer:
        assert "32,1,0" in writer and "64,2,1" not in writer
        with pytest.raises(ValueError, match="already holds"):
            writer.append("32,1,0", ENTRIES["32,1,0"])
        writer.append("64,2,1", ENTRIES["64,2,1"])
    assert list(json.loads(path.read_text())["cache"]) == ["32,1,0", "64,2,1"]
    # A stopped cache is continued too: its missing braces are restored first.
    writer = KernelTunerCacheWriter(path, HEADER)
    writer.append("128,1,1", ENTRIES["128,1,1"])
    del writer
    with KernelTunerCacheWriter(path, HEADER) as writer:
        assert len(writer.entries) == 3
    assert path.read_text() == _kernel_tuner_writes(tmp_path / "theirs.json")


def test_a_cache_of_another_device_or_kernel_is_not_continued(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    with KernelTunerCacheWriter(path, HEADER):
        pass
    assert json.loads(path.read_text())["cache"] == {}
    other = CacheHeader("NVIDIA H100 80GB HBM3", "cn_pnpoly", 20000000, TUNE_PARAMS)
    with pytest.raises(FormatError, match="device_name is 'NVIDIA H200'"):
        KernelTunerCacheWriter(path, other)
    not_a_cache = tmp_path / "list.json"
    not_a_cache.write_text("[1, 2]")
    with pytest.raises(FormatError, match="not a Kernel Tuner cache"):
        KernelTunerCacheWriter(not_a_cache, HEADER)


def test_non_finite_numbers_are_refused_not_written(tmp_path: Path) -> None:
    path = tmp_path / "nan.json"
    with KernelTunerCacheWriter(path, HEADER) as writer:
        with pytest.raises(ValueError, match="nan"):
            writer.append("32,1,0", {**ENTRIES["32,1,0"], "times": [1.0, float("nan")]})
        writer.append("64,2,1", ENTRIES["64,2,1"])
    assert list(json.loads(path.read_text())["cache"]) == ["64,2,1"]
