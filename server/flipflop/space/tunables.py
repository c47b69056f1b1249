"""Tunable parameters, configurations and search spaces, enumerated as Kernel Tuner does.

A `Tunable` is a compile-time parameter and the values it may take; a `Configuration` gives each
tunable one value; a `SearchSpace` is every configuration of its tunables that satisfies all its
restrictions. The enumeration order is Kernel Tuner's: `itertools.product` over the tunables in
the order given, the last tunable varying fastest (`Searchspace.__build_searchspace_bruteforce` in
kernel_tuner/searchspace.py; its `sorted_list()` gives the same order for the other builders).
A restriction that divides by zero lets the configuration pass, as `kernel_tuner.util.
check_restrictions` does (it catches ZeroDivisionError and keeps the configuration).

    space = search_space([parse_tune_option("block_size_x=32..1024:32"),
                          parse_tune_option("tile=1,2,4")], ["block_size_x * tile <= 2048"])
    space.size, space.sample(10, seed=1)
"""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from flipflop.space.errors import ExpressionError, ExpressionZeroDivision, SpaceError
from flipflop.space.expressions import Expression, Value, parse_expression

ParamValue = bool | int | float | str

# Kernel Tuner refuses these names (kernel_tuner.util.check_tune_params_list): it defines
# grid_size_x/y/z itself and reports the measured time under "time".
FORBIDDEN_NAMES = ("grid_size_x", "grid_size_y", "grid_size_z", "time")
MAX_VALUES = 100_000  # values of one tunable
MAX_CONFIGURATIONS = 2_000_000  # configurations one search space may hold
MAX_VISITS = 50_000_000  # partial configurations the enumeration may try

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_RANGE = re.compile(r"\s*([+-]?[0-9]+)\s*\.\.\s*([+-]?[0-9]+)\s*(?::\s*([+-]?[0-9]+)\s*)?\Z")


