"""How Kernel Tuner turns a configuration into a launch, a compiled source and a cache key.

Each rule mirrors a function of Kernel Tuner (KernelTuner/kernel_tuner, kernel_tuner/util.py
unless said otherwise), so that FlipFlop predicts the kernel instance Kernel Tuner measured:

- block: `get_thread_block_dimensions`: the values of the block-size-named parameters; a name
  that is not a tunable counts 256 in x and 1 in y and z; values pass through `int()`.
- block size names: `check_block_size_params_names_list` and `append_default_block_size_names`
  (interface.py `tune_kernel`): the given names padded with block_size_x/y/z to three; without
  names, block_size_x/y/z, or the spellings in other case that the tunables use.
- problem size: `get_problem_size`: an int, a string, or a sequence of up to three of them;
  strings are expressions of the tunables, truncated by `int()`; missing dimensions are 1.
- grid: `get_grid_dimensions`: per dimension ceil(float(problem) / float(divisor)), the divisor
  being the product of the grid_div entries (each a constant, a parameter name or an expression,
  each truncated by `int()`), or, without grid_div for that dimension, the value of its
  block-size parameter (1 when that is not a tunable).
- preprocessor definitions: `prepare_kernel_string`: grid_size_x/y/z, the three block size
  names, every tunable, `kernel_tuner 1`, then `#line 1`; in CUDA a parameter whose name holds
  "loop_unroll_factor" becomes `constexpr int`, and 0 deletes its `#pragma unroll NAME` lines.
  Values computed from the tunables (`tune_kernel`'s `defines` with functions, `N_PER_WARP =
  N_PER_BLOCK // block_size_y`) are expressions here (`derived`), written after the tunables,
  their values as Python's `str()` writes them. Tunables that set the GPU rather than the code
  (`GPU_SETTINGS`: NVML's locked clocks and power limit) are not written unless the source
  names them: Kernel Tuner's observers apply them, and the code does not change with them.
- cache key: the runners' `",".join([str(i) for i in element])` over the tunables' values in
  `tune_params_keys` order.
- search space: `Searchspace` (searchspace.py) adds the restriction that the product of the
  block_size_x/y/z tunables present is at most the device's maximum threads per block.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from flipflop.launch import Dim3
from flipflop.space.errors import ExpressionError, SpaceError
from flipflop.space.expressions import Expression, Value, parse_expression
from flipflop.space.tunables import (
    Configuration,
    ParamValue,
    SearchSpace,
    Tunable,
    check_name,
    check_restriction_names,
)

DEFAULT_BLOCK_SIZE_NAMES = ("block_size_x", "block_size_y", "block_size_z")
# get_thread_block_dimensions: params.get(block_size_names[0], 256), then 1 and 1.
DEFAULT_BLOCK = (256, 1, 1)
# Maximum threads per block of every CUDA device since compute capability 2.0 (CUDA C++
# Programming Guide, "Features and Technical Specifications", table of technical specifications).
DEFAULT_MAX_THREADS = 1024
GRID_SIZE_NAMES = ("grid_size_x", "grid_size_y", "grid_size_z")
# Tunables Kernel Tuner's NVMLObserver applies to the GPU (observers/nvml.py): the locked core
# clock, the locked memory clock (MHz) and the power limit (W).
GPU_SETTINGS = ("nvml_gr_clock", "nvml_mem_clock", "nvml_pwr_limit")
_AXES = ("x", "y", "z")
_TOKEN = re.compile(r"([a-zA-Z0-9_]+)")

ProblemExtent = int | Expression
Divisor = int | Expression


@dataclass(frozen=True)
class KernelTunerLaunch:
    """problem_size, grid_div_x/y/z and block_size_names as `tune_kernel` takes them.

    A grid_div of None is Kernel Tuner's default (the dimension's block-size parameter); an
    empty tuple divides by 1. block_size_names None is Kernel Tuner's default naming."""

    problem_size: tuple[ProblemExtent, ...]
    grid_div_x: tuple[Divisor, ...] | None = None
    grid_div_y: tuple[Divisor, ...] | None = None
    grid_div_z: tuple[Divisor, ...] | None = None
    block_size_names: tuple[str, ...] | None = None
    # Preprocessor definitions computed from the tunables: (NAME, expression), in order.
    derived: tuple[tuple[str, Expression], ...] = ()
    # Tunables to leave out of the definitions (GPU settings the source never names).
    not_compiled: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if not 1 <= len(self.problem_size) <= 3:
            raise SpaceError(f"the problem size has {len(self.problem_size)} dimensions; "
                             f"Kernel Tuner takes 1 to 3")
        for extent in self.problem_size:
            _check_constant(extent, "problem size")
        for divisors in self.grid_divs:
            for divisor in divisors or ():
                _check_constant(divisor, "grid divisor")
        if self.block_size_names is not None:
            if len(self.block_size_names) > 3:
                raise SpaceError("block_size_names should not contain more than 3 names")
            for name in self.block_size_names:
                check_name(name, "block size")
        seen: set[str] = set()
        for name, expression in self.derived:
            check_name(name, "define")
            if name in seen:
                raise SpaceError(f"define {name} is given twice")
            seen.add(name)
            _check_constant(expression, "define")

    @property
    def grid_divs(self) -> tuple[tuple[Divisor, ...] | None, ...]:
        return (self.grid_div_x, self.grid_div_y, self.grid_div_z)

    def block_names(self, parameter_names: Iterable[str]) -> tuple[str, str, str]:
        """The three names whose values make the block, for a space of these parameters."""
        names = list(self.block_size_names) if self.block_size_names is not None else None
        if names is None:
            present = list(parameter_names)
            if any(name.lower() in DEFAULT_BLOCK_SIZE_NAMES for name in present):
                # Kernel Tuner accepts other case (BLOCK_SIZE_X) and orders what it finds by
                # name; a lone BLOCK_SIZE_Y therefore names the x dimension, as it does there.
                names = sorted(
                    (name for name in present
                     if name.lower() in DEFAULT_BLOCK_SIZE_NAMES
                     and name not in DEFAULT_BLOCK_SIZE_NAMES),
                    key=str.casefold,
                )
            else:
                names = []
        for position, default in enumerate(DEFAULT_BLOCK_SIZE_NAMES):
            if len(names) < position + 1:
                names.append(default)
        return (names[0], names[1], names[2])

    def check(self, parameter_names: Sequence[str]) -> None:
        """SpaceError if the problem size, a grid divisor or a define names an unknown
        parameter, or a define redefines a tunable."""
        known = list(parameter_names)
        for name, expression in self.derived:
            if name in known:
                raise SpaceError(f"define {name}: {name} is a tunable, defined by its value "
                                 "already")
            _check_names(expression, known, f"define {name}")
        for extent in self.problem_size:
            if isinstance(extent, Expression):
                _check_names(extent, known, "problem size")
        for axis, divisors in zip(_AXES, self.grid_divs, strict=True):
            for divisor in divisors or ():
                if isinstance(divisor, Expression):
                    _check_names(divisor, known, f"grid_div_{axis}")

    def block(self, config: Mapping[str, ParamValue]) -> Dim3:
        names = self.block_names(config)
        x, y, z = (
            _to_int(config[name], f"block size {name}") if name in config else default
            for name, default in zip(names, DEFAULT_BLOCK, strict=True)
        )
        return (x, y, z)

    def problem(self, config: Mapping[str, ParamValue]) -> Dim3:
        """The problem size of this configuration, three dimensions."""
        extents = [1, 1, 1]
        for position, extent in enumerate(self.problem_size):
            if isinstance(extent, Expression):
                extents[position] = _to_int(
                    _evaluate(extent, config, "problem size"), f"problem size {extent.text!r}"
                )
            else:
                extents[position] = extent
        return (extents[0], extents[1], extents[2])

    def grid(self, config: Mapping[str, ParamValue]) -> Dim3:
        names = self.block_names(config)
        problem = self.problem(config)
        grid = []
        for axis, extent, divisors, block_name in zip(_AXES, problem, self.grid_divs, names,
                                                      strict=True):
            divisor: int | float
            if divisors is None:
                value = config.get(block_name, 1)
                if isinstance(value, str):
                    raise SpaceError(f"block size {block_name} is the string {value!r}; "
                                     f"the grid in {axis} needs a number")
                divisor = value
            else:
                divisor = 1
                for entry in divisors:
                    divisor *= _divisor_value(entry, config, axis)
            if divisor == 0:
                raise SpaceError(f"the grid divisor in {axis} is 0 for {_describe(config)}")
            try:
                grid.append(math.ceil(float(extent) / float(divisor)))
            except (OverflowError, ValueError) as error:
                raise SpaceError(f"grid in {axis}: {error}") from None
        return (grid[0], grid[1], grid[2])

    def defines(self, config: Mapping[str, ParamValue]) -> tuple[tuple[str, str], ...]:
        """The preprocessor definitions Kernel Tuner prepends, in its order, values as text."""
        grid = self.grid(config)
        block = self.block(config)
        definitions: dict[str, object] = {}
        for name, extent in zip(GRID_SIZE_NAMES, grid, strict=True):
            definitions[name] = extent
        for name, extent in zip(self.block_names(config), block, strict=True):
            definitions[name] = extent
        for name, value in config.items():
            if name in self.not_compiled:
                continue
            # A string value has the parameter names in it replaced, as for templated kernel
            # names (prepare_kernel_string calls replace_param_occurrences on it).
            definitions[name] = instance_kernel_name(value, config) if isinstance(value, str) \
                else value
        for name, expression in self.derived:
            definitions[name] = _evaluate(expression, config, f"define {name}")
        definitions["kernel_tuner"] = 1
        return tuple((name, str(value).replace("\n", "\\\n"))
                     for name, value in definitions.items())

    def prepare_source(self, config: Mapping[str, ParamValue], source: str) -> str:
        """The CUDA source Kernel Tuner compiles for this configuration."""
        prefix = []
        for name, value in self.defines(config):
            if "loop_unroll_factor" in name:
                if value == "0":
                    source = re.sub(r"\n\s*#pragma\s+unroll\s+" + name, "\n", source)
                else:
                    prefix.append(f"constexpr int {name} = {value};\n")
            else:
                prefix.append(f"#define {name} {value}\n")
        prefix.append("#line 1\n")
        return "".join(prefix) + source


