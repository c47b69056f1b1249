"""Small symbolic expressions for counts that depend on the launch shape or kernel parameters.

Symbols are `ntid.x/y/z` (block shape), `nctaid.x/y/z` (grid shape) and PTX parameter names
(`_Z5saxpyifPKfPf_param_0`). Expressions are immutable trees, folded while they are built, and
`evaluate(env)` turns them into a number; a symbol missing from `env` raises `MissingSymbol`, so
the caller can fall back to a documented default and say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from flipflop.launch import LaunchShape

SHAPE_SYMBOLS = ("ntid.x", "ntid.y", "ntid.z", "nctaid.x", "nctaid.y", "nctaid.z")


class MissingSymbol(KeyError):
    """An expression needs a symbol (usually a kernel parameter) the caller did not give."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


OpKind = Literal["add", "mul", "div", "ceildiv", "min", "max", "less", "bitlen", "meanceil"]


@dataclass(frozen=True)
class Const:
    value: float

    def evaluate(self, env: Mapping[str, float]) -> float:
        return self.value

    def symbols(self) -> frozenset[str]:
        return frozenset()

    def __str__(self) -> str:
        return _number(self.value)


@dataclass(frozen=True)
class Sym:
    name: str

    def evaluate(self, env: Mapping[str, float]) -> float:
        try:
            return env[self.name]
        except KeyError:
            raise MissingSymbol(self.name) from None

    def symbols(self) -> frozenset[str]:
        return frozenset((self.name,))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Op:
    kind: OpKind
    args: tuple[Expr, ...]

    def evaluate(self, env: Mapping[str, float]) -> float:
        values = [arg.evaluate(env) for arg in self.args]
        kind = self.kind
        if kind == "add":
            return math.fsum(values)
        if kind == "mul":
            return math.prod(values)
        if kind == "min":
            return min(values)
        if kind == "max":
            return max(values)
        if kind == "less":
            return 1.0 if values[0] < values[1] else 0.0
        if kind == "bitlen":
            return float(int(max(0.0, values[0])).bit_length())
        if kind == "meanceil":
            return mean_ceil(*values)
        numerator, denominator = values
        if denominator == 0:
            return 0.0  # a zero stride or extent means the loop or guard never runs
        if kind == "div":
            return numerator / denominator
        return float(math.ceil(numerator / denominator))

    def symbols(self) -> frozenset[str]:
        result: frozenset[str] = frozenset()
        for arg in self.args:
            result |= arg.symbols()
        return result

    def __str__(self) -> str:
        kind = self.kind
        if kind == "add":
            text = str(self.args[0])
            for arg in self.args[1:]:
                negative = _negated(arg)
                text += f" - {negative}" if negative is not None else f" + {arg}"
            return f"({text})"
        if kind == "mul":
            factors = list(self.args)
            sign = ""
            if isinstance(factors[0], Const) and factors[0].value in (1.0, -1.0):
                sign = "-" if factors[0].value < 0 else ""
                factors = factors[1:]
            return sign + "*".join(_factor(arg) for arg in factors)
        if kind == "div":
            return f"{_factor(self.args[0])} / {_factor(self.args[1])}"
        if kind == "ceildiv":
            return f"ceil({self.args[0]} / {self.args[1]})"
        if kind == "less":
            return f"[{self.args[0]} < {self.args[1]}]"
        if kind == "bitlen":
            return f"bitlen({self.args[0]})"
        if kind == "meanceil":
            span, slope, stride, count = self.args
            return f"mean over i < {count} of max(0, ceil(({span} + {slope}*i) / {stride}))"
        return f"{kind}({', '.join(str(arg) for arg in self.args)})"


Expr = Const | Sym | Op

ZERO = Const(0.0)
ONE = Const(1.0)


def const(value: float) -> Expr:
    return Const(float(value))


def sym(name: str) -> Expr:
    return Sym(name)


def add(*terms: Expr) -> Expr:
    constant = 0.0
    rest: list[Expr] = []
    for term in terms:
        if isinstance(term, Const):
            constant += term.value
        elif isinstance(term, Op) and term.kind == "add":
            for inner in term.args:
                if isinstance(inner, Const):
                    constant += inner.value
                else:
                    rest.append(inner)
        else:
            rest.append(term)
    if constant != 0.0 or not rest:
        rest.append(Const(constant))
    return rest[0] if len(rest) == 1 else Op("add", tuple(rest))


def mul(*factors: Expr) -> Expr:
    constant = 1.0
    rest: list[Expr] = []
    for factor in factors:
        if isinstance(factor, Const):
            constant *= factor.value
        elif isinstance(factor, Op) and factor.kind == "mul":
            for inner in factor.args:
                if isinstance(inner, Const):
                    constant *= inner.value
                else:
                    rest.append(inner)
        else:
            rest.append(factor)
    if constant == 0.0:
        return ZERO
    if constant != 1.0 or not rest:
        rest.insert(0, Const(constant))
    return rest[0] if len(rest) == 1 else Op("mul", tuple(rest))