def check_name(name: object, what: str = "tunable") -> str:
    """`name` if it can be a tunable: a C identifier (it becomes `#define NAME VALUE`) that is no
    Python keyword (restrictions refer to it) and that Kernel Tuner does not reserve."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise SpaceError(f"{what} name {name!r} is not an identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if keyword.iskeyword(name):
        raise SpaceError(f"{what} name {name!r} is a Python keyword")
    if name in FORBIDDEN_NAMES:
        raise SpaceError(f"{what} name {name!r} is reserved by Kernel Tuner "
                         f"({', '.join(FORBIDDEN_NAMES)})")
    return name


@dataclass(frozen=True)
class Tunable:
    """A compile-time parameter and its values, in the order they are tried."""

    name: str
    values: tuple[ParamValue, ...]

    def __post_init__(self) -> None:
        check_name(self.name)
        if not isinstance(self.values, tuple):
            raise SpaceError(f"values of {self.name} must be a tuple")
        if not self.values:
            raise SpaceError(f"tunable {self.name} has no values")
        if len(self.values) > MAX_VALUES:
            raise SpaceError(f"tunable {self.name} has more than {MAX_VALUES} values")
        seen: dict[ParamValue, ParamValue] = {}
        for value in self.values:
            if not isinstance(value, (bool, int, float, str)):
                raise SpaceError(f"value {value!r} of {self.name} is not a number, string or "
                                 f"boolean")
            if value in seen:
                # Kernel Tuner's search space refuses duplicate configurations; 1, 1.0 and True
                # are one value to it (they are one dictionary key).
                raise SpaceError(f"tunable {self.name} lists the value {value!r} twice"
                                 + ("" if seen[value] is value else f" (as {seen[value]!r})"))
            seen[value] = value


class Configuration(Mapping[str, ParamValue]):
    """One value per tunable: an immutable mapping in the tunables' order, hashable, equal to
    another configuration with the same names in the same order and equal values."""

    __slots__ = ("_hash", "_index", "_names", "_values")
    _names: tuple[str, ...]
    _values: tuple[ParamValue, ...]
    _index: Mapping[str, int]
    _hash: int

    def __init__(self, names: Sequence[str], values: Sequence[ParamValue]) -> None:
        names = tuple(names)
        values = tuple(values)
        if len(names) != len(values):
            raise SpaceError(f"{len(names)} names but {len(values)} values")
        index = {name: position for position, name in enumerate(names)}
        if len(index) != len(names):
            raise SpaceError(f"a configuration names a parameter twice: {', '.join(names)}")
        self._init(names, index, values)

    @classmethod
    def of(cls, mapping: Mapping[str, ParamValue]) -> Configuration:
        return cls(tuple(mapping), tuple(mapping.values()))

    @classmethod
    def maker(cls, names: Sequence[str]) -> Callable[[Sequence[ParamValue]], Configuration]:
        """A builder of configurations of these names that share one name index: for readers
        making tens of thousands of them."""
        shape = cls(tuple(names), (0,) * len(names))
        shared_names, index = shape._names, shape._index

        def make(values: Sequence[ParamValue]) -> Configuration:
            values = tuple(values)
            if len(values) != len(shared_names):
                raise SpaceError(f"{len(shared_names)} names but {len(values)} values")
            return cls._make(shared_names, index, values)

        return make

    @classmethod
    def _make(cls, names: tuple[str, ...], index: Mapping[str, int],
              values: tuple[ParamValue, ...]) -> Configuration:
        """For a search space building thousands of configurations that share one index."""
        configuration = cls.__new__(cls)
        configuration._init(names, index, values)
        return configuration

    def _init(self, names: tuple[str, ...], index: Mapping[str, int],
              values: tuple[ParamValue, ...]) -> None:
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_hash", hash((names, values)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Configuration is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("a Configuration is immutable")

    def __reduce__(
        self,
    ) -> tuple[type[Configuration], tuple[tuple[str, ...], tuple[ParamValue, ...]]]:
        """Pickled as names and values: the hash is computed again where it is read (string
        hashes differ between processes)."""
        return Configuration, (self._names, self._values)

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def as_tuple(self) -> tuple[ParamValue, ...]:
        return self._values

    def __getitem__(self, name: str) -> ParamValue:
        return self._values[self._index[name]]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Configuration):
            return NotImplemented
        return self._names == other._names and self._values == other._values

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        settings = ", ".join(f"{name}={value!r}" for name, value in self.items())
        return f"Configuration({settings})"

    def describe(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.items())


@dataclass(frozen=True)
class SearchSpace:
    """The configurations of `tunables` that satisfy every restriction, in Kernel Tuner's order.

    The configurations are enumerated once, on first use, and kept; `sample` draws from them."""

    tunables: tuple[Tunable, ...]
    restrictions: tuple[Expression, ...] = ()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for tunable in self.tunables:
            if tunable.name in seen:
                raise SpaceError(f"tunable {tunable.name} is given twice")
            seen.add(tunable.name)
        for restriction in self.restrictions:
            check_restriction_names(restriction, self.names)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tunable.name for tunable in self.tunables)

    def tunable(self, name: str) -> Tunable:
        for tunable in self.tunables:
            if tunable.name == name:
                return tunable
        raise SpaceError(f"no tunable {name!r} (known parameters: {', '.join(self.names)})")

    @property
    def product_size(self) -> int:
        """Configurations before the restrictions."""
        size = 1
        for tunable in self.tunables:
            size *= len(tunable.values)
        return size

    @property
    def size(self) -> int:
        return len(self.configurations)

    @cached_property
    def configurations(self) -> tuple[Configuration, ...]:
        return _enumerate(self)

    @cached_property
    def _members(self) -> frozenset[Configuration]:
        return frozenset(self.configurations)

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Configuration]:
        return iter(self.configurations)

    def __contains__(self, configuration: object) -> bool:
        return configuration in self._members

    def satisfies(self, configuration: Mapping[str, ParamValue]) -> bool:
        """Whether `configuration` passes every restriction (its values need not be listed)."""
        env: Mapping[str, Value] = configuration
        return all(_passes(restriction, env) for restriction in self.restrictions)

    def configuration(self, values: Mapping[str, ParamValue]) -> Configuration:
        """The configuration of these values, in the tunables' order; every tunable must be
        given, and nothing else."""
        unknown = [name for name in values if name not in self.names]
        if unknown:
            raise SpaceError(f"unknown parameter {unknown[0]!r} "
                             f"(known parameters: {', '.join(self.names)})")
        missing = [name for name in self.names if name not in values]
        if missing:
            raise SpaceError(f"no value for {', '.join(missing)}")
        return Configuration(self.names, tuple(values[name] for name in self.names))

    def sample(self, count: int, seed: int) -> tuple[Configuration, ...]:
        """`count` configurations drawn without replacement, in the space's order; the whole
        space when it holds no more. The draw depends only on (space, count, seed): it uses its
        own generator (SplitMix64), not Python's `random`, whose algorithms may change."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise SpaceError(f"sample size must be a non-negative integer, not {count!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise SpaceError(f"seed must be an integer, not {seed!r}")
        configurations = self.configurations
        if count >= len(configurations):
            return configurations
        return tuple(configurations[i] for i in choose_indices(len(configurations), count, seed))


