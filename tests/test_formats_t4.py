"""T4 results files, read against their T1 file into the same measured space as a cache.

The two files in tests/data/t4 hold twelve real pnpoly measurements (RTX 3090) in the two shapes
Kernel Tuner writes T4 in; tests/data/t4/make_t4.py made them from the measured cache.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from flipflop.formats.errors import FormatError
from flipflop.formats.t1 import read_t1
from flipflop.formats.t4 import read_t4

REPOSITORY = Path(__file__).resolve().parents[1]
MEASURED = REPOSITORY / "calibration" / "data" / "measured"
T4 = REPOSITORY / "tests" / "data" / "t4"
PNPOLY_T1 = read_t1(MEASURED / "pnpoly" / "T1.json")


def _cache() -> dict[str, Any]:
    with gzip.open(MEASURED / "pnpoly" / "RTX_3090.json.gz", "rt") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


@pytest.mark.parametrize("name", ["pnpoly_RTX_3090_results.json", "pnpoly_RTX_3090_T4.json"])
def test_t4_files_read_to_the_measurements_of_the_cache(name: str) -> None:
    measured = read_t4(T4 / name, PNPOLY_T1)
    cache = _cache()["cache"]
    assert measured.format == "t4"
    assert measured.kernel_name == "cn_pnpoly"
    assert measured.names == ("between_method", "block_size_x", "tile_size", "use_method")
    assert measured.problem_size == (20_000_000,)
    assert measured.objective == "time"
    assert measured.measured == ("time",)
    assert len(measured.entries) == 12
    assert [entry.failure for entry in measured.failed] == ["runtime"] * 3
    for entry in measured.entries:
        cached = cache[entry.key]
        assert dict(entry.config) == {name: cached[name] for name in measured.names}
        assert entry.config in PNPOLY_T1.space
        if entry.failed:
            assert cached["time"] == "RuntimeFailedConfig"
            assert entry.time_s is None and entry.times_s == ()
        else:
            assert entry.time_s == pytest.approx(cached["time"] / 1000, rel=1e-12)
            assert entry.times_s == pytest.approx([t / 1000 for t in cached["times"]])


def _document(results: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"schema_version": "1.0.0", "results": results, **extra}


def _result(measurements: list[dict[str, Any]], invalidity: str = "correct",
            runtimes: list[float] | None = None, **configuration: Any) -> dict[str, Any]:
    values = {"between_method": 0, "block_size_x": 32, "tile_size": 1, "use_method": 0}
    values.update(configuration)
    return {"configuration": values, "invalidity": invalidity, "correctness": 1,
            "times": {"runtimes": runtimes or []}, "measurements": measurements,
            "objectives": ["time"]}


def _read(tmp_path: Path, document: dict[str, Any]) -> Any:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    return read_t4(path, PNPOLY_T1)


def test_units_of_time_energy_and_power(tmp_path: Path) -> None:
    # Format fixtures: the numbers are chosen to show each unit conversion.
    measured = _read(tmp_path, _document([
        _result([{"name": "time", "value": 2.5, "unit": "s"},
                 {"name": "nvml_energy", "value": 300, "unit": "mJ"},
                 {"name": "nvml_power", "value": 120.0, "unit": "W"},
                 {"name": "GFLOP/s", "value": 11.0, "unit": ""}]),
        _result([{"name": "time", "value": 1500, "unit": "us"},
                 {"name": "energy", "value": 2.0, "unit": ""},
                 {"name": "power", "value": 90000, "unit": "mW"}], block_size_x=64),
        _result([{"name": "time", "value": 7, "unit": "milliseconds"}], block_size_x=96),
    ]))
    first, second, third = measured.entries
    assert (first.time_s, first.energy_j, first.power_w) == (2.5, pytest.approx(0.3), 120.0)
    assert first.metrics == (("GFLOP/s", 11.0),)
    assert (second.time_s, second.energy_j, second.power_w) == (
        pytest.approx(1.5e-3), 2.0, pytest.approx(90.0))
    assert third.time_s == pytest.approx(7e-3) and third.energy_j is None
    assert measured.measured == ("time", "power", "energy")


def test_times_without_a_unit_take_the_files_then_the_t1_then_kernel_tuners(
    tmp_path: Path,
) -> None:
    result = _result([{"name": "time", "value": 4.0, "unit": ""}], runtimes=[3.0, 5.0])
    in_file = _read(tmp_path, _document([result], metadata={"timeunit": "seconds"}))
    assert in_file.entries[0].time_s == 4.0 and in_file.entries[0].times_s == (3.0, 5.0)
    default = _read(tmp_path, _document([result]))
    assert default.entries[0].time_s == pytest.approx(4e-3)  # Kernel Tuner writes ms


def test_the_time_is_the_mean_of_the_runs_when_no_measurement_gives_it(tmp_path: Path) -> None:
    measured = _read(tmp_path, _document([_result([], runtimes=[1.0, 2.0, 6.0])]))
    assert measured.entries[0].time_s == pytest.approx(3e-3)


def test_a_string_for_a_number_is_a_failure(tmp_path: Path) -> None:
    measured = _read(tmp_path, _document([
        _result([{"name": "time", "value": "CompilationFailedConfig", "unit": "ms"}]),
        _result([{"name": "time", "value": 1.0, "unit": "ms"}], invalidity="compile",
                block_size_x=64),
    ]))
    assert [entry.failure for entry in measured.entries] == ["CompilationFailedConfig",
                                                             "compile"]
    assert all(entry.time_s is None for entry in measured.entries)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (_document([_result([], tile=3)]), "names 'tile', which the T1 file"),
        (_document([_result([], block_size_x=33)]), "block_size_x=33 is not among the T1"),
        (_document([{"configuration": {"between_method": 0}, "invalidity": "correct"}]),
         "no value for block_size_x, tile_size, use_method"),
        (_document([_result([], invalidity="broken")]), "invalidity is the string 'broken'"),
        (_document([_result([{"name": "time", "value": 1, "unit": "fortnights"}])]),
         "the unit of time the string 'fortnights' is unknown"),
        (_document([_result([{"name": "nvml_power", "value": 1, "unit": "hp"}])]),
         "unknown unit of power 'hp'"),
        (_document([_result([{"name": "time", "value": [1, 2], "unit": "ms"}])]),
         "measurement time is a list, not a number"),
        (_document([_result([{"value": 1}])]), "measurements[0] must be an object with a name"),
        (_document([_result([])], metadata={"timeunit": "eons"}), "the time unit"),
        ({"cache": {}}, "not a T4 results file: no 'results' list (it looks like a Kernel Tuner"),
        ([], "not a T4 results file"),
    ],
)
def test_bad_t4_files_are_clear_errors(tmp_path: Path, document: Any, message: str) -> None:
    with pytest.raises(FormatError) as caught:
        _read(tmp_path, document)
    assert caught.value.path == str(tmp_path / "results.json")
    assert message in caught.value.reason, caught.value.reason
