"""T1 input files: the auto-tuning community's description of a tuning problem.

Schema: kernel_tuner/schema/T1/1.0.0/input-schema.json (from odgaard/TuningSchema); Kernel
Tuner reads it in `tune_kernel_T1` (interface.py). What FlipFlop takes from it:

- ConfigurationSpace.TuningParameters: Name, Type, Values (a Python expression such as
  "[1] + [2 * i for i in range(1, 11)]", evaluated by the safe expression evaluator);
- ConfigurationSpace.Conditions: the Expression strings, as restrictions;
- KernelSpecification: KernelName, KernelFile (resolved beside the T1 file, then in its parent
  folder, as tune_kernel_T1 does after trying the working directory), Language, ProblemSize,
  GridDivX/Y/Z (absent or empty: Kernel Tuner's default divisor, as tune_kernel_T1 passes None),
  LocalSize (the block size names), CompilerOptions, SharedMemory, Arguments (kept as written);
- KernelSpecification.Defines, FlipFlop's extension (the schema has no such member, and
  `tune_kernel_T1` ignores it): preprocessor values Kernel Tuner's `defines` computes from the
  tunables, NAME -> a number or an expression of the tunables (`"N_PER_BLOCK // block_size_y"`);
- General: BenchmarkName, TimeUnit.

The search space is Kernel Tuner's: the conditions plus its limit on threads per block.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_json
from flipflop.space.errors import ExpressionError, SpaceError
from flipflop.space.expressions import Expression, parse_expression
from flipflop.space.kernel_tuner import (
    DEFAULT_BLOCK,
    DEFAULT_BLOCK_SIZE_NAMES,
    DEFAULT_MAX_THREADS,
    KernelTunerLaunch,
    kernel_tuner_launch,
    kernel_tuner_search_space,
)
from flipflop.space.tunables import ParamValue, SearchSpace, Tunable

_TYPES = {
    "int": (int,),
    "uint": (int,),
    "float": (int, float),
    "bool": (bool, int),
    "string": (str,),
}


@dataclass(frozen=True)
class T1Argument:
    name: str | None
    type: str | None
    memory_type: str | None
    raw: str  # the argument's JSON object as written (keys sorted)
    value: float | None = None  # a Scalar's FillValue: the value the kernel was launched with


@dataclass(frozen=True)
class T1Input:
    path: str
    benchmark_name: str | None
    kernel_name: str
    kernel_file: str  # resolved
    language: str
    space: SearchSpace
    conditions: tuple[Expression, ...]  # as written; `space` adds Kernel Tuner's thread limit
    launch: KernelTunerLaunch
    compiler_options: tuple[str, ...]
    shared_memory_bytes: int
    arguments: tuple[T1Argument, ...]
    time_unit: str | None

    @property
    def tunables(self) -> tuple[Tunable, ...]:
        return self.space.tunables

    @property
    def scalar_values(self) -> tuple[tuple[str, float], ...]:
        """(name, value) of every named scalar argument with a numeric FillValue."""
        return tuple((a.name, a.value) for a in self.arguments
                     if a.name is not None and a.value is not None)


def read_t1(path: str | Path, kernel_file: str | Path | None = None,
            max_threads: int | None = DEFAULT_MAX_THREADS) -> T1Input:
    """Read a T1 file. `kernel_file` replaces KernelSpecification.KernelFile (e.g. --source)."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError(path, f"not a T1 file: it holds {describe_json(data)}")
    for section in ("ConfigurationSpace", "KernelSpecification"):
        if not isinstance(data.get(section), dict):
            raise FormatError(path, f"not a T1 file: no {section} object")
    space_spec: dict[str, object] = data["ConfigurationSpace"]
    kernel: dict[str, object] = data["KernelSpecification"]
    general = data.get("General") if isinstance(data.get("General"), dict) else {}
    assert isinstance(general, dict)

    tunables = _tunables(space_spec.get("TuningParameters"), path)
    conditions = _conditions(space_spec.get("Conditions", []), path)
    names = [tunable.name for tunable in tunables]
    try:
        space = kernel_tuner_search_space(tunables, conditions, max_threads)
    except ExpressionError as error:
        where = next((i for i, c in enumerate(conditions) if c.text == error.text), None)
        field = f"ConfigurationSpace.Conditions[{where}].Expression" if where is not None \
            else "ConfigurationSpace"
        raise FormatError(path, f"{field}: column {error.column}: {error.reason}") from None
    except SpaceError as error:
        raise FormatError(path, f"ConfigurationSpace: {error}") from None

    launch = _launch(kernel, names, tunables, path)
    return T1Input(
        path=str(path),
        benchmark_name=_optional_string(general.get("BenchmarkName"), "General.BenchmarkName",
                                        path),
        kernel_name=_string(kernel.get("KernelName"), "KernelSpecification.KernelName", path),
        kernel_file=str(Path(kernel_file)) if kernel_file is not None
        else _kernel_file(kernel.get("KernelFile"), path),
        language=_string(kernel.get("Language", "CUDA"), "KernelSpecification.Language", path),
        space=space,
        conditions=conditions,
        launch=launch,
        compiler_options=_strings(kernel.get("CompilerOptions", []),
                                  "KernelSpecification.CompilerOptions", path),
        shared_memory_bytes=_shared_memory(kernel.get("SharedMemory", 0), path),
        arguments=_arguments(kernel.get("Arguments", []), path),
        time_unit=_optional_string(general.get("TimeUnit"), "General.TimeUnit", path),
    )