def search_space(tunables: Iterable[Tunable],
                 restrictions: Iterable[str | Expression] = ()) -> SearchSpace:
    """A SearchSpace from tunables and restriction strings (parsed here)."""
    parsed = tuple(
        restriction if isinstance(restriction, Expression) else parse_expression(restriction)
        for restriction in restrictions
    )
    return SearchSpace(tuple(tunables), parsed)


def check_restriction_names(restriction: Expression, known: Sequence[str]) -> None:
    """ExpressionError at the first name of `restriction` that is not a known parameter."""
    for name, column in restriction.name_columns:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listed = ", ".join(known) if known else "none"
        raise ExpressionError(
            f"unknown parameter {name!r} (known parameters: {listed}){hint}",
            restriction.text, column,
        )


def _passes(restriction: Expression, env: Mapping[str, Value]) -> bool:
    try:
        return bool(restriction.evaluate(env))
    except ExpressionZeroDivision:
        return True
    except ExpressionError as error:
        settings = ", ".join(f"{name}={value!r}" for name, value in env.items())
        raise ExpressionError(f"{error.reason} (with {settings})", error.text,
                              error.column) from None


def _enumerate(space: SearchSpace) -> tuple[Configuration, ...]:
    """The product of the tunables' values, last tunable fastest, each restriction tested as
    soon as the values it names are set: the same configurations in the same order as
    filtering the whole product, without visiting the branches a restriction has cut."""
    names = space.names
    count = len(names)
    index = {name: position for position, name in enumerate(names)}
    checks: list[list[Expression]] = [[] for _ in range(count)]
    for restriction in space.restrictions:
        if not restriction.names:
            if not _passes(restriction, {}):
                return ()
            continue
        checks[max(index[name] for name in restriction.names)].append(restriction)
    if count == 0:
        return (Configuration._make((), index, ()),)
    values = [tunable.values for tunable in space.tunables]
    env: dict[str, Value] = {}
    found: list[Configuration] = []
    positions = [0] * count
    level = 0
    visits = 0
    while level >= 0:
        if positions[level] == len(values[level]):
            positions[level] = 0
            level -= 1
            if level >= 0:
                positions[level] += 1
            continue
        env[names[level]] = values[level][positions[level]]
        visits += 1
        if visits > MAX_VISITS:
            raise SpaceError(f"the search space is too large to enumerate (more than "
                             f"{MAX_VISITS} partial configurations); restrict it further")
        if all(_passes(restriction, env) for restriction in checks[level]):
            if level == count - 1:
                settings = tuple(env[name] for name in names)
                found.append(Configuration._make(names, index, settings))  # type: ignore[arg-type]
                if len(found) > MAX_CONFIGURATIONS:
                    raise SpaceError(f"the search space has more than {MAX_CONFIGURATIONS} "
                                     f"configurations; restrict it further")
                positions[level] += 1
            else:
                level += 1
        else:
            positions[level] += 1
    return tuple(found)


# ----------------------------------------------------------------------------- sampling