def neg(value: Expr) -> Expr:
    return mul(Const(-1.0), value)


def sub(left: Expr, right: Expr) -> Expr:
    return add(left, neg(right))


def div(numerator: Expr, denominator: Expr) -> Expr:
    if isinstance(denominator, Const) and denominator.value == 1.0:
        return numerator
    if isinstance(numerator, Const) and isinstance(denominator, Const):
        return Const(numerator.value / denominator.value if denominator.value else 0.0)
    if numerator == denominator:
        return ONE
    return Op("div", (numerator, denominator))


def ceil_div(numerator: Expr, denominator: Expr) -> Expr:
    if isinstance(numerator, Const) and isinstance(denominator, Const):
        if denominator.value == 0:
            return ZERO
        return Const(float(math.ceil(numerator.value / denominator.value)))
    if isinstance(denominator, Const) and denominator.value == 1.0:
        return numerator
    return Op("ceildiv", (numerator, denominator))


def minimum(*values: Expr) -> Expr:
    if all(isinstance(value, Const) for value in values):
        return Const(min(value.value for value in values if isinstance(value, Const)))
    return Op("min", values)


def maximum(*values: Expr) -> Expr:
    if all(isinstance(value, Const) for value in values):
        return Const(max(value.value for value in values if isinstance(value, Const)))
    return Op("max", values)


def less(left: Expr, right: Expr) -> Expr:
    """1 when left < right, else 0: a guard that is the same for every thread."""
    if isinstance(left, Const) and isinstance(right, Const):
        return ONE if left.value < right.value else ZERO
    return Op("less", (left, right))


def bit_length(value: Expr) -> Expr:
    """How many times a positive integer can be halved before it reaches zero."""
    if isinstance(value, Const):
        return Const(float(int(max(0.0, value.value)).bit_length()))
    return Op("bitlen", (value,))


def mean_ceil_of(span: Expr, slope: Expr, stride: Expr, count: Expr) -> Expr:
    """The mean over i = 0 .. count-1 of max(0, ceil((span + slope·i) / stride)): the exact
    average trip count of a loop whose start moves by -slope from one thread to the next."""
    args = (span, slope, stride, count)
    if all(isinstance(arg, Const) for arg in args):
        return Const(mean_ceil(*(arg.value for arg in args if isinstance(arg, Const))))
    return Op("meanceil", args)


_MAX_DIRECT_STRIDE = 1 << 16


def mean_ceil(span: float, slope: float, stride: float, count: float) -> float:
    """`mean_ceil_of`, evaluated. The terms grow by `slope` every `stride` indices, so whole
    periods are summed in closed form and only one period term by term; non-integer inputs
    or huge strides fall back to the value at the mean index."""
    n = int(count)
    if n <= 0 or stride <= 0:
        return 0.0
    integral = all(float(v).is_integer() for v in (span, slope, stride))
    if not integral or stride > _MAX_DIRECT_STRIDE:
        return max(0.0, math.ceil((span + slope * (n - 1) / 2) / stride))
    b, c, s = int(span), int(slope), int(stride)
    # Indices where the term is positive: span + slope·i >= 1, one contiguous run.
    if c == 0:
        return float(max(0, -(-b // s)))
    if c < 0:
        low, high = 0, min(n, (b - 1) // -c + 1) if b >= 1 else 0
    else:
        low, high = max(0, -(-(1 - b) // c)), n
    if high <= low:
        return 0.0
    # sum over j < m of ceil((b' + c·j) / s) with b' the value at `low`; ceil(x/s) is
    # floor((x + s - 1)/s), and the term at j + s is the term at j plus c.
    first = b + c * low + s - 1
    m = high - low
    periods, rest = divmod(m, s)
    one_period = sum((first + c * j) // s for j in range(min(s, m)))
    partial = sum((first + c * j) // s for j in range(rest))
    total = (
        periods * one_period + c * s * periods * (periods - 1) // 2 + partial + c * periods * rest
    )
    return total / n


def clamp01(value: Expr) -> Expr:
    return minimum(ONE, maximum(ZERO, value))


def shape_env(shape: LaunchShape) -> dict[str, float]:
    """The shape symbols of one launch."""
    bx, by, bz = shape.block
    gx, gy, gz = shape.grid
    return {
        "ntid.x": float(bx), "ntid.y": float(by), "ntid.z": float(bz),
        "nctaid.x": float(gx), "nctaid.y": float(gy), "nctaid.z": float(gz),
    }  # fmt: skip


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _negated(value: Expr) -> str | None:
    """The text of -value when value is visibly negative, else None."""
    if isinstance(value, Const) and value.value < 0:
        return _number(-value.value)
    if (
        isinstance(value, Op)
        and value.kind == "mul"
        and isinstance(value.args[0], Const)
        and value.args[0].value < 0
    ):
        return str(mul(Const(-value.args[0].value), *value.args[1:]))
    return None


def _factor(value: Expr) -> str:
    text = str(value)
    return f"({text})" if isinstance(value, Op) and value.kind in ("div", "mul") else text
