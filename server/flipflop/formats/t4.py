"""T4 results files, read against the T1 file that describes their kernel.

Schema: kernel_tuner/schema/T4/1.0.0/results-schema.json (from odgaard/TuningSchema):
`{"schema_version": "1.0.0", "results": [...]}`; each result has `configuration` (name → value),
`invalidity` ("correct", "compile", "runtime", "timeout", "correctness", "constraints"),
`correctness`, `times` (`runtimes`, compilation, framework, ...), `measurements` (a list of
`{"name", "value", "unit"}`) and `objectives`. Kernel Tuner writes it in two ways:
`file_utils.store_output_file` (every measurement, unit "ms" for names starting with "time" and
"" otherwise) and `cache.convert.convert_cache_to_t4` (the objective only, unit "", and
`"metadata": {"timeunit": "miliseconds"}`).

Units: a measurement's own unit when it has one; otherwise, for times, the file's
metadata.timeunit, then the T1 file's General.TimeUnit, then milliseconds, the unit Kernel Tuner
writes every time in; energy without a unit is joules and power watts (NVMLObserver's units).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_json
from flipflop.formats.measured import MeasuredConfig, MeasuredSpace
from flipflop.formats.t1 import T1Input
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import cache_key
from flipflop.space.tunables import Configuration

FORMAT = "t4"
INVALIDITIES = ("timeout", "compile", "runtime", "correctness", "constraints", "correct")
TIME_NAMES = ("time",)
ENERGY_NAMES = ("nvml_energy", "energy")
POWER_NAMES = ("nvml_power", "power")

_TIME_SYMBOLS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_TIME_WORDS = {
    "second": 1.0, "seconds": 1.0, "sec": 1.0,
    "millisecond": 1e-3, "milliseconds": 1e-3,
    "miliseconds": 1e-3,  # sic: Kernel Tuner's convert_cache_to_t4
    "microsecond": 1e-6, "microseconds": 1e-6,
    "nanosecond": 1e-9, "nanoseconds": 1e-9,
}
_ENERGY_SYMBOLS = {"J": 1.0, "mJ": 1e-3, "kJ": 1e3, "uJ": 1e-6, "µJ": 1e-6, "μJ": 1e-6}
_ENERGY_WORDS = {"joule": 1.0, "joules": 1.0, "millijoule": 1e-3, "millijoules": 1e-3}
_POWER_SYMBOLS = {"W": 1.0, "mW": 1e-3, "kW": 1e3}
_POWER_WORDS = {"watt": 1.0, "watts": 1.0, "milliwatt": 1e-3, "milliwatts": 1e-3}


def read_t4(path: str | Path, t1: T1Input) -> MeasuredSpace:
    return t4_from_json(read_json(path), path, t1)


def t4_from_json(data: object, path: str | Path, t1: T1Input) -> MeasuredSpace:
    """The measured space of already parsed T4 results, against their T1 file."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        hint = " (it looks like a Kernel Tuner cache)" if isinstance(data, dict) and \
            "cache" in data else ""
        raise FormatError(path, f"not a T4 results file: no 'results' list{hint}")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    default_time = _time_scale(metadata.get("timeunit") or t1.time_unit or "ms", "the time unit",
                               path)
    entries = tuple(
        _result(position, result, t1, default_time, path)
        for position, result in enumerate(data["results"])
    )
    objectives = [entry for entry in data["results"] if isinstance(entry, dict)]
    objective = None
    if objectives and isinstance(objectives[0].get("objectives"), list) and \
            objectives[0]["objectives"] and isinstance(objectives[0]["objectives"][0], str):
        objective = objectives[0]["objectives"][0]
    return MeasuredSpace(
        path=str(path),
        format=FORMAT,
        kernel_name=t1.kernel_name,
        device_name=None,
        problem_size=tuple(extent if isinstance(extent, int) else extent.text
                           for extent in t1.launch.problem_size),
        tunables=t1.tunables,
        entries=entries,
        objective=objective,
    )


