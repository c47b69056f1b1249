"""Kernel Tuner cache files (`.json`, `.json.gz`): every configuration Kernel Tuner measured.

The format, as `kernel_tuner.util.process_cache` and `store_cache` write it: an object with
`device_name`, `kernel_name`, `problem_size`, `tune_params_keys`, `tune_params`, `objective`
(newer versions), `schema_version` (newer still) and `cache`, which maps
",".join(str(value) for each tunable in tune_params_keys order) to the measurement: the
tunables' values, `time` (ms, as Kernel Tuner reports it: normally the mean of `times`),
`times` (ms, every run), and what observers added. A failed configuration has the string
"CompilationFailedConfig", "RuntimeFailedConfig" or "InvalidConfig" in place of a number (in
`time`, or, when the run failed before it was timed, in the objective and no `time` at all);
Kernel Tuner skips every entry without a numeric time, and so does this reader, keeping the
reason ("no time" when the entry gives none) so reports can count them.

Energy (J per launch) and power (W) come from whichever observer measured them, each writing
`<prefix>_energy` and `<prefix>_power`: `nvml_` (NVMLObserver), `ps_` (PowerSensorObserver,
PowerSensor3 on the board's supply), a PMT sensor's name (PMTObserver: `nvidia_`, `rocm_`, ...)
or `tegra_`. A file reads one field for each, an external meter before NVML (`ENERGY_PREFERENCE`);
where only one of the two was measured, the other is derived from it and the time (power is
energy over time, as Kernel Tuner's own `Watt` metrics compute it). An entry with a negative or
non-finite energy or power is left out with a warning.

Kernel Tuner appends each entry as it is measured and closes the file only at the end, so a cache
of a run that was stopped lacks its two closing braces (and may end in a comma); it reads such a
file by closing it (`correct_open_cache`), and so does this reader.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_text
from flipflop.formats.measured import MeasuredConfig, MeasuredSpace
from flipflop.space.errors import SpaceError
from flipflop.space.tunables import Configuration, ParamValue, Tunable, tunables_from_tune_params

FORMAT = "kernel_tuner_cache"
FAILURES = ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig")
NO_TIME = "no time"
# Which observer's field a file is read by when it has several: a meter on the board's supply
# (PowerSensor3 samples at 20 kHz) before the PMT sensors and NVML's own reading.
ENERGY_PREFERENCE = ("ps", "*", "nvml")
_OBSERVED = re.compile(r"([A-Za-z][A-Za-z0-9]*)_(energy|power)\Z")
_NOT_METRICS = frozenset({"time", "times", "timestamp"})
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
    fields = _observed_fields(data["cache"], frozenset(names))
    skip = _NOT_METRICS | frozenset(names) | {f for f in fields if f is not None}
    entries = tuple(_entry(key, value, names, skip, make, path, fields)
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
        energy_field=fields[0],
        power_field=fields[1],
        warnings=_warnings(entries, fields),
    )


def _observed_fields(cache: dict[str, object], tunables: frozenset[str]
                     ) -> tuple[str | None, str | None]:
    """The energy and the power field the file is read by (`ENERGY_PREFERENCE`), or None."""
    found: dict[str, set[str]] = {"energy": set(), "power": set()}
    for entry in cache.values():
        if not isinstance(entry, dict):
            continue
        for name, value in entry.items():
            match = _OBSERVED.match(name)
            if match is None or name in tunables or isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                found[match.group(2)].add(match.group(1))
    return _preferred(found["energy"], "energy"), _preferred(found["power"], "power")


def _preferred(prefixes: set[str], quantity: str) -> str | None:
    for wanted in ENERGY_PREFERENCE:
        chosen = sorted(p for p in prefixes if p not in ENERGY_PREFERENCE) if wanted == "*" \
            else [wanted] if wanted in prefixes else []
        if chosen:
            return f"{chosen[0]}_{quantity}"
    return None


def _warnings(entries: tuple[MeasuredConfig, ...], fields: tuple[str | None, str | None]
              ) -> tuple[str, ...]:
    """One warning per observer field with values no meter gives (negative, not finite)."""
    bad = Counter(entry.failure for entry in entries
                  if entry.failure is not None and entry.failure.startswith("invalid "))
    warnings = []
    for reason, count in sorted(bad.items()):
        first = next(entry.key for entry in entries if entry.failure == reason)
        field = reason.removeprefix("invalid ")
        warnings.append(f"{count} entr{'y has' if count == 1 else 'ies have'} a negative or "
                        f"non-finite {field} (the first: {first!r}); "
                        f"{'it is' if count == 1 else 'they are'} left out")
    return tuple(warnings)


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
           make: Callable[[Sequence[ParamValue]], Configuration], path: str,
           fields: tuple[str | None, str | None] = (None, None)) -> MeasuredConfig:
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
    energy_field, power_field = fields
    failure: str | None = None
    time_s = _quantity(entry, "time", 1e-3, key, path)
    if isinstance(time_s, str):
        failure, time_s = time_s, None
    elif time_s is None:
        failure = _failure_named(entry, skip) or NO_TIME
    energy_j = _quantity(entry, energy_field, 1.0, key, path) if energy_field else None
    power_w = _quantity(entry, power_field, 1.0, key, path) if power_field else None
    if isinstance(energy_j, str):
        failure, energy_j = failure or energy_j, None
    if isinstance(power_w, str):
        failure, power_w = failure or power_w, None
    for field, number in ((energy_field, energy_j), (power_field, power_w)):
        if failure is None and number is not None and not (math.isfinite(number) and number >= 0):
            failure = f"invalid {field}"
    if failure is not None:
        time_s = energy_j = power_w = None
    elif time_s is not None and time_s > 0:
        if energy_j is None and power_w is not None:
            energy_j = power_w * time_s
        elif power_w is None and energy_j is not None:
            power_w = energy_j / time_s
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


def _failure_named(entry: Mapping[str, object], skip: frozenset[str]) -> str | None:
    """The failure string an entry without a time holds in another field (its objective)."""
    for name, value in entry.items():
        if name not in skip and isinstance(value, str) and value in FAILURES:
            return value
    return None


def _quantity(entry: Mapping[str, object], name: str, scale: float, key: str,
              path: str) -> float | str | None:
    """The number in `name` times `scale`, the failure string written instead, or None."""
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