def kernel_tuner_launch(
    problem_size: int | str | Sequence[int | str],
    grid_div_x: Sequence[int | str] | None = None,
    grid_div_y: Sequence[int | str] | None = None,
    grid_div_z: Sequence[int | str] | None = None,
    block_size_names: Sequence[str] | None = None,
    defines: Sequence[str | tuple[str, int | float | str]] = (),
) -> KernelTunerLaunch:
    """A KernelTunerLaunch from `tune_kernel`'s arguments as written (strings are parsed);
    `defines` are `NAME=EXPR` texts or (NAME, value or expression text) pairs."""
    if isinstance(problem_size, (int, str)):
        extents: Sequence[int | str] = (problem_size,)
    else:
        extents = problem_size
    return KernelTunerLaunch(
        problem_size=tuple(_parse_entry(extent, "problem size") for extent in extents),
        grid_div_x=_parse_divisors(grid_div_x, "x"),
        grid_div_y=_parse_divisors(grid_div_y, "y"),
        grid_div_z=_parse_divisors(grid_div_z, "z"),
        block_size_names=None if block_size_names is None else tuple(block_size_names),
        derived=tuple(parse_define(define) for define in defines),
    )


def parse_define(define: str | tuple[str, int | float | str]) -> tuple[str, Expression]:
    """`NAME=EXPR` (or a (NAME, value) pair): a preprocessor definition computed from the
    tunables, `N_PER_WARP=N_PER_BLOCK // block_size_y`; SpaceError or ExpressionError (with the
    column in EXPR) when it is not one."""
    if isinstance(define, str):
        name, separator, text = define.partition("=")
        if not separator or not text.strip():
            raise SpaceError(f"define {define!r}: expected NAME=EXPRESSION")
    else:
        name, value = define
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise SpaceError(f"define {name}: {value!r} is neither a number nor an expression")
        text = value if isinstance(value, str) else repr(value)
    name = check_name(name.strip(), "define")
    try:
        return name, parse_expression(text)
    except ExpressionError as error:
        raise ExpressionError(f"define {name}: {error.reason}", error.text,
                              error.column) from None