def _tunables(parameters: object, path: Path) -> tuple[Tunable, ...]:
    if not isinstance(parameters, list):
        raise FormatError(path, "ConfigurationSpace.TuningParameters must be a list")
    tunables = []
    for position, parameter in enumerate(parameters):
        where = f"ConfigurationSpace.TuningParameters[{position}]"
        if not isinstance(parameter, dict):
            raise FormatError(path, f"{where} is {describe_json(parameter)}, not an object")
        name = _string(parameter.get("Name"), f"{where}.Name", path)
        where = f"{where} ({name})"
        kind = parameter.get("Type", "int")
        if kind not in _TYPES:
            raise FormatError(path, f"{where}.Type is {describe_json(kind)}; the schema allows "
                                    f"{', '.join(_TYPES)}")
        values = _values(parameter.get("Values"), f"{where}.Values", path)
        for value in values:
            if not isinstance(value, _TYPES[str(kind)]) or (
                    isinstance(value, bool) and kind in ("int", "uint", "float")):
                raise FormatError(path, f"{where}.Values holds {value!r}, not a {kind}")
            if kind == "uint" and isinstance(value, int) and value < 0:
                raise FormatError(path, f"{where}.Values holds {value!r}, not a uint")
        try:
            tunables.append(Tunable(name, values))
        except SpaceError as error:
            raise FormatError(path, f"{where}: {error}") from None
    return tuple(tunables)


def _values(values: object, where: str, path: Path) -> tuple[ParamValue, ...]:
    if isinstance(values, list):  # not the schema's string, but plain enough to accept
        result: object = values
    elif isinstance(values, str):
        try:
            result = parse_expression(values).evaluate({})
        except ExpressionError as error:
            raise FormatError(path, f"{where}: column {error.column}: {error.reason}") from None
    else:
        raise FormatError(path, f"{where} is {describe_json(values)}; expected a string such "
                                f"as \"[1, 2, 4]\"")
    if not isinstance(result, (list, tuple, range)):
        raise FormatError(path, f"{where} gives {describe_json(result)}, not a list of values")
    items = list(result)
    for item in items:
        if not isinstance(item, (bool, int, float, str)):
            raise FormatError(path, f"{where} holds {item!r}: values must be numbers, strings or "
                                    f"booleans")
    return tuple(items)


def _conditions(conditions: object, path: Path) -> tuple[Expression, ...]:
    if not isinstance(conditions, list):
        raise FormatError(path, "ConfigurationSpace.Conditions must be a list")
    parsed = []
    for position, condition in enumerate(conditions):
        where = f"ConfigurationSpace.Conditions[{position}].Expression"
        text = condition.get("Expression") if isinstance(condition, dict) else None
        if not isinstance(text, str):
            raise FormatError(path, f"{where} must be a string")
        try:
            parsed.append(parse_expression(text))
        except ExpressionError as error:
            raise FormatError(path, f"{where}: column {error.column}: {error.reason}") from None
    return tuple(parsed)


def _launch(kernel: dict[str, object], names: list[str], tunables: tuple[Tunable, ...],
            path: Path) -> KernelTunerLaunch:
    problem = kernel.get("ProblemSize")
    if isinstance(problem, (int, str)) and not isinstance(problem, bool):
        problem = [problem]
    if not isinstance(problem, list):
        raise FormatError(path, "KernelSpecification.ProblemSize must be a list of integers or "
                                "expressions")
    divisors: list[list[int | str] | None] = []
    for axis in "XYZ":
        field = kernel.get(f"GridDiv{axis}")
        if field is None or field == []:
            divisors.append(None)  # tune_kernel_T1 passes None: Kernel Tuner's default
        elif isinstance(field, list):
            divisors.append(field)
        else:
            raise FormatError(path, f"KernelSpecification.GridDiv{axis} must be a list")
    try:
        launch = kernel_tuner_launch(problem, divisors[0], divisors[1], divisors[2],
                                     _block_size_names(kernel.get("LocalSize"), tunables, path),
                                     _defines(kernel.get("Defines", {}), path))
        launch.check(names)
    except ExpressionError as error:
        raise FormatError(path, f"KernelSpecification: {error.reason} (column {error.column} of "
                                f"{error.text!r})") from None
    except SpaceError as error:
        raise FormatError(path, f"KernelSpecification: {error}") from None
    return launch


