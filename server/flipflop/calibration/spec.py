"""How to run a kernel for measurement: the `flipflop-measure` header a .cu file carries.

A header is a block comment that starts with `flipflop-measure` followed by one JSON object:

    /* flipflop-measure
    {"kernel": "vector_add", "params": {"n": 67108864}, "threads": ["n"],
     "blocks": "32,64,128,256,512,1024",
     "args": [{"name": "a", "type": "f32*", "count": "n", "init": "random"},
              {"name": "c", "type": "f32*", "count": "n", "init": "poison"},
              {"name": "n", "type": "i32", "value": "n"}],
     "check": {"reference": "vector_add", "outputs": ["c"], "rtol": 1e-6},
     "work": {"dram_bytes": "12*n", "fp32_flops": "n"}}
    */

Sizes, values and work are arithmetic expressions over the parameters and, where they depend on
the launch, `block_x`, `block_y`, `block_z`, `block_threads`, `grid_x`, `grid_y`, `grid_z`,
`grid_blocks` and `sms`. calibration/README.md documents every key.

A kernel whose source may not carry a header (a measured search space's, kept as published)
is described by the same JSON object in a file of its own (`read_spec_file`). Such a
description may also fill `__constant__` symbols (`constants`), as Kernel Tuner's `cmem_args`.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from flipflop.launch import Dim3, ceil_div

Init = Literal["random", "zero", "poison", "ones", "iota", "index_random", "normal", "circle"]
SCALAR_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")
POINTER_TYPES = ("f32*", "f64*", "f16*", "i32*", "u32*", "i64*", "u64*")
# normal: standard normal draws, as Kernel Tuner's scripts fill with numpy.random.randn.
# circle: x,y pairs of count/2 points on the unit circle at uniform random angles in descending
# order, the polygon of Kernel Tuner's point-in-polygon script (tune_pnpoly.py).
INITS: tuple[Init, ...] = (
    "random", "zero", "poison", "ones", "iota", "index_random", "normal", "circle",
)


class SpecError(ValueError):
    """A header or command-line launch description that cannot be used."""


@dataclass(frozen=True)
class ArgSpec:
    name: str
    type: str  # one of SCALAR_TYPES or POINTER_TYPES
    count: str = "0"  # elements, for pointers
    value: str = "0"  # for scalars
    init: Init = "random"
    range: str = "0"  # index_random draws integers in [0, range)

    @property
    def is_pointer(self) -> bool:
        return self.type.endswith("*")


@dataclass(frozen=True)
class ConstantSpec:
    """A `__constant__` symbol filled before the kernel runs (Kernel Tuner's `cmem_args`):
    with its own data (`type`, `count`, `init`), or with an argument's (`source`)."""

    name: str
    type: str = "f32"  # an element type of POINTER_TYPES without the star
    count: str = "0"
    init: Init = "random"
    source: str | None = None  # the name of a pointer argument whose initial data it copies


@dataclass(frozen=True)
class CheckSpec:
    reference: str  # a function name in flipflop.calibration.references
    outputs: tuple[str, ...]
    rtol: float = 1e-5


@dataclass(frozen=True)
class KernelSpec:
    kernel: str
    args: tuple[ArgSpec, ...]
    params: Mapping[str, float] = field(default_factory=dict)
    threads: tuple[str, ...] | None = None
    grid: tuple[str, ...] | None = None
    blocks: tuple[Dim3, ...] = ()
    dynamic_smem: str = "0"
    work: Mapping[str, str] = field(default_factory=dict)
    check: CheckSpec | None = None
    # Parameter sets `flipflop calibrate` measures in turn (e.g. how many SMs to load).
    variants: tuple[Mapping[str, float], ...] = ()
    constants: tuple[ConstantSpec, ...] = ()
    note: str = ""  # how the data differ from the original measurements, for the record


_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "ceil": lambda x: float(math.ceil(x)),
    "floor": lambda x: float(math.floor(x)),
    "sqrt": math.sqrt,
}


