"""Kernel Tuner cache files (`.json`, `.json.gz`): every configuration Kernel Tuner measured.

The format, as `kernel_tuner.util.process_cache` and `store_cache` write it: an object with
`device_name`, `kernel_name`, `problem_size`, `tune_params_keys`, `tune_params`, `objective`
(newer versions), `schema_version` (newer still) and `cache`, which maps
",".join(str(value) for each tunable in tune_params_keys order) to the measurement: the
tunables' values, `time` (ms, as Kernel Tuner reports it: normally the mean of `times`),
`times` (ms, every run), and what observers added, such as `nvml_energy` (J) and `nvml_power`
(W). A failed configuration has the string
"CompilationFailedConfig", "RuntimeFailedConfig" or "InvalidConfig" in place of the number.

Kernel Tuner appends each entry as it is measured and closes the file only at the end, so a cache
of a run that was stopped lacks its two closing braces (and may end in a comma); it reads such a
file by closing it (`correct_open_cache`), and so does this reader.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_text
from flipflop.formats.measured import MeasuredConfig, MeasuredSpace
from flipflop.space.errors import SpaceError
from flipflop.space.tunables import Configuration, ParamValue, Tunable, tunables_from_tune_params

FORMAT = "kernel_tuner_cache"
FAILURES = ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")
ENERGY_KEY = "nvml_energy"
POWER_KEY = "nvml_power"
_NOT_METRICS = frozenset({"time", "times", ENERGY_KEY, POWER_KEY, "timestamp"})
_VALUE_TYPES = (bool, int, float, str)


def read_kernel_tuner_cache(path: str | Path) -> MeasuredSpace:
    return parse_kernel_tuner_cache(read_text(path), str(path))


def parse_kernel_tuner_cache(text: str, path: str) -> MeasuredSpace:
    data, complete = load_cache_json(text, path)
    return kernel_tuner_cache_from_json(data, path, complete)


def kernel_tuner_cache_from_json(data: object, path: str, complete: bool = True) -> MeasuredSpace:
    """The measured space of an already parsed cache (`complete`: it was properly closed)."""
    if not isinstance(data, dict):
        raise FormatError(path, f"not a Kernel Tuner cache: the file holds {describe_json(data)}")
    _check_is_cache(data, path)
    keys = data["tune_params_keys"]
    tunables = _tunables(data, keys, path)
    names = tuple(keys)
    make = Configuration.maker(names)
    skip = _NOT_METRICS | frozenset(names)
    entries = tuple(_entry(key, value, names, skip, make, path)
                    for key, value in data["cache"].items())
    return MeasuredSpace(
        path=path,
        format=FORMAT,
        kernel_name=data["kernel_name"],
        device_name=data["device_name"],
        problem_size=_problem_size(data.get("problem_size"), path),
        tunables=tunables,
        entries=entries,
        objective=data.get("objective") if isinstance(data.get("objective"), str) else None,
        complete=complete,
    )


def close_unfinished(text: str) -> str | None:
    """The text with the closing braces Kernel Tuner would add (its `correct_open_cache`), or
    None when it already ends in them."""
    stripped = text.strip()
    if not stripped or stripped[-3:] in ("}\n}", "}}}"):
        return None
    if stripped.endswith(","):
        stripped = stripped[:-1]
    return stripped + "}\n}"


def load_cache_json(text: str, path: str) -> tuple[object, bool]:
    """The JSON of `text`, closed first if Kernel Tuner had not finished writing it; and whether
    it was complete."""
    try:
        return json.loads(text), True
    except json.JSONDecodeError as error:
        original = error
    except (RecursionError, ValueError) as error:
        raise FormatError(path, f"not valid JSON: {error}") from None
    closed = close_unfinished(text)
    if closed is not None:
        try:
            return json.loads(closed), False
        except (json.JSONDecodeError, RecursionError, ValueError):
            pass
    raise FormatError(
        path,
        f"not valid JSON: {original.msg} (nor a Kernel Tuner cache that is still being written)",
        original.lineno, original.colno,
    )


def _check_is_cache(data: dict[str, object], path: str) -> None:
    if "cache" not in data or "tune_params_keys" not in data:
        if "results" in data:
            hint = " (it looks like T4 results: read it with its T1 file)"
        elif "ConfigurationSpace" in data or "KernelSpecification" in data:
            hint = " (it looks like a T1 input file)"
        else:
            hint = ""
        missing = [key for key in ("cache", "tune_params_keys", "tune_params") if key not in data]
        raise FormatError(path, f"not a Kernel Tuner cache: no {', '.join(missing)}{hint}")
    if not isinstance(data["cache"], dict):
        raise FormatError(path, f"'cache' is {describe_json(data['cache'])}, not an object")
    keys = data["tune_params_keys"]
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise FormatError(path, "'tune_params_keys' must be a list of parameter names")
    for field in ("kernel_name", "device_name"):
        if not isinstance(data.get(field), str):
            raise FormatError(path, f"'{field}' must be a string, not "
                                    f"{describe_json(data.get(field))}")


def _tunables(data: dict[str, object], keys: list[str], path: str) -> tuple[Tunable, ...]:
    tune_params = data.get("tune_params")
    if not isinstance(tune_params, dict):
        raise FormatError(path, f"'tune_params' is {describe_json(tune_params)}, not an object")
    if sorted(tune_params) != sorted(keys) or len(set(keys)) != len(keys):
        raise FormatError(path, f"'tune_params_keys' ({', '.join(keys)}) does not name the "
                                f"parameters of 'tune_params' ({', '.join(tune_params)})")
    try:
        return tunables_from_tune_params({key: tune_params[key] for key in keys},
                                         "tune_params")
    except SpaceError as error:
        raise FormatError(path, str(error)) from None


def _problem_size(value: object, path: str) -> tuple[int | str, ...] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(item, (int, str)) and not isinstance(item, bool) for item in items):
        raise FormatError(path, f"'problem_size' is {describe_json(value)}: expected integers or "
                                f"strings")
    return tuple(items)


def _entry(key: str, entry: object, names: tuple[str, ...], skip: frozenset[str],
           make: Callable[[Sequence[ParamValue]], Configuration], path: str) -> MeasuredConfig:
    if not isinstance(entry, dict):
        raise FormatError(path, f"cache entry {key!r} is {describe_json(entry)}, not an object")
    values: list[ParamValue] = []
    for name in names:
        if name not in entry:
            raise FormatError(path, f"cache entry {key!r} has no value for {name}")
        value = entry[name]
        if type(value) not in _VALUE_TYPES:
            raise FormatError(path, f"cache entry {key!r}: {name} is {describe_json(value)}")
        values.append(value)
    expected = ",".join(map(str, values))  # format_value, inlined: 10^5 values per file
    if key != expected:
        raise FormatError(path, f"cache entry {key!r} does not match its parameters, which give "
                                f"the key {expected!r} in tune_params_keys order")
    failure: str | None = None
    time_s = _quantity(entry, "time", 1e-3, key, path)
    if isinstance(time_s, str):
        failure, time_s = time_s, None
    elif time_s is None:
        raise FormatError(path, f"cache entry {key!r} has no time")
    energy_j = _quantity(entry, ENERGY_KEY, 1.0, key, path)
    power_w = _quantity(entry, POWER_KEY, 1.0, key, path)
    if isinstance(energy_j, str):
        failure, energy_j = failure or energy_j, None
    if isinstance(power_w, str):
        failure, power_w = failure or power_w, None
    if failure is not None:
        time_s = energy_j = power_w = None
    return MeasuredConfig(
        config=make(values),
        key=key,
        time_s=time_s,
        times_s=() if failure else _runs(entry.get("times"), key, path),
        power_w=power_w,
        energy_j=energy_j,
        failure=failure,
        metrics=_metrics(entry, skip),
    )


def _quantity(entry: Mapping[str, object], name: str, scale: float, key: str,
              path: str) -> float | str | None:
    value = entry.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormatError(path, f"cache entry {key!r}: {name} is {describe_json(value)}")
    return float(value) * scale


def _runs(value: object, key: str, path: str) -> tuple[float, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FormatError(path, f"cache entry {key!r}: 'times' must be a list of numbers")
    for run in value:
        if type(run) is not float and type(run) is not int:
            raise FormatError(path, f"cache entry {key!r}: 'times' holds {describe_json(run)}")
    return tuple([run * 1e-3 for run in value])


def _metrics(entry: Mapping[str, object], skip: frozenset[str]) -> tuple[tuple[str, float], ...]:
    metrics = []
    for name in entry.keys() - skip:
        value = entry[name]
        if (type(value) is float or type(value) is int) and math.isfinite(value):
            metrics.append((name, float(value)))
    metrics.sort()
    return tuple(metrics)