def _defines(defines: object, path: Path) -> list[tuple[str, int | float | str]]:
    if not isinstance(defines, dict):
        raise FormatError(path, "KernelSpecification.Defines must be an object of NAME: value "
                                "or expression")
    found: list[tuple[str, int | float | str]] = []
    for name, value in defines.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise FormatError(path, f"KernelSpecification.Defines.{name} is "
                                    f"{describe_json(value)}: expected a number or an expression")
        found.append((name, value))
    return found


def _block_size_names(local_size: object, tunables: tuple[Tunable, ...],
                      path: Path) -> tuple[str, ...] | None:
    """LocalSize X/Y/Z name the block size parameters. A constant is accepted where Kernel
    Tuner's default gives the same block (256 in x, 1 in y and z, with no such tunable)."""
    if local_size is None:
        return None
    if not isinstance(local_size, dict):
        raise FormatError(path, "KernelSpecification.LocalSize must be an object")
    by_name = {tunable.name: tunable for tunable in tunables}
    names = []
    for axis, default_name, default in zip("XYZ", DEFAULT_BLOCK_SIZE_NAMES, DEFAULT_BLOCK,
                                           strict=True):
        entry = local_size.get(axis, str(default))
        where = f"KernelSpecification.LocalSize.{axis}"
        if isinstance(entry, int) and not isinstance(entry, bool):
            entry = str(entry)
        if not isinstance(entry, str):
            raise FormatError(path, f"{where} must be a string")
        if entry.strip() in by_name:
            names.append(entry.strip())
            continue
        try:
            value = parse_expression(entry).evaluate({})
        except ExpressionError:
            raise FormatError(path, f"{where} is {entry!r}: it must name a tunable parameter or "
                                    f"be a constant") from None
        if value != default:
            raise FormatError(path, f"{where} is {entry!r}; Kernel Tuner can only fix a block "
                                    f"dimension at its default {default}")
        clash = by_name.get(default_name)
        if clash is not None and clash.values != (default,):
            raise FormatError(path, f"{where} is {entry!r}, but the tunable {default_name} sets "
                                    f"that block dimension")
        names.append(default_name)
    return tuple(names)


def _kernel_file(value: object, path: Path) -> str:
    name = _string(value, "KernelSpecification.KernelFile", path)
    candidate = Path(name)
    if candidate.is_absolute():
        places = [candidate]
    else:
        places = [path.parent / candidate, path.parent.parent / candidate]
    for place in places:
        if place.is_file():
            return str(place)
    looked = " and ".join(str(place.parent) for place in places)
    raise FormatError(path, f"kernel file {name!r} (KernelSpecification.KernelFile) not found; "
                            f"looked in {looked}")


def _arguments(arguments: object, path: Path) -> tuple[T1Argument, ...]:
    if not isinstance(arguments, list):
        raise FormatError(path, "KernelSpecification.Arguments must be a list")
    parsed = []
    for position, argument in enumerate(arguments):
        if not isinstance(argument, dict):
            raise FormatError(path, f"KernelSpecification.Arguments[{position}] is "
                                    f"{describe_json(argument)}, not an object")
        fields = [argument.get(key) for key in ("Name", "Type", "MemoryType")]
        name, kind, memory = (field if isinstance(field, str) else None for field in fields)
        fill = argument.get("FillValue")
        value = float(fill) if memory == "Scalar" and isinstance(fill, (int, float)) \
            and not isinstance(fill, bool) else None
        parsed.append(T1Argument(name, kind, memory, json.dumps(argument, sort_keys=True), value))
    return tuple(parsed)


def _shared_memory(value: object, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FormatError(path, f"KernelSpecification.SharedMemory is {describe_json(value)}; "
                                f"expected a byte count")
    return value


def _string(value: object, where: str, path: Path) -> str:
    if not isinstance(value, str) or not value:
        raise FormatError(path, f"{where} must be a non-empty string, not {describe_json(value)}")
    return value


def _optional_string(value: object, where: str, path: Path) -> str | None:
    return None if value is None else _string(value, where, path)


def _strings(value: object, where: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FormatError(path, f"{where} must be a list of strings")
    return tuple(value)