def evaluate(expression: str | float | int, names: Mapping[str, float]) -> float:
    """Value of an arithmetic expression (numbers, names, + - * / // % **, min/max/ceil/...)."""
    if isinstance(expression, (int, float)):
        return float(expression)
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"cannot parse expression {expression!r}") from exc

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise SpecError(f"unknown name {node.id!r} in expression {expression!r}")
            return float(names[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS
            and not node.keywords
        ):
            return float(_FUNCTIONS[node.func.id](*(walk(a) for a in node.args)))
        raise SpecError(f"unsupported syntax in expression {expression!r}")

    try:
        return walk(tree)
    except ZeroDivisionError as exc:
        raise SpecError(f"division by zero in expression {expression!r}") from exc


def parse_dim3(text: str, what: str) -> Dim3:
    """`X[,Y[,Z]]` with positive integers."""
    parts = text.split(",")
    try:
        dims = [int(p) for p in parts]
    except ValueError as exc:
        raise SpecError(f"{what}: expected X[,Y[,Z]] with integers, got {text!r}") from exc
    if not 1 <= len(dims) <= 3 or any(d <= 0 for d in dims):
        raise SpecError(f"{what}: expected 1 to 3 positive integers, got {text!r}")
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


def parse_blocks(text: str) -> tuple[Dim3, ...]:
    """`BX[xBY[xBZ]],...`, e.g. `128,256,16x16`."""
    blocks: list[Dim3] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        blocks.append(parse_dim3(item.replace("x", ","), "--blocks"))
    if not blocks:
        raise SpecError("--blocks: no block shape given")
    if any(b[0] * b[1] * b[2] > 1024 for b in blocks):
        raise SpecError("--blocks: a block has more than 1024 threads")
    return tuple(blocks)


def parse_param(text: str) -> tuple[str, float]:
    """`NAME=VALUE` with a numeric value."""
    name, sep, value = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
        raise SpecError(f"--param: expected NAME=VALUE, got {text!r}")
    try:
        return name.strip(), float(value)
    except ValueError as exc:
        raise SpecError(f"--param {name}: {value!r} is not a number") from exc


_HEADER = re.compile(r"/\*\s*flipflop-measure\b(.*?)\*/", re.DOTALL)


def parse_headers(source: str, origin: str) -> tuple[KernelSpec, ...]:
    """Every `flipflop-measure` header of a .cu file, in order."""
    specs = []
    for match in _HEADER.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        where = f"{origin}:{line}:1"
        try:
            raw = json.loads(match.group(1))
        except json.JSONDecodeError as exc:
            message = f"{where}: flipflop-measure header is not valid JSON ({exc.msg})"
            raise SpecError(message) from exc
        specs.append(_spec_from_json(raw, where))
    return tuple(specs)


def read_spec_file(path: str, text: str) -> KernelSpec:
    """A kernel description kept in a JSON file of its own (the header's object)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from exc
    return _spec_from_json(raw, path)


def _spec_from_json(raw: object, where: str) -> KernelSpec:
    if not isinstance(raw, dict) or not isinstance(raw.get("kernel"), str):
        raise SpecError(f"{where}: the header needs a JSON object with a \"kernel\" name")
    try:
        args = tuple(_arg_from_json(a) for a in raw.get("args", []))
        check_raw = raw.get("check")
        check = None
        if check_raw is not None:
            check = CheckSpec(
                reference=str(check_raw["reference"]),
                outputs=tuple(str(o) for o in check_raw["outputs"]),
                rtol=float(check_raw.get("rtol", 1e-5)),
            )
        blocks_raw = raw.get("blocks", "")
        blocks = parse_blocks(blocks_raw) if blocks_raw else ()
        threads = raw.get("threads")
        grid = raw.get("grid")
        if threads is not None and grid is not None:
            raise SpecError("give \"threads\" or \"grid\", not both")
        return KernelSpec(
            kernel=raw["kernel"],
            args=args,
            params={str(k): float(v) for k, v in raw.get("params", {}).items()},
            threads=None if threads is None else tuple(str(t) for t in threads),
            grid=None if grid is None else tuple(str(g) for g in grid),
            blocks=blocks,
            dynamic_smem=str(raw.get("dynamic_smem", "0")),
            work={str(k): str(v) for k, v in raw.get("work", {}).items()},
            check=check,
            variants=tuple(
                {str(k): float(v) for k, v in variant.items()}
                for variant in raw.get("variants", [])
            ),
            constants=_constants_from_json(raw.get("constants", []), args),
            note=str(raw.get("note", "")),
        )
    except SpecError as exc:
        raise SpecError(f"{where}: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"{where}: malformed flipflop-measure header ({exc!r})") from exc


def _arg_from_json(raw: Mapping[str, object]) -> ArgSpec:
    name = str(raw["name"])
    type_ = str(raw["type"])
    if type_ not in SCALAR_TYPES + POINTER_TYPES:
        raise SpecError(f"argument {name}: unknown type {type_!r}")
    init = str(raw.get("init", "random"))
    if init not in INITS:
        raise SpecError(f"argument {name}: unknown init {init!r} (one of {', '.join(INITS)})")
    return ArgSpec(
        name=name,
        type=type_,
        count=str(raw.get("count", "0")),
        value=str(raw.get("value", "0")),
        init=init,
        range=str(raw.get("range", "0")),
    )


def _constants_from_json(raw: object, args: tuple[ArgSpec, ...]) -> tuple[ConstantSpec, ...]:
    if not isinstance(raw, list):
        raise SpecError("\"constants\" must be a list of objects")
    pointers = {arg.name: arg for arg in args if arg.is_pointer}
    constants = []
    for item in raw:
        name = str(item["name"])
        source = item.get("source")
        if source is not None:
            if str(source) not in pointers:
                raise SpecError(f"constant {name}: source {source!r} is not a pointer argument")
            argument = pointers[str(source)]
            constants.append(ConstantSpec(name, argument.type.rstrip("*"), argument.count,
                                          argument.init, str(source)))
            continue
        type_ = str(item.get("type", "f32"))
        if f"{type_}*" not in POINTER_TYPES:
            raise SpecError(f"constant {name}: unknown element type {type_!r}")
        init = str(item.get("init", "random"))
        if init not in INITS or init == "poison":
            raise SpecError(f"constant {name}: unknown init {init!r}")
        constants.append(ConstantSpec(name, type_, str(item.get("count", "0")), init))
    return tuple(constants)


def find_spec(specs: tuple[KernelSpec, ...], kernel: str, origin: str) -> KernelSpec:
    for spec in specs:
        if spec.kernel == kernel:
            return spec
    known = ", ".join(s.kernel for s in specs) or "none"
    raise SpecError(
        f"{origin}: no flipflop-measure header for kernel {kernel!r} (headers for: {known}); "
        "see calibration/README.md for the format"
    )


def launch_names(
    params: Mapping[str, float], block: Dim3, grid: Dim3 | None, sms: int
) -> dict[str, float]:
    names: dict[str, float] = dict(params)
    names.update(
        block_x=block[0], block_y=block[1], block_z=block[2],
        block_threads=block[0] * block[1] * block[2], sms=sms,
    )
    if grid is not None:
        names.update(
            grid_x=grid[0], grid_y=grid[1], grid_z=grid[2], grid_blocks=grid[0] * grid[1] * grid[2]
        )
    return names


def _as_dim3(values: tuple[float, ...], what: str) -> Dim3:
    dims = [int(v) for v in values] + [1] * (3 - len(values))
    if len(values) > 3 or any(d <= 0 for d in dims):
        raise SpecError(f"{what} must be 1 to 3 positive sizes, got {values}")
    return (dims[0], dims[1], dims[2])


def grid_for(
    spec: KernelSpec,
    params: Mapping[str, float],
    block: Dim3,
    sms: int,
    grid: Dim3 | None = None,
    threads: Dim3 | None = None,
) -> Dim3:
    """The grid of one launch: a command-line grid/thread count wins over the header's."""
    if grid is not None:
        return grid
    if threads is None and spec.threads is not None:
        names = launch_names(params, block, None, sms)
        threads = _as_dim3(tuple(evaluate(t, names) for t in spec.threads), "threads")
    if threads is not None:
        return (
            ceil_div(threads[0], block[0]),
            ceil_div(threads[1], block[1]),
            ceil_div(threads[2], block[2]),
        )
    if spec.grid is not None:
        names = launch_names(params, block, None, sms)
        return _as_dim3(tuple(evaluate(g, names) for g in spec.grid), "grid")
    raise SpecError(f"kernel {spec.kernel}: give --grid or --threads (the header has neither)")
