"""Which configurations of a search space a measurement takes, in which order.

The configurations come from the tunables (`--tune`, `--tune-file`, restrictions: the whole
space Kernel Tuner would build), or from files (`--configs`): Kernel Tuner caches, of which the
configurations that were measured successfully count, or JSON lists of configurations. Several
files give the configurations present (and successful) in all of them, in the first file's
order. A seeded sample (`choose_indices`, the same draw `analyze --tune --sample` and
`validate --sample` make) is taken from those, then the measuring order is shuffled with the
same seed. Since the draw is a partial Fisher–Yates shuffle, the sample of N is a subset of the
sample of any larger count with the same seed: measuring 100 now and 150 later adds 50.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flipflop.calibration.space_runner import shuffled
from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_json
from flipflop.formats.kernel_tuner_cache import kernel_tuner_cache_from_json
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import kernel_tuner_search_space
from flipflop.space.tunables import (
    Configuration,
    ParamValue,
    Tunable,
    choose_indices,
)


@dataclass(frozen=True)
class ConfigurationFile:
    path: str
    tunables: tuple[Tunable, ...] | None  # a cache's tune_params; None for a plain list
    configurations: tuple[tuple[tuple[str, ParamValue], ...], ...]
    problem_size: tuple[int | str, ...] | None = None


@dataclass(frozen=True)
class Selection:
    tunables: tuple[Tunable, ...]
    configurations: tuple[Configuration, ...]  # the measuring order
    available: int  # configurations before sampling
    problem_size: tuple[int | str, ...] | None  # the first cache's, if any
    sample: int | None
    seed: int


def read_configuration_file(path: Path) -> ConfigurationFile:
    """A Kernel Tuner cache (its successful configurations) or a JSON list of objects."""
    data = read_json(path)
    if isinstance(data, dict) and "cache" in data:
        space = kernel_tuner_cache_from_json(data, str(path))
        return ConfigurationFile(
            str(path), space.tunables,
            tuple(tuple(entry.config.items()) for entry in space.succeeded),
            space.problem_size,
        )
    if not isinstance(data, list):
        raise FormatError(path, f"expected a Kernel Tuner cache or a list of configurations, "
                                f"found {describe_json(data)}")
    configurations = []
    for index, item in enumerate(data):
        if not isinstance(item, dict) or not all(
                isinstance(value, (bool, int, float, str)) for value in item.values()):
            raise FormatError(path, f"configuration {index} is {describe_json(item)}: expected "
                                    f"an object of parameter values")
        configurations.append(tuple((str(name), value) for name, value in item.items()))
    return ConfigurationFile(str(path), None, tuple(configurations))


def _inferred_tunables(configurations: Sequence[Sequence[tuple[str, ParamValue]]]
                       ) -> tuple[Tunable, ...]:
    names: dict[str, list[ParamValue]] = {}
    for configuration in configurations:
        for name, value in configuration:
            values = names.setdefault(name, [])
            if value not in values:
                values.append(value)
    return tuple(Tunable(name, tuple(values)) for name, values in names.items())


def select(
    tunables: Sequence[Tunable],
    restrictions: Sequence[str],
    files: Sequence[ConfigurationFile],
    sample: int | None,
    seed: int,
    max_threads: int = 1024,
) -> Selection:
    """The configurations to measure; SpaceError when there are none or they do not fit."""
    problem_size = next((f.problem_size for f in files if f.problem_size is not None), None)
    if tunables:
        space_tunables = tuple(tunables)
    elif files:
        first = next((f.tunables for f in files if f.tunables is not None), None)
        space_tunables = first if first is not None else _inferred_tunables(
            [c for f in files for c in f.configurations])
    else:
        raise SpaceError("no tunables: give --tune, --tune-file or --configs")
    space = kernel_tuner_search_space(space_tunables, restrictions, max_threads)
    names = space.names
    if files:
        known = {t.name: t.values for t in space_tunables}
        configurations = []
        for values in _common(files, names):
            configuration = Configuration(names, values)
            outside = [n for n, v in configuration.items() if v not in known[n]]
            if outside:
                raise SpaceError(f"configuration {configuration.describe()}: {outside[0]} is "
                                 f"not one of the tunable's values {list(known[outside[0]])}")
            if space.satisfies(configuration):  # the restrictions given narrow the files
                configurations.append(configuration)
    else:
        configurations = list(space.configurations)
    if not configurations:
        raise SpaceError("no configuration to measure: the files and the space have none in "
                         "common" if files else "the search space is empty")
    available = len(configurations)
    if sample is not None and sample < available:
        configurations = [configurations[i] for i in choose_indices(available, sample, seed)]
    return Selection(space_tunables, shuffled(configurations, seed), available, problem_size,
                     sample, seed)


def _common(files: Sequence[ConfigurationFile], names: tuple[str, ...]
            ) -> list[tuple[ParamValue, ...]]:
    """The configurations of every file as value tuples in `names` order, first file's order."""
    def as_values(path: str, configuration: tuple[tuple[str, ParamValue], ...]
                  ) -> tuple[ParamValue, ...]:
        settings = dict(configuration)
        if sorted(settings) != sorted(names):
            raise SpaceError(f"{path}: a configuration names {', '.join(settings)}, the space "
                             f"{', '.join(names)}")
        return tuple(settings[name] for name in names)

    ordered = [as_values(files[0].path, c) for c in files[0].configurations]
    for other in files[1:]:
        present = {as_values(other.path, c) for c in other.configurations}
        ordered = [values for values in ordered if values in present]
    seen: set[tuple[ParamValue, ...]] = set()
    unique = []
    for values in ordered:
        if values not in seen:
            seen.add(values)
            unique.append(values)
    return unique
