"""Thread indices divided by, or taken modulo, a constant: `tid / 16`, `tid % 16`.

A tile loaded by a reshaped thread grid (CLBlast's GEMM: `la0 = tid % MDIMA`,
`la1 = tid / MDIMA` with `tid = MDIMC · tid.y + tid.x`) addresses memory through such values.
They are not polynomials in the thread index, so the dataflow keeps each as an opaque value
whose key says what it is (`opq:<taint>:lanefn:div:16:16*tid.y + tid.x`): everything that does
not look further treats it as any other opaque thread-dependent value, and the lane-address
code (`flipflop.analysis.memory`) evaluates it thread by thread.

Only a base that is a nonnegative function of the thread's position inside its block (thread
indices times positive constants or block sizes) is kept so: then C's truncating division and
remainder are the floor ones, and the value is the same in every block.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flipflop.analysis import expr as ex
from flipflop.analysis.poly import LANE, Poly

_PREFIX = "lanefn:"
_LANE_ATOMS = ("tid.x", "tid.y", "tid.z", "laneid")
_SHAPE_ATOMS = frozenset(ex.SHAPE_SYMBOLS)
# Atoms that are never negative: indices, counts and sizes of the launch.
_NONNEGATIVE_ATOMS = frozenset((*_LANE_ATOMS, *ex.SHAPE_SYMBOLS, "ctaid.x", "ctaid.y",
                                "ctaid.z", "warpid", "nwarpid", "smid"))  # fmt: skip

# (scale, remainder?, divisor, base coefficients of tid.x, tid.y, tid.z, laneid, base offset)
EvaluatedFunction = tuple[int, bool, int, int, int, int, int, int]


@dataclass(frozen=True)
class LaneFunction:
    """`scale · (base / divisor)` or `scale · (base % divisor)` in an address."""

    scale: ex.Expr
    remainder: bool
    divisor: int
    base: tuple[ex.Expr, ex.Expr, ex.Expr, ex.Expr]  # coefficients of tid.x, tid.y, tid.z, laneid
    base_offset: int

    def evaluate(self, env: Mapping[str, float]) -> EvaluatedFunction:
        """Raises `ex.MissingSymbol` when a coefficient needs a value `env` lacks."""
        ax, ay, az, al = (round(c.evaluate(env)) for c in self.base)
        return (round(self.scale.evaluate(env)), self.remainder, self.divisor, ax, ay, az, al,
                self.base_offset)  # fmt: skip


def function_value(function: EvaluatedFunction, x: int, y: int, z: int, lane: int) -> int:
    scale, remainder, divisor, ax, ay, az, al, offset = function
    base = offset + ax * x + ay * y + az * z + al * lane
    return scale * (base % divisor if remainder else base // divisor)


def function_atom(base: Poly, divisor: int, remainder: bool) -> Poly | None:
    """`base % divisor` (or `base / divisor`) as an opaque atom that keeps what it is; None when
    `base` is not a nonnegative function of the thread's position in its block."""
    if divisor <= 1 or not base.taint() & LANE or not _within_block(base):
        return None
    operation = "mod" if remainder else "div"
    return Poly.opaque(base.taint(), f"{_PREFIX}{operation}:{divisor}:{base}")


def is_nonnegative(value: Poly) -> bool:
    """Whether the value is a sum of launch indices and sizes with nonnegative coefficients
    (and of such lane functions): the sign bit a signed division tests is then 0."""
    for monomial, coefficient in value.terms.items():
        if coefficient < 0:
            return False
        for atom in monomial:
            if atom not in _NONNEGATIVE_ATOMS and decode(atom) is None:
                return False
    return True


def decode(atom: str) -> tuple[bool, int, Poly] | None:
    """(remainder?, divisor, base) of an atom `function_atom` made; None for any other atom."""
    if not atom.startswith("opq:"):
        return None
    key = atom[atom.index(":", 4) + 1 :]
    if not key.startswith(_PREFIX):
        return None
    operation, divisor, text = key[len(_PREFIX) :].split(":", 2)
    return operation == "mod", int(divisor), _parse(text)


def _within_block(base: Poly) -> bool:
    for monomial, coefficient in base.terms.items():
        if coefficient < 0 or not float(coefficient).is_integer():
            return False
        lanes = 0
        for atom in monomial:
            if atom in _LANE_ATOMS:
                lanes += 1
            elif atom not in _SHAPE_ATOMS:
                return False
        if lanes > 1:
            return False
    return True


def _parse(text: str) -> Poly:
    """The inverse of `str(Poly)` for the polynomials `_within_block` accepts."""
    value = Poly.constant(0)
    for term in text.split(" + "):
        factors = term.split("*")
        coefficient = 1.0
        if factors[0][:1].isdigit() or factors[0][:1] == "-":
            coefficient = float(factors.pop(0))
        product = Poly.constant(coefficient)
        for atom in factors:
            product = product * Poly.atom(atom)
        value = value + product
    return value