def parse_launch_options(
    problem_size: str,
    grid_div_x: str | None = None,
    grid_div_y: str | None = None,
    grid_div_z: str | None = None,
    block_size_names: str | None = None,
) -> KernelTunerLaunch:
    """A launch from option text: `--problem-size 4096,4096`, `--grid-div-x block_size_x,tile`
    (an empty text divides by 1; None keeps Kernel Tuner's default), `--block-size-names
    MDIMC,NDIMC`. Entries are split at commas outside brackets and quotes, so an entry may be an
    expression such as `max(n, 64)`."""
    def divisors(text: str | None, axis: str) -> list[int | str] | None:
        if text is None:
            return None
        return [_integer_or_text(entry) for entry in split_option(text, f"grid_div_{axis}", True)]

    return kernel_tuner_launch(
        [_integer_or_text(entry) for entry in split_option(problem_size, "problem size")],
        divisors(grid_div_x, "x"),
        divisors(grid_div_y, "y"),
        divisors(grid_div_z, "z"),
        None if block_size_names is None else split_option(block_size_names, "block size names"),
    )


def split_option(text: str, what: str, empty_allowed: bool = False) -> list[str]:
    """`text` split at the commas that are outside brackets and quotes, entries stripped."""
    if not text.strip():
        if empty_allowed:
            return []
        raise SpaceError(f"{what}: no value")
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    quote = ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            entries.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    entries.append("".join(current).strip())
    if any(not entry for entry in entries):
        raise SpaceError(f"{what} {text!r}: empty entry")
    return entries


def _integer_or_text(entry: str) -> int | str:
    return int(entry) if entry.lstrip("+-").isdigit() else entry


