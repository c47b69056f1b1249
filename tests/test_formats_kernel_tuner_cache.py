"""Kernel Tuner caches: every measured cache reads, failures are recognised, unfinished caches
read as Kernel Tuner reads them, and bad files give a FormatError naming the file."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from flipflop.formats.errors import FormatError
from flipflop.formats.kernel_tuner_cache import (
    close_unfinished,
    parse_kernel_tuner_cache,
    read_kernel_tuner_cache,
)
from flipflop.formats.measured import MeasuredSpace
from flipflop.formats.measurements import read_measured_space
from flipflop.formats.t1 import read_t1
from flipflop.formats.tune_file import read_tune_file
from flipflop.space.kernel_tuner import kernel_tuner_search_space
from flipflop.space.tunables import search_space

MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"

# (entries, failures by reason, device) of each cache, counted in the files themselves.
CACHES: dict[str, tuple[int, dict[str, int], str]] = {
    "convolution/RTX_2080_Ti.json.gz": (
        6768, {"CompilationFailedConfig": 1426, "RuntimeFailedConfig": 86},
        "NVIDIA GeForce RTX 2080 Ti"),
    "convolution/RTX_3090.json.gz": (
        6768, {"CompilationFailedConfig": 1426, "RuntimeFailedConfig": 122},
        "NVIDIA GeForce RTX 3090"),
    "convolution_milo/A6000.json.gz": (
        4362, {"CompilationFailedConfig": 252, "RuntimeFailedConfig": 221}, "NVIDIA RTX A6000"),
    "dedispersion/A6000.json.gz": (11130, {}, "NVIDIA RTX A6000"),
    "gemm/RTX_2080_Ti.json.gz": (17956, {}, "NVIDIA GeForce RTX 2080 Ti"),
    "gemm/RTX_3090.json.gz": (17956, {}, "NVIDIA GeForce RTX 3090"),
    "pnpoly/RTX_2080_Ti.json.gz": (4092, {"RuntimeFailedConfig": 358},
                                   "NVIDIA GeForce RTX 2080 Ti"),
    "pnpoly/RTX_3090.json.gz": (4092, {"RuntimeFailedConfig": 318}, "NVIDIA GeForce RTX 3090"),
}
KERNEL_FILES = {"convolution_milo": "convolution.cu", "dedispersion": "dedispersion.cu"}


def test_the_measured_data_is_there() -> None:
    assert MEASURED.is_dir(), f"{MEASURED} is missing: the tests need the shared measured data"


@cache
def _read(relative: str) -> MeasuredSpace:
    return read_kernel_tuner_cache(MEASURED / relative)


@cache
def _raw(relative: str) -> dict[str, Any]:
    with gzip.open(MEASURED / relative, "rt") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


@pytest.mark.parametrize("relative", list(CACHES))
def test_every_measured_cache_reads(relative: str) -> None:
    entries, failures, device = CACHES[relative]
    measured = _read(relative)
    raw = _raw(relative)
    assert measured.format == "kernel_tuner_cache" and measured.complete
    assert measured.device_name == device
    assert measured.kernel_name == raw["kernel_name"]
    assert measured.names == tuple(raw["tune_params_keys"])
    assert len(measured.entries) == entries
    assert Counter(entry.failure for entry in measured.failed) == Counter(failures)
    assert measured.measured == ("time",)  # these caches hold no power measurements
    assert all(entry.time_s is None and entry.times_s == () for entry in measured.failed)
    for entry in measured.entries[::97]:
        cached = raw["cache"][entry.key]
        assert dict(entry.config) == {name: cached[name] for name in raw["tune_params_keys"]}
        if not entry.failed:
            assert entry.time_s == pytest.approx(cached["time"] / 1000, rel=1e-12)
            assert entry.times_s == pytest.approx([t / 1000 for t in cached.get("times", [])])
        assert entry.energy_j is None and entry.power_w is None
    assert measured.entry(measured.entries[5].config) is measured.entries[5]


def test_problem_size_and_objective_as_written() -> None:
    assert _read("pnpoly/RTX_3090.json.gz").problem_size == (20_000_000,)
    assert _read("dedispersion/A6000.json.gz").problem_size == (25000, 2048, 1)
    assert _read("gemm/RTX_3090.json.gz").objective == "time"
    assert _read("gemm/RTX_2080_Ti.json.gz").objective is None  # written before the field existed


@pytest.mark.parametrize("folder", ["convolution", "convolution_milo", "dedispersion", "pnpoly"])
def test_each_cache_holds_exactly_the_search_space_of_its_t1_file(folder: str) -> None:
    kernel = MEASURED / folder / KERNEL_FILES[folder] if folder in KERNEL_FILES else None
    t1 = read_t1(MEASURED / folder / "T1.json", kernel_file=kernel)
    for relative in CACHES:
        if relative.startswith(folder + "/"):
            measured = {entry.config for entry in _read(relative).entries}
            assert measured == set(t1.space.configurations)


def test_the_gemm_caches_predate_the_last_restriction_of_the_tuning_script() -> None:
    # tune_gemm.py.txt lists eight restrictions; the caches hold exactly the configurations of
    # the first seven: the eighth (no 128x128 tile with an 8x8 block) came later.
    restrictions = [
        "KWG % KWI == 0", "MWG % (MDIMC * VWM) == 0", "NWG % (NDIMC * VWN) == 0",
        "MWG % (MDIMA * VWM) == 0", "NWG % (NDIMB * VWN) == 0",
        "KWG % ((MDIMC * NDIMC)/MDIMA) == 0", "KWG % ((MDIMC * NDIMC)/NDIMB) == 0",
        "not (MWG == 128 and NWG == 128 and MDIMC == 8 and NDIMC == 8)",
    ]
    for relative in ("gemm/RTX_2080_Ti.json.gz", "gemm/RTX_3090.json.gz"):
        measured = _read(relative)
        configs = {entry.config for entry in measured.entries}
        assert configs == set(kernel_tuner_search_space(measured.tunables, restrictions[:7]))
        excluded = configs - set(kernel_tuner_search_space(measured.tunables, restrictions))
        assert len(excluded) == 484
        assert all(c["MWG"] == c["NWG"] == 128 and c["MDIMC"] == c["NDIMC"] == 8 for c in excluded)


def test_a_cache_is_a_tune_file() -> None:
    tunables = read_tune_file(MEASURED / "gemm/RTX_3090.json.gz")
    assert tunables == _read("gemm/RTX_3090.json.gz").tunables
    assert search_space(tunables).size == 82_944


# ----------------------------------------------------------------------------- unfinished caches


def _as_kernel_tuner_writes_it(relative: str, count: int) -> str:
    """A cache the way Kernel Tuner writes it while tuning (util.process_cache, store_cache)."""
    raw = _raw(relative)
    header = {key: raw[key] for key in ("device_name", "kernel_name", "problem_size",
                                        "tune_params_keys", "tune_params")}
    header["objective"] = "time"
    header["cache"] = {}
    text = json.dumps(header, indent="")[:-3]  # all but the closing "}\n}"
    for key in list(raw["cache"])[:count]:
        text += "\n" + json.dumps({key: raw["cache"][key]})[1:-1] + ","
    return text


def test_an_unfinished_cache_reads_as_kernel_tuner_reads_it(tmp_path: Path) -> None:
    text = _as_kernel_tuner_writes_it("pnpoly/RTX_3090.json.gz", 40)
    path = tmp_path / "pnpoly.json"
    path.write_text(text)
    measured = read_kernel_tuner_cache(path)
    assert not measured.complete
    assert [entry.key for entry in measured.entries] == list(_raw("pnpoly/RTX_3090.json.gz")
                                                            ["cache"])[:40]
    assert measured.entries == _read("pnpoly/RTX_3090.json.gz").entries[:40]
    # util.close_cache: the trailing comma becomes the closing braces.
    path.write_text(text[:-1] + "}\n}")
    closed = read_kernel_tuner_cache(path)
    assert closed.complete and closed.entries == measured.entries


def test_a_cache_with_only_its_header() -> None:
    text = _as_kernel_tuner_writes_it("pnpoly/RTX_3090.json.gz", 0)
    assert text.endswith('"cache": {')
    measured = parse_kernel_tuner_cache(text, "header.json")
    assert measured.entries == () and not measured.complete


def test_closing_an_unfinished_cache() -> None:
    assert close_unfinished('{"a": {"b": 1},') == '{"a": {"b": 1}}\n}'
    assert close_unfinished('{"cache": {}\n}') is None
    assert close_unfinished('{"cache": {"x": {}}}') is None


def test_an_entry_cut_off_midway_is_an_error_naming_the_file() -> None:
    text = _as_kernel_tuner_writes_it("pnpoly/RTX_3090.json.gz", 3)[:-40]
    with pytest.raises(FormatError, match=r"^cut\.json:\d+:\d+: not valid JSON: .* still being"):
        parse_kernel_tuner_cache(text, "cut.json")


# ----------------------------------------------------------------------------- power and energy


def test_nvml_energy_and_power_are_read_in_joules_and_watts() -> None:
    # Kernel Tuner's NVMLObserver reports nvml_power in W (median of the readings) and
    # nvml_energy in J (power x time of one run); the numbers here are format fixtures.
    raw = _raw("pnpoly/RTX_3090.json.gz")
    keys = list(raw["cache"])[:3]
    cache_entries = {key: dict(raw["cache"][key]) for key in keys}
    cache_entries[keys[0]].update(nvml_power=250.0, nvml_energy=250.0 * 0.0435)
    cache_entries[keys[1]].update(nvml_power=240.5, nvml_energy="RuntimeFailedConfig")
    document = {key: raw[key] for key in ("device_name", "kernel_name", "problem_size",
                                          "tune_params_keys", "tune_params")}
    document["cache"] = cache_entries
    measured = parse_kernel_tuner_cache(json.dumps(document), "nvml.json")
    first, second, third = measured.entries
    assert first.power_w == 250.0 and first.energy_j == pytest.approx(10.875)
    assert second.failed and second.failure == "RuntimeFailedConfig" and second.power_w is None
    assert third.energy_j is None and third.power_w is None
    assert measured.measured == ("time", "power", "energy")


# ----------------------------------------------------------------------------- bad files


def _write(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def _document(**changes: Any) -> dict[str, Any]:
    raw = _raw("pnpoly/RTX_3090.json.gz")
    document = {key: raw[key] for key in ("device_name", "kernel_name", "problem_size",
                                          "tune_params_keys", "tune_params")}
    document["cache"] = {key: raw["cache"][key] for key in list(raw["cache"])[:5]}
    document.update(changes)
    return document


def test_bad_files_are_named_in_the_error(tmp_path: Path) -> None:
    cases: list[tuple[str, bytes, str]] = [
        ("text.json.gz", gzip.compress(b"no json here"), "not valid JSON"),
        ("truncated.json.gz", gzip.compress(b'{"cache": {}}' * 1000)[:-20],
         "gzip stream is truncated"),
        ("binary.json", b"\xff\xfe\x00garbage", "not UTF-8 text"),
        ("empty.json", b"", "not valid JSON"),
        ("list.json", b"[1, 2]", "not a Kernel Tuner cache: the file holds a list"),
        ("t1.json", (MEASURED / "pnpoly/T1.json").read_bytes(), "it looks like a T1 input"),
        ("t4.json", b'{"results": []}', "it looks like T4 results"),
        ("wrong-key.json", json.dumps(_document(cache={"1,2,3,4": {
            "between_method": 0, "block_size_x": 32, "tile_size": 1, "use_method": 0,
            "time": 1.0}})).encode(), "cache entry '1,2,3,4' does not match its parameters, "
                                      "which give the key '0,32,1,0'"),
        ("missing-value.json", json.dumps(_document(cache={"0,32,1,0": {
            "between_method": 0, "block_size_x": 32, "tile_size": 1, "time": 1.0}})).encode(),
         "cache entry '0,32,1,0' has no value for use_method"),
        ("keys.json", json.dumps(_document(tune_params_keys=["block_size_x"])).encode(),
         "does not name the parameters of 'tune_params'"),
        ("values.json", json.dumps(_document(tune_params={
            "between_method": [0, 0], "block_size_x": [32], "tile_size": [1],
            "use_method": [0]})).encode(), "lists the value 0 twice"),
        ("times.json", json.dumps(_document(cache={"0,32,1,0": {
            "between_method": 0, "block_size_x": 32, "tile_size": 1, "use_method": 0,
            "time": 1.0, "times": [1.0, "x"]}})).encode(), "'times' holds the string 'x'"),
    ]
    for name, content, message in cases:
        path = _write(tmp_path, name, content)
        with pytest.raises(FormatError) as caught:
            read_kernel_tuner_cache(path)
        assert str(caught.value).startswith(str(path)), caught.value
        assert message in caught.value.reason, (name, caught.value.reason)


def test_missing_and_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no such file"):
        read_kernel_tuner_cache(tmp_path / "absent.json")
    with pytest.raises(FormatError, match="is a directory"):
        read_kernel_tuner_cache(tmp_path)


def test_a_plain_json_cache_reads_like_its_gzip(tmp_path: Path) -> None:
    path = tmp_path / "pnpoly.json"
    with gzip.open(MEASURED / "pnpoly/RTX_2080_Ti.json.gz", "rb") as handle:
        path.write_bytes(handle.read())
    assert read_kernel_tuner_cache(path).entries == _read("pnpoly/RTX_2080_Ti.json.gz").entries


# ---------------------------------------------------------------------- as Kernel Tuner reads


def test_the_tensor_core_gemm_cache_skips_its_run_time_failures() -> None:
    # Its failures hold "RuntimeFailedConfig" in the objective (TFLOPS/J) and have no time.
    measured = read_kernel_tuner_cache(MEASURED / "wmma_gemm/RTX_4000_Ada.json.gz")
    raw = _raw("wmma_gemm/RTX_4000_Ada.json.gz")
    assert measured.device_name == "NVIDIA RTX 4000 Ada Generation" and measured.complete
    assert len(measured.entries) == 5120 and measured.usable == 4690
    assert measured.failures == (("RuntimeFailedConfig", 430),)
    assert all("time" not in raw["cache"][entry.key] for entry in measured.failed)
    # PowerSensor3 through Kernel Tuner's PowerSensorObserver: J per launch and W.
    assert (measured.energy_field, measured.power_field) == ("ps_energy", "ps_power")
    assert measured.measured == ("time", "power", "energy")
    for entry in measured.succeeded[::211]:
        cached = raw["cache"][entry.key]
        assert entry.energy_j == cached["ps_energy"] and entry.power_w == cached["ps_power"]
        assert entry.time_s == pytest.approx(cached["time"] / 1000, rel=1e-12)
    assert measured.warnings == ()


def test_the_interrupted_expdist_cache_reads_with_nvml_energy_and_derived_power() -> None:
    measured = read_kernel_tuner_cache(MEASURED / "expdist/RTX_A4000.json.gz")
    raw_text = gzip.decompress((MEASURED / "expdist/RTX_A4000.json.gz").read_bytes()).decode()
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw_text)  # the run was stopped: no closing braces
    assert not measured.complete and measured.problem_size == ("callable",)
    assert len(measured.entries) == 2885 and measured.usable == 1505
    assert measured.failures == (("CompilationFailedConfig", 1380),)
    assert (measured.energy_field, measured.power_field) == ("nvml_energy", None)
    first = measured.succeeded[0]
    assert first.energy_j == pytest.approx(25.699838250061035)
    assert first.power_w == pytest.approx(25.699838250061035 / 0.44284869384765625)
    assert measured.measured == ("time", "power", "energy")


def _observed(entries: dict[str, dict[str, Any]]) -> str:
    document = _document()
    raw = _raw("pnpoly/RTX_3090.json.gz")
    keys = list(raw["cache"])[:len(entries)]
    document["cache"] = {key: {**raw["cache"][key], **extra}
                         for key, extra in zip(keys, entries.values(), strict=True)}
    return json.dumps(document)


def test_every_observer_field_is_read_the_meter_before_nvml() -> None:
    pmt = parse_kernel_tuner_cache(_observed({"a": {"nvidia_energy": 2.0, "nvidia_power": 50.0},
                                              "b": {"nvidia_energy": 3.0}}), "pmt.json")
    assert (pmt.energy_field, pmt.power_field) == ("nvidia_energy", "nvidia_power")
    first, second = pmt.entries
    assert (first.energy_j, first.power_w) == (2.0, 50.0)
    assert second.power_w == pytest.approx(3.0 / second.time_s)  # derived: energy over time
    both = parse_kernel_tuner_cache(_observed({"a": {"nvml_energy": 2.0, "ps_energy": 1.5,
                                                     "nvml_power": 60.0}}), "both.json")
    assert (both.energy_field, both.power_field) == ("ps_energy", "nvml_power")
    assert both.entries[0].energy_j == 1.5
    assert ("nvml_energy", 2.0) in both.entries[0].metrics  # kept, not lost
    power_only = parse_kernel_tuner_cache(_observed({"a": {"tegra_power": 10.0}}), "t.json")
    entry = power_only.entries[0]
    assert entry.energy_j == pytest.approx(10.0 * entry.time_s)


def test_negative_energy_is_left_out_with_a_warning() -> None:
    measured = parse_kernel_tuner_cache(
        _observed({"a": {"ps_energy": -0.5}, "b": {"ps_energy": 1.0}, "c": {"ps_energy": -2.0}}),
        "negative.json")
    first, second, third = measured.entries
    assert first.failed and third.failed and not second.failed
    assert first.energy_j is None and first.time_s is None
    (warning,) = measured.warnings
    assert warning.startswith("2 entries have a negative or non-finite ps_energy (the first: '")
    assert measured.failures == (("invalid ps_energy", 2),)


def test_an_entry_without_a_time_is_skipped_and_a_file_of_nothing_else_is_an_error(
        tmp_path: Path) -> None:
    document = _document(cache={"0,32,1,0": {
        "between_method": 0, "block_size_x": 32, "tile_size": 1, "use_method": 0}})
    measured = parse_kernel_tuner_cache(json.dumps(document), "no-time.json")
    assert measured.failures == (("no time", 1),) and measured.usable == 0
    path = _write(tmp_path, "no-time.json", json.dumps(document).encode())
    with pytest.raises(FormatError) as caught:
        read_measured_space(path)
    assert str(caught.value) == (f"{path}: nothing to validate: all 1 entries failed or hold "
                                 "no time (no time 1)")
    document["cache"] = {}
    path.write_text(json.dumps(document))
    with pytest.raises(FormatError, match="the file holds no measurements"):
        read_measured_space(path)


def test_the_tensor_core_gemm_cache_holds_exactly_the_space_of_its_t1_file() -> None:
    # T1.json was written from tune_gemm.py.txt: ten clocks × the restricted code space.
    t1 = read_t1(MEASURED / "wmma_gemm" / "T1.json")
    measured = read_kernel_tuner_cache(MEASURED / "wmma_gemm" / "RTX_4000_Ada.json.gz")
    assert [entry.config for entry in measured.entries] == list(t1.space.configurations)
    assert t1.kernel_name == "wmma_complex_gemm_opt"
    assert t1.space.names[0] == "nvml_gr_clock" and len(t1.launch.derived) == 17


def test_the_interrupted_expdist_cache_is_the_start_of_its_t1_space() -> None:
    # Kernel Tuner measured the space in its own order and was stopped: the cache holds the
    # first 2,885 configurations of the 294,000 the script's restrictions leave.
    t1 = read_t1(MEASURED / "expdist" / "T1.json")
    measured = read_kernel_tuner_cache(MEASURED / "expdist" / "RTX_A4000.json.gz")
    assert t1.space.size == 294_000
    order = [entry.config for entry in measured.entries]
    assert list(t1.space.configurations[:len(order)]) == order
    assert t1.scalar_values == (("m", 32768.0), ("n", 32768.0))