def _result(position: int, result: object, t1: T1Input, default_time: float,
            path: str | Path) -> MeasuredConfig:
    where = f"results[{position}]"
    if not isinstance(result, dict):
        raise FormatError(path, f"{where} is {describe_json(result)}, not an object")
    config = _configuration(result.get("configuration"), t1, where, path)
    invalidity = result.get("invalidity")
    if invalidity not in INVALIDITIES:
        raise FormatError(path, f"{where}.invalidity is {describe_json(invalidity)}; the schema "
                                f"allows {', '.join(INVALIDITIES)}")
    failure = None if invalidity == "correct" else str(invalidity)
    measurements = _measurements(result.get("measurements", []), where, path)
    time_s = _pick(measurements, TIME_NAMES, "time", default_time, where, path)
    energy_j = _pick(measurements, ENERGY_NAMES, "energy", 1.0, where, path)
    power_w = _pick(measurements, POWER_NAMES, "power", 1.0, where, path)
    times = result.get("times") if isinstance(result.get("times"), dict) else {}
    assert isinstance(times, dict)
    runs = _runs(times.get("runtimes"), default_time, where, path)
    for value in (time_s, energy_j, power_w):
        if isinstance(value, str) and failure is None:
            failure = value  # a string for a number: Kernel Tuner's error marker
    if failure is not None:
        time_s = energy_j = power_w = None
        runs = ()
    elif time_s is None and runs:
        time_s = sum(runs) / len(runs)  # Kernel Tuner's time is the mean of the runs
    names = {name for group in (TIME_NAMES, ENERGY_NAMES, POWER_NAMES) for name in group}
    metrics = tuple(sorted(
        (name, float(value)) for name, (value, _unit) in measurements.items()
        if name not in names and isinstance(value, (int, float)) and not isinstance(value, bool)
    ))
    return MeasuredConfig(
        config=config,
        key=cache_key(config, config.names),
        time_s=time_s if not isinstance(time_s, str) else None,
        times_s=runs,
        power_w=power_w if not isinstance(power_w, str) else None,
        energy_j=energy_j if not isinstance(energy_j, str) else None,
        failure=failure,
        metrics=metrics,
    )


def _configuration(values: object, t1: T1Input, where: str, path: str | Path) -> Configuration:
    if not isinstance(values, dict):
        raise FormatError(path, f"{where}.configuration is {describe_json(values)}, not an object")
    for name, value in values.items():
        if name not in t1.space.names:
            raise FormatError(path, f"{where}.configuration names {name!r}, which the T1 file "
                                    f"{t1.path} does not tune ({', '.join(t1.space.names)})")
        if value not in t1.space.tunable(name).values:
            raise FormatError(path, f"{where}.configuration: {name}={value!r} is not among the "
                                    f"T1 file's values")
    try:
        return t1.space.configuration(values)
    except SpaceError as error:
        raise FormatError(path, f"{where}.configuration: {error}") from None


def _measurements(measurements: object, where: str,
                  path: str | Path) -> dict[str, tuple[object, str]]:
    if not isinstance(measurements, list):
        raise FormatError(path, f"{where}.measurements must be a list")
    found: dict[str, tuple[object, str]] = {}
    for index, measurement in enumerate(measurements):
        if not isinstance(measurement, dict) or not isinstance(measurement.get("name"), str):
            raise FormatError(path, f"{where}.measurements[{index}] must be an object with a "
                                    f"name")
        unit = measurement.get("unit", "")
        if not isinstance(unit, str):
            raise FormatError(path, f"{where}.measurements[{index}].unit must be a string")
        found.setdefault(measurement["name"], (measurement.get("value"), unit))
    return found


def _pick(measurements: Mapping[str, tuple[object, str]], names: tuple[str, ...], kind: str,
          default_scale: float, where: str, path: str | Path) -> float | str | None:
    for name in names:
        if name not in measurements:
            continue
        value, unit = measurements[name]
        if isinstance(value, str):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FormatError(path, f"{where}: measurement {name} is {describe_json(value)}, "
                                    f"not a number")
        scale = default_scale if not unit.strip() else _scale(unit, kind, where, path)
        return float(value) * scale
    return None


def _runs(runs: object, scale: float, where: str, path: str | Path) -> tuple[float, ...]:
    if runs is None:
        return ()
    if not isinstance(runs, list) or not all(
        isinstance(run, (int, float)) and not isinstance(run, bool) for run in runs
    ):
        raise FormatError(path, f"{where}.times.runtimes must be a list of numbers")
    return tuple(float(run) * scale for run in runs)


def _scale(unit: str, kind: str, where: str, path: str | Path) -> float:
    if kind == "time":
        return _time_scale(unit, f"{where}: the unit of time", path)
    symbols, words = (_ENERGY_SYMBOLS, _ENERGY_WORDS) if kind == "energy" else (
        _POWER_SYMBOLS, _POWER_WORDS)
    text = unit.strip()
    scale = symbols.get(text, words.get(text.lower()))
    if scale is None:
        raise FormatError(path, f"{where}: unknown unit of {kind} {unit!r} (known: "
                                f"{', '.join(symbols)})")
    return scale


def _time_scale(unit: object, what: str, path: str | Path) -> float:
    text = unit.strip() if isinstance(unit, str) else ""
    scale = _TIME_SYMBOLS.get(text, _TIME_WORDS.get(text.lower()))
    if scale is None:
        raise FormatError(path, f"{what} {describe_json(unit)} is unknown (known: "
                                f"{', '.join(_TIME_SYMBOLS)}, seconds, milliseconds, ...)")
    return scale
