"""Polynomial forms of register values: sums of products of atoms with numeric coefficients.

An address such as `x + 4 * (ctaid.x * ntid.x + tid.x)` is kept as terms over atoms, so the
analysis can read off how it changes from lane to lane (the `tid.x` coefficient), from one loop
iteration to the next (the `iter:` coefficient) and what it depends on.

Atoms:
- special registers by name: `tid.x`, `ntid.x`, `ctaid.y`, `nctaid.z`, `laneid`, ...
- `param:NAME` a kernel parameter's value; `sym:NAME` the address of a variable;
- `iter:N` the iteration number (0, 1, ...) of loop N of the function being analysed;
- `opq:F:KEY` a value the analysis does not follow, with its taint F (a `Taint` bit set).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flipflop.analysis import expr as ex

Monomial = tuple[str, ...]  # sorted atom names; () is the constant term

THREAD = 1  # differs between the threads of a launch (thread or block index)
DATA = 2  # comes from memory or from something the analysis cannot see through
# Differs between the lanes of one warp (a subset of THREAD). Two bits: `LANE_ROWS` alone says
# the value follows only tid.y/tid.z, which are the same across a warp whose block is a whole
# number of warps wide; `LANE_ACROSS` (set by everything else that sets `LANE`: tid.x, laneid,
# shuffles, unknown inputs) says it may differ along a row too. `taint & LANE` is either.
LANE_ROWS = 4
LANE_ACROSS = 8
LANE = LANE_ROWS | LANE_ACROSS

MAX_TERMS = 24  # past this the value is treated as opaque: keeps huge unrolled chains cheap

_LANE_ATOMS = frozenset(("tid.x", "tid.y", "tid.z", "laneid"))
_ROW_ATOMS = frozenset(("tid.y", "tid.z"))
_BLOCK_ATOMS = frozenset(("ctaid.x", "ctaid.y", "ctaid.z", "warpid", "nwarpid", "smid"))
_SHAPE_ATOMS = frozenset(ex.SHAPE_SYMBOLS)


def atom_taint(atom: str) -> int:
    if atom in _ROW_ATOMS:
        return THREAD | LANE_ROWS
    if atom in _LANE_ATOMS:
        return THREAD | LANE
    if atom in _BLOCK_ATOMS:
        return THREAD
    if atom.startswith("opq:"):
        return int(atom[4 : atom.index(":", 4)])
    if atom in _SHAPE_ATOMS or atom.startswith(("param:", "sym:", "iter:")):
        return 0
    return DATA  # clocks, performance counters and other special registers


class Poly:
    """An immutable polynomial; build new ones with the operators, never mutate `terms`."""

    __slots__ = ("_taint", "terms")

    def __init__(self, terms: Mapping[Monomial, float]) -> None:
        if 0 in terms.values():
            self.terms: dict[Monomial, float] = {m: c for m, c in terms.items() if c != 0}
        else:
            self.terms = dict(terms)
        self._taint = -1  # worked out on first use: register values are read many times

    @staticmethod
    def constant(value: float) -> Poly:
        poly = _new_poly(_POLY)
        poly.terms = {(): value} if value != 0 else {}
        poly._taint = 0
        return poly

    @staticmethod
    def atom(name: str) -> Poly:
        poly = _new_poly(_POLY)
        poly.terms = {(name,): 1}
        poly._taint = -1
        return poly

    @staticmethod
    def opaque(taint: int, key: str) -> Poly:
        poly = _new_poly(_POLY)
        poly.terms = {(f"opq:{taint}:{key}",): 1}
        poly._taint = taint
        return poly

    def __add__(self, other: Poly) -> Poly:
        terms = self.terms.copy()
        get = terms.get
        for monomial, coefficient in other.terms.items():
            terms[monomial] = get(monomial, 0) + coefficient
        return _owning(terms)

    def plus_constant(self, value: float) -> Poly:
        """`self + Poly.constant(value)` without building the constant."""
        terms = self.terms.copy()
        constant = terms.get((), 0) + value
        if constant:
            terms[()] = constant
        else:
            terms.pop((), None)
        poly = _new_poly(_POLY)
        poly.terms = terms
        poly._taint = self._taint  # the atoms are the same
        return poly

    def __neg__(self) -> Poly:
        return self.scale(-1)

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        terms: dict[Monomial, float] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                monomial = tuple(sorted(m1 + m2)) if m1 and m2 else m1 or m2
                terms[monomial] = terms.get(monomial, 0) + c1 * c2
        return _owning(terms)

    def scale(self, factor: float) -> Poly:
        terms: dict[Monomial, float] = {}
        for monomial, coefficient in self.terms.items():  # a loop: cheaper than a comprehension
            terms[monomial] = coefficient * factor
        return _owning(terms)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __repr__(self) -> str:
        return f"Poly({self})"

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for monomial, coefficient in sorted(self.terms.items()):
            factors = [*monomial]
            if coefficient != 1 or not factors:
                factors.insert(0, _number(coefficient))
            parts.append("*".join(factors))
        return " + ".join(parts)

    # ------------------------------------------------------------------ queries

    @property
    def is_constant(self) -> bool:
        terms = self.terms  # keys are distinct: only one of them can be the constant ()
        return not terms or (len(terms) == 1 and () in terms)

    @property
    def constant_term(self) -> float:
        return self.terms.get((), 0)

    @property
    def too_big(self) -> bool:
        return len(self.terms) > MAX_TERMS

    def atoms(self) -> set[str]:
        return {atom for monomial in self.terms for atom in monomial}

    def taint(self) -> int:
        flags = self._taint
        if flags < 0:
            flags = 0
            for monomial in self.terms:
                for atom in monomial:
                    flags |= atom_taint(atom)
            self._taint = flags
        return flags

    def contains(self, atom: str) -> bool:
        return any(atom in monomial for monomial in self.terms)

    def split(self, atom: str) -> tuple[Poly, Poly] | None:
        """(coefficient, rest) with self = atom * coefficient + rest; None when not linear in it."""
        coefficient: dict[Monomial, float] = {}
        rest: dict[Monomial, float] = {}
        for monomial, value in self.terms.items():
            count = monomial.count(atom)
            if count == 0:
                rest[monomial] = value
            elif count == 1:
                reduced = list(monomial)
                reduced.remove(atom)
                coefficient[tuple(reduced)] = value
            else:
                return None
        return Poly(coefficient), Poly(rest)

    def without(self, atoms: Iterable[str]) -> Poly:
        """Drops every term that mentions one of the atoms."""
        dropped = set(atoms)
        return Poly({m: c for m, c in self.terms.items() if not dropped.intersection(m)})

    def only(self, atoms: Iterable[str]) -> Poly:
        """Keeps only the terms that mention one of the atoms."""
        kept = set(atoms)
        return Poly({m: c for m, c in self.terms.items() if kept.intersection(m)})

    def to_expr(self) -> ex.Expr | None:
        """The value as an expression over shape symbols and parameters; None when it needs
        anything else (a thread index, a loop counter, an opaque value)."""
        terms: list[ex.Expr] = []
        for monomial, coefficient in self.terms.items():
            factors: list[ex.Expr] = [ex.const(coefficient)]
            for atom in monomial:
                if atom in _SHAPE_ATOMS:
                    factors.append(ex.sym(atom))
                elif atom.startswith("param:"):
                    factors.append(ex.sym(atom[6:]))
                else:
                    return None
            terms.append(ex.mul(*factors))
        return ex.add(*terms) if terms else ex.ZERO


_POLY = Poly
_new_poly = object.__new__


def _owning(terms: dict[Monomial, float]) -> Poly:
    """A Poly around a freshly built dict, without copying it (zero terms dropped)."""
    poly = _new_poly(_POLY)
    if 0 in terms.values():
        terms = {m: c for m, c in terms.items() if c != 0}
    poly.terms = terms
    poly._taint = -1
    return poly


ZERO = Poly({})


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