def format_value(value: ParamValue) -> str:
    """A value as Kernel Tuner writes it into cache keys: Python's `str()` (32, 0.5, True, abc)."""
    return str(value)


def cache_key(config: Mapping[str, ParamValue], keys: Sequence[str]) -> str:
    """Kernel Tuner's cache key: the values in `tune_params_keys` order, joined by commas."""
    missing = [key for key in keys if key not in config]
    if missing:
        raise SpaceError(f"the configuration has no value for {', '.join(missing)}")
    return ",".join(format_value(config[key]) for key in keys)


def instance_kernel_name(kernel_name: str, config: Mapping[str, ParamValue]) -> str:
    """The kernel name with parameter names replaced by their values, as Kernel Tuner does for
    templated names (`replace_param_occurrences`): "gemm<TILE>" → "gemm<16>"."""
    return "".join(format_value(config[part]) if part in config else part
                   for part in _TOKEN.split(kernel_name))


def max_threads_restriction(tunables: Sequence[Tunable], max_threads: int) -> Expression | None:
    """`block_size_x * block_size_y <= max_threads` over the block_size_x/y/z tunables present,
    the restriction Kernel Tuner's Searchspace adds (with the default names: `tune_kernel` does
    not pass its block_size_names to the Searchspace)."""
    present = [name for name in DEFAULT_BLOCK_SIZE_NAMES
               if any(tunable.name == name for tunable in tunables)]
    if not present:
        return None
    return parse_expression(f"{' * '.join(present)} <= {max_threads}")


def kernel_tuner_search_space(
    tunables: Iterable[Tunable],
    restrictions: Iterable[str | Expression] = (),
    max_threads: int | None = DEFAULT_MAX_THREADS,
) -> SearchSpace:
    """The search space Kernel Tuner builds: the restrictions plus its limit on threads per block
    (None leaves the limit out)."""
    tunables = tuple(tunables)
    parsed = [restriction if isinstance(restriction, Expression) else parse_expression(restriction)
              for restriction in restrictions]
    if max_threads is not None:
        limit = max_threads_restriction(tunables, max_threads)
        spaced_texts = {restriction.text.replace(" ", "") for restriction in parsed}
        if limit is not None and limit.text.replace(" ", "") not in spaced_texts:
            parsed.append(limit)
    return SearchSpace(tunables, tuple(parsed))


def _parse_entry(entry: int | str, what: str) -> int | Expression:
    if isinstance(entry, bool) or not isinstance(entry, (int, str)):
        raise SpaceError(f"{what} entries must be integers or strings, not {entry!r}")
    if isinstance(entry, int):
        return entry
    expression = parse_expression(entry)
    if not expression.names:
        # A constant string (e.g. "1" in a T1 file) is that number.
        return _to_int(_evaluate(expression, {}, what), what)
    return expression


def _parse_divisors(divisors: Sequence[int | str] | None, axis: str) -> tuple[Divisor, ...] | None:
    if divisors is None:
        return None
    if isinstance(divisors, (str, int)):
        divisors = (divisors,)
    return tuple(_parse_entry(divisor, f"grid_div_{axis}") for divisor in divisors)


def _check_constant(entry: object, what: str) -> None:
    if isinstance(entry, bool) or not isinstance(entry, (int, Expression)):
        raise SpaceError(f"{what} entries must be integers or expressions, not {entry!r}")


def _check_names(expression: Expression, known: Sequence[str], what: str) -> None:
    try:
        check_restriction_names(expression, known)
    except ExpressionError as error:
        raise ExpressionError(f"{what}: {error.reason}", error.text, error.column) from None


def _evaluate(expression: Expression, config: Mapping[str, ParamValue], what: str) -> Value:
    env: Mapping[str, Value] = config
    try:
        return expression.evaluate(env)
    except ExpressionError as error:
        raise ExpressionError(f"{what}: {error.reason}", error.text, error.column) from None


def _divisor_value(entry: Divisor, config: Mapping[str, ParamValue], axis: str) -> int:
    if isinstance(entry, int):
        return entry
    return _to_int(_evaluate(entry, config, f"grid_div_{axis}"), f"grid_div_{axis} {entry.text!r}")


def _to_int(value: Value, what: str) -> int:
    """Python's int(), which Kernel Tuner applies: floats truncate, "32" reads as 32."""
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpaceError(f"{what} is {value}")
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise SpaceError(f"{what} is the string {value!r}, not a number") from None
    raise SpaceError(f"{what} is a {type(value).__name__}, not a number")


def _describe(config: Mapping[str, ParamValue]) -> str:
    if isinstance(config, Configuration):
        return config.describe()
    return " ".join(f"{name}={value}" for name, value in config.items())
