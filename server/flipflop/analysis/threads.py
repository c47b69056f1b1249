"""How a value depends on the thread's position in the launch.

A thread index such as `blockIdx.x * blockDim.x + threadIdx.x` takes every value in
`[0, ntid.x · nctaid.x)` exactly once over the launch. Recognising these forms lets guards become
fractions of launched threads and thread-dependent loop starts become exact averages.
"""

from __future__ import annotations

from flipflop.analysis import expr as ex
from flipflop.analysis.poly import Poly

POSITION_ATOMS = frozenset((
    "tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z", "laneid", "warpid",
))  # fmt: skip
LANE_ATOMS = ("tid.x", "tid.y", "tid.z", "laneid")
_DIMS = ("x", "y", "z")


def split_position(value: Poly) -> tuple[Poly, Poly]:
    """(the part that depends on the thread's position, the rest)."""
    return value.only(POSITION_ATOMS), value.without(POSITION_ATOMS)


def index_extent(position: Poly) -> tuple[float, ex.Expr] | None:
    """(a, N) when `position == a · i` for an index i that takes every value of [0, N) equally
    often over the launched threads."""
    for dim in _DIMS:
        tid, ntid, ctaid, nctaid = f"tid.{dim}", f"ntid.{dim}", f"ctaid.{dim}", f"nctaid.{dim}"
        scale = position.terms.get((tid,))
        if scale is not None:
            candidates = [
                (Poly.atom(tid), ex.sym(ntid)),
                (Poly.atom(tid) + Poly.atom(ctaid) * Poly.atom(ntid),
                 ex.mul(ex.sym(ntid), ex.sym(nctaid))),
            ]  # fmt: skip
            if dim == "x":
                candidates.append(
                    (
                        Poly.atom("tid.x") + Poly.atom("tid.y") * Poly.atom("ntid.x"),
                        ex.mul(ex.sym("ntid.x"), ex.sym("ntid.y")),
                    )
                )
            for shape, extent in candidates:
                if position == shape.scale(scale):
                    return scale, extent
            tile = position.terms.get((ctaid,))
            if tile is not None and len(position.terms) == 2 and tile % scale == 0:
                # blockIdx * TILE + threadIdx with a fixed tile: exact when blockDim == TILE.
                return scale, ex.mul(ex.const(tile / scale), ex.sym(nctaid))
        scale = position.terms.get((ctaid,))
        if scale is not None and len(position.terms) == 1:
            return scale, ex.sym(nctaid)
    scale = position.terms.get(("laneid",))
    if scale is not None and len(position.terms) == 1:
        return scale, ex.const(32)
    return None


def mean_position(position: Poly) -> ex.Expr | None:
    """The value averaged over launched threads (each index uniform over its range)."""
    substituted: list[ex.Expr] = []
    for monomial, coefficient in position.terms.items():
        factors: list[ex.Expr] = [ex.const(coefficient)]
        for atom in monomial:
            mean = _mean_atom(atom)
            if mean is None:
                return None
            factors.append(mean)
        substituted.append(ex.mul(*factors))
    return ex.add(*substituted) if substituted else ex.ZERO


def _mean_atom(atom: str) -> ex.Expr | None:
    if atom.startswith(("tid.", "ctaid.")):
        extent = ("ntid." if atom.startswith("tid.") else "nctaid.") + atom[-1]
        return ex.div(ex.sub(ex.sym(extent), ex.ONE), ex.const(2))
    if atom == "laneid":
        return ex.const(15.5)
    if atom in ex.SHAPE_SYMBOLS:
        return ex.sym(atom)
    if atom.startswith("param:"):
        return ex.sym(atom[6:])
    return None


def strides_exactly(position: Poly, step: Poly) -> bool:
    """Whether consecutive threads start one step apart: `for (i = tid; ...; i += ntid)` and the
    grid-stride form. Then the threads split the range evenly and the average trip count is
    exactly range / step."""
    extent = index_extent(position)
    if extent is None:
        return False
    scale, _ = extent
    for dim in _DIMS:
        ntid, nctaid = Poly.atom(f"ntid.{dim}"), Poly.atom(f"nctaid.{dim}")
        tid, ctaid = Poly.atom(f"tid.{dim}"), Poly.atom(f"ctaid.{dim}")
        if position == tid.scale(scale) and step == ntid.scale(scale):
            return True
        if position == (tid + ctaid * ntid).scale(scale) and step == (ntid * nctaid).scale(scale):
            return True
    return False
