"""`--emit-kernel-tuner FILE`: the recommended shortlist as an input for Kernel Tuner.

The file is JSON that `kernel_tuner.tune_kernel` takes almost as it is (its "usage" member shows
the call): `tune_params` keeps only the values that occur in the shortlist, in their original
order; `restrictions` is one string restriction, a membership test of the explicit list, so
Kernel Tuner measures exactly the shortlisted configurations; `configurations` lists them
(best first, as given); `problem_size`, `grid_div_x/y/z` (null: Kernel Tuner's default) and
`block_size_names` (null: its default) reproduce the launch. `source_restrictions` records the
restrictions of the space the shortlist came from. `defines` holds the values computed from the
tunables (NAME: a Python expression of them), which the usage turns into Kernel Tuner's
`defines`; clock and power-limit tunables (`nvml_gr_clock`, ...) need an NVMLObserver, which the
usage adds when the shortlist has them.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_json
from flipflop.space.errors import SpaceError
from flipflop.space.expressions import Expression
from flipflop.space.kernel_tuner import GPU_SETTINGS, KernelTunerLaunch, kernel_tuner_launch
from flipflop.space.tunables import (
    Configuration,
    ParamValue,
    SearchSpace,
    Tunable,
    tunables_from_tune_params,
)

FORMAT = "flipflop.kernel_tuner_input/1"


@dataclass(frozen=True)
class KernelTunerInput:
    kernel_name: str
    kernel_file: str
    tunables: tuple[Tunable, ...]  # only the values the configurations use
    launch: KernelTunerLaunch
    configurations: tuple[Configuration, ...]
    source_restrictions: tuple[str, ...] = ()

    @property
    def restriction(self) -> str:
        return membership_restriction(self.configurations)


def kernel_tuner_input(space: SearchSpace, launch: KernelTunerLaunch,
                       configurations: Iterable[Mapping[str, ParamValue]], kernel_name: str,
                       kernel_file: str | Path) -> KernelTunerInput:
    """The input for the shortlist `configurations` of `space` (each must belong to it)."""
    chosen: list[Configuration] = []
    seen: set[Configuration] = set()
    for given in configurations:
        config = space.configuration(given)
        for tunable in space.tunables:
            if config[tunable.name] not in tunable.values:
                raise SpaceError(f"{tunable.name}={config[tunable.name]!r} is not among its "
                                 f"values")
        if not space.satisfies(config):
            raise SpaceError(f"{config.describe()} fails a restriction of the search space")
        if config not in seen:
            seen.add(config)
            chosen.append(config)
    if not chosen:
        raise SpaceError("no configurations to emit")
    launch.check(space.names)
    used = [
        Tunable(tunable.name, tuple(value for value in tunable.values
                                    if any(config[tunable.name] == value for config in chosen)))
        for tunable in space.tunables
    ]
    return KernelTunerInput(
        kernel_name=kernel_name,
        kernel_file=str(kernel_file),
        tunables=tuple(used),
        launch=launch,
        configurations=tuple(chosen),
        source_restrictions=tuple(restriction.text for restriction in space.restrictions),
    )


def membership_restriction(configurations: Iterable[Configuration]) -> str:
    """`(a, b) in [(1, 2), (4, 8)]` (or `a in [1, 4]` for one tunable), with Python literals."""
    configurations = list(configurations)
    names = configurations[0].names
    if len(names) == 1:
        values = ", ".join(_literal(config[names[0]]) for config in configurations)
        return f"{names[0]} in [{values}]"
    rows = ", ".join("(" + ", ".join(_literal(value) for value in config.as_tuple()) + ")"
                     for config in configurations)
    return f"({', '.join(names)}) in [{rows}]"


def render_kernel_tuner_input(spec: KernelTunerInput, file_name: str = "FILE") -> str:
    names = [tunable.name for tunable in spec.tunables]
    document = {
        "format": FORMAT,
        "kernel_name": spec.kernel_name,
        "kernel_file": spec.kernel_file,
        "problem_size": [_entry(extent) for extent in spec.launch.problem_size],
        "grid_div_x": _divisors(spec.launch.grid_div_x),
        "grid_div_y": _divisors(spec.launch.grid_div_y),
        "grid_div_z": _divisors(spec.launch.grid_div_z),
        "block_size_names": None if spec.launch.block_size_names is None
        else list(spec.launch.block_size_names),
        "tune_params": {tunable.name: list(tunable.values) for tunable in spec.tunables},
        "restrictions": [spec.restriction],
        "configurations": [{name: config[name] for name in names}
                           for config in spec.configurations],
        "source_restrictions": list(spec.source_restrictions),
        "defines": {name: expression.text for name, expression in spec.launch.derived},
        "usage": _usage(file_name, [name for name in names if name in GPU_SETTINGS]),
    }
    try:
        return json.dumps(document, indent=1, allow_nan=False) + "\n"
    except ValueError as error:
        raise SpaceError(f"cannot write the Kernel Tuner input: {error}") from None


def write_kernel_tuner_input(path: str | Path, spec: KernelTunerInput) -> None:
    """Write the file whole or not at all (a temporary file renamed over `path`)."""
    path = Path(path)
    text = render_kernel_tuner_input(spec, path.name)
    temporary: str | None = None
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        raise FormatError(path, f"cannot write: {error.strerror or error}") from None


def read_kernel_tuner_input(path: str | Path) -> KernelTunerInput:
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(path, f"not a FlipFlop Kernel Tuner input (no \"format\": {FORMAT!r})")
    try:
        tunables = tunables_from_tune_params(data.get("tune_params"))
        launch = kernel_tuner_launch(
            _problem_size(data.get("problem_size"), path),
            _optional_list(data.get("grid_div_x"), "grid_div_x", path),
            _optional_list(data.get("grid_div_y"), "grid_div_y", path),
            _optional_list(data.get("grid_div_z"), "grid_div_z", path),
            _names(data.get("block_size_names"), path),
            _defines(data.get("defines", {}), path),
        )
        names = tuple(tunable.name for tunable in tunables)
        configurations = tuple(
            _configuration(position, entry, tunables, path)
            for position, entry in enumerate(_list(data.get("configurations"), "configurations",
                                                   path))
        )
        launch.check(names)
    except SpaceError as error:
        raise FormatError(path, str(error)) from None
    if not configurations:
        raise FormatError(path, "'configurations' is empty")
    restrictions = data.get("restrictions")
    if restrictions != [membership_restriction(configurations)]:
        raise FormatError(path, "'restrictions' is not the membership test of 'configurations' "
                                "(was one edited without the other?)")
    return KernelTunerInput(
        kernel_name=_string(data.get("kernel_name"), "kernel_name", path),
        kernel_file=_string(data.get("kernel_file"), "kernel_file", path),
        tunables=tunables,
        launch=launch,
        configurations=configurations,
        source_restrictions=tuple(_strings(data.get("source_restrictions", []),
                                           "source_restrictions", path)),
    )


def _usage(file_name: str, settings: list[str]) -> str:
    lines = [
        "import json, kernel_tuner",
        f"spec = json.load(open({file_name!r}))",
        "# arguments: the kernel's argument list (numpy arrays and scalars), as for any"
        " tune_kernel call",
        "# defines: every tunable by name, and the values computed from them",
        "defines = {**{name: name for name in spec['tune_params']},"
        " **{name: (lambda p, e=e: eval(e, {}, dict(p))) for name, e in spec['defines'].items()}}"
        " if spec['defines'] else None",
    ]
    observers = ""
    if settings:
        lines.append(f"# {', '.join(settings)} set the GPU through Kernel Tuner's NVMLObserver")
        lines.append("from kernel_tuner.observers.nvml import NVMLObserver")
        lines.append("observers = [NVMLObserver(['nvml_energy', 'core_freq'])]")
        observers = " observers=observers,"
    lines.append(
        "results, env = kernel_tuner.tune_kernel(spec['kernel_name'], spec['kernel_file'],"
        " spec['problem_size'], arguments, spec['tune_params'],"
        " restrictions=spec['restrictions'], grid_div_x=spec['grid_div_x'],"
        " grid_div_y=spec['grid_div_y'], grid_div_z=spec['grid_div_z'],"
        f" block_size_names=spec['block_size_names'], defines=defines,{observers})")
    return "\n".join(lines)


def _defines(value: object, path: str | Path) -> list[tuple[str, int | float | str]]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise FormatError(path, "'defines' must map names to expressions")
    return [(str(name), text) for name, text in value.items()]


def _literal(value: ParamValue) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise SpaceError(f"the value {value} has no Python literal")
    return repr(value)


def _entry(entry: int | Expression) -> int | str:
    return entry if isinstance(entry, int) else entry.text


def _divisors(divisors: tuple[int | Expression, ...] | None) -> list[int | str] | None:
    return None if divisors is None else [_entry(divisor) for divisor in divisors]


def _configuration(position: int, entry: object, tunables: tuple[Tunable, ...],
                   path: str | Path) -> Configuration:
    where = f"configurations[{position}]"
    if not isinstance(entry, dict):
        raise FormatError(path, f"{where} is {describe_json(entry)}, not an object")
    names = [tunable.name for tunable in tunables]
    if sorted(entry) != sorted(names):
        raise FormatError(path, f"{where} names {', '.join(entry)}; tune_params has "
                                f"{', '.join(names)}")
    for tunable in tunables:
        if entry[tunable.name] not in tunable.values:
            raise FormatError(path, f"{where}: {tunable.name}={entry[tunable.name]!r} is not in "
                                    f"tune_params")
    return Configuration(names, [entry[name] for name in names])


def _problem_size(value: object, path: str | Path) -> list[int | str]:
    return _entries(_list(value, "problem_size", path), "problem_size", path)


def _optional_list(value: object, field: str, path: str | Path) -> list[int | str] | None:
    return None if value is None else _entries(_list(value, field, path), field, path)


def _entries(items: list[object], field: str, path: str | Path) -> list[int | str]:
    entries: list[int | str] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise FormatError(path, f"'{field}' holds {describe_json(item)}: expected integers "
                                    f"and expressions")
        entries.append(item)
    return entries


def _list(value: object, field: str, path: str | Path) -> list[object]:
    if not isinstance(value, list):
        raise FormatError(path, f"'{field}' is {describe_json(value)}, not a list")
    return value


def _names(value: object, path: str | Path) -> list[str] | None:
    return None if value is None else _strings(value, "block_size_names", path)


def _string(value: object, field: str, path: str | Path) -> str:
    if not isinstance(value, str):
        raise FormatError(path, f"'{field}' is {describe_json(value)}, not a string")
    return value


def _strings(value: object, field: str, path: str | Path) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FormatError(path, f"'{field}' must be a list of strings")
    return value