_MASK64 = (1 << 64) - 1


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64 generator ("Fast splittable pseudorandom number
    generators", OOPSLA 2014): a fixed, documented sequence for each seed."""

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK64

    def next(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, bound: int) -> int:
        """Uniform in [0, bound), by rejection: no bias towards small values."""
        limit = ((1 << 64) // bound) * bound
        while True:
            draw = self.next()
            if draw < limit:
                return draw % bound


def choose_indices(population: int, count: int, seed: int) -> list[int]:
    """`count` distinct indices of range(population), ascending: a partial Fisher–Yates
    shuffle that keeps only the positions it has swapped."""
    generator = SplitMix64(seed)
    swapped: dict[int, int] = {}
    chosen: list[int] = []
    for position in range(count):
        pick = position + generator.below(population - position)
        chosen.append(swapped.get(pick, pick))
        swapped[pick] = swapped.get(position, position)
    return sorted(chosen)


# ----------------------------------------------------------------------------- parsing


def parse_tune_option(text: str) -> Tunable:
    """`NAME=V1,V2,...` (integers, floats, True/False, strings, quoted or bare) or
    `NAME=A..B[:STEP]`, an inclusive integer range (`16..256:16` is 16, 32, ..., 256)."""
    name, separator, spec = text.partition("=")
    name = name.strip()
    if not separator or not name:
        raise SpaceError(f"--tune {text!r}: expected NAME=V1,V2,... or NAME=A..B[:STEP]")
    check_name(name)
    if ".." in spec and not _quoted(spec):
        return Tunable(name, _parse_range(name, spec))
    return Tunable(name, tuple(_parse_value(name, item) for item in _split_values(name, spec)))


def tunables_from_tune_params(tune_params: object, where: str = "tune_params") -> tuple[
    Tunable, ...
]:
    """Tunables from a Kernel Tuner `tune_params` dictionary (as JSON gives it): name → list."""
    if not isinstance(tune_params, Mapping):
        raise SpaceError(f"{where} must be an object mapping names to lists of values")
    tunables = []
    for name, values in tune_params.items():
        if not isinstance(values, list):
            raise SpaceError(f"{where}[{name!r}] must be a list of values")
        for value in values:
            if value is None or not isinstance(value, (bool, int, float, str)):
                raise SpaceError(f"{where}[{name!r}] holds {value!r}: values must be numbers, "
                                 f"strings or booleans")
        tunables.append(Tunable(check_name(name), tuple(values)))
    return tuple(tunables)


def _quoted(spec: str) -> bool:
    stripped = spec.strip()
    return stripped[:1] in ("'", '"')


def _parse_range(name: str, spec: str) -> tuple[ParamValue, ...]:
    match = _RANGE.match(spec)
    if not match:
        raise SpaceError(f"--tune {name}={spec}: a range is A..B or A..B:STEP with integers")
    start, stop = int(match.group(1)), int(match.group(2))
    step = int(match.group(3)) if match.group(3) is not None else 1
    if step == 0:
        raise SpaceError(f"--tune {name}={spec}: the step is 0")
    if (stop - start) * step < 0:
        raise SpaceError(f"--tune {name}={spec}: the range is empty (a step of {step} never "
                         f"reaches {stop} from {start})")
    count = (stop - start) // step + 1
    if count > MAX_VALUES:
        raise SpaceError(f"--tune {name}={spec}: more than {MAX_VALUES} values")
    return tuple(range(start, stop + (1 if step > 0 else -1), step))


def _split_values(name: str, spec: str) -> list[str]:
    """Split at commas outside quotes."""
    items: list[str] = []
    current: list[str] = []
    quote = ""
    for char in spec:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if quote:
        raise SpaceError(f"--tune {name}={spec}: unterminated quote")
    items.append("".join(current))
    if len(items) > MAX_VALUES:
        raise SpaceError(f"--tune {name}: more than {MAX_VALUES} values")
    return items


def _parse_value(name: str, item: str) -> ParamValue:
    text = item.strip()
    if not text:
        raise SpaceError(f"--tune {name}: empty value in the list")
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if _INTEGER.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if text in ("True", "False"):
        return text == "True"
    return text
