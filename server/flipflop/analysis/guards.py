"""Fractions of launched threads for which a branch condition holds.

`if (threadIdx.x < 128)` in a 256-thread block holds for half the threads; `if (i < n)` with
`i = blockIdx.x * blockDim.x + threadIdx.x` holds for min(1, n / (ntid.x · nctaid.x)) of them.
The index is taken as uniform over its range (exact for thread and global indices). Conditions
on two dimensions are taken as independent. Conditions that are the same for every thread
(`if (steps < 1)`) become 0 or 1 once the parameters are known.
"""

from __future__ import annotations

from collections.abc import Callable

from flipflop.analysis import expr as ex
from flipflop.analysis.conditions import Both, Compare, Condition, Either, Not
from flipflop.analysis.poly import Poly
from flipflop.analysis.threads import index_extent, split_position

HalvingLookup = Callable[[str], "tuple[ex.Expr, ex.Expr] | None"]
"""For an opaque atom: (start, trips) when it is a halving loop counter `s >>= 1`."""


def fraction(condition: Condition, halving: HalvingLookup | None = None) -> ex.Expr | None:
    """The fraction of launched threads for which the condition holds; None when unknown."""
    if isinstance(condition, Not):
        inner = fraction(condition.inner, halving)
        return None if inner is None else ex.sub(ex.ONE, inner)
    if isinstance(condition, Both):
        left, right = fraction(condition.left, halving), fraction(condition.right, halving)
        return None if left is None or right is None else ex.mul(left, right)
    if isinstance(condition, Either):
        left, right = fraction(condition.left, halving), fraction(condition.right, halving)
        if left is None or right is None:
            return None
        return ex.sub(ex.add(left, right), ex.mul(left, right))
    return _compare(condition, halving)


def _compare(condition: Compare, halving: HalvingLookup | None) -> ex.Expr | None:
    difference = condition.left - condition.right  # the condition is `difference op 0`
    op = condition.op
    position, rest = split_position(difference)
    if not position.terms:
        uniform = rest.to_expr()
        return None if uniform is None else _indicator(uniform, op)
    extent = index_extent(position)
    if extent is None:
        return None
    scale, count = extent
    if scale < 0:
        scale, rest = -scale, -rest
        op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}.get(op, op)
    # index op limit, with limit = -rest / scale
    halved = _halving_bound(rest, scale, op, count, halving)
    if halved is not None:
        return halved
    rest_expr = rest.to_expr()
    if rest_expr is None:
        return None
    limit = ex.div(ex.neg(rest_expr), ex.const(scale))
    below = ex.clamp01(ex.div(limit, count))  # share of indices < limit
    below_or_at = ex.clamp01(ex.div(ex.add(limit, ex.ONE), count))
    if op == "lt":
        return below
    if op == "le":
        return below_or_at
    if op == "gt":
        return ex.sub(ex.ONE, below_or_at)
    if op == "ge":
        return ex.sub(ex.ONE, below)
    single = ex.div(ex.ONE, count)
    return single if op == "eq" else ex.sub(ex.ONE, single)


def _indicator(value: ex.Expr, op: str) -> ex.Expr | None:
    """1 when `value op 0` holds, else 0 (integer comparison)."""
    if op == "lt":
        return ex.less(value, ex.ZERO)
    if op == "le":
        return ex.less(value, ex.ONE)
    if op == "gt":
        return ex.less(ex.neg(value), ex.ZERO)
    if op == "ge":
        return ex.less(ex.neg(value), ex.ONE)
    differs = ex.add(ex.less(value, ex.ZERO), ex.less(ex.ZERO, value))
    if op == "ne":
        return differs
    if op == "eq":
        return ex.sub(ex.ONE, differs)
    return None


def _halving_bound(
    rest: Poly, scale: float, op: str, count: ex.Expr, halving: HalvingLookup | None
) -> ex.Expr | None:
    """`tid < s` inside `for (s = n/2; s > 0; s >>= 1)`: summed over the iterations the share
    of busy threads is (n/2 + n/4 + ... + 1) / N ≈ (2·start − 1) / N; spread over the trips."""
    if halving is None or op != "lt" or scale != 1 or len(rest.terms) != 1:
        return None
    ((monomial, coefficient),) = rest.terms.items()
    if coefficient != -1 or len(monomial) != 1 or not monomial[0].startswith("opq:"):
        return None
    found = halving(monomial[0].rsplit(":", 1)[1])
    if found is None:
        return None
    start, trips = found
    busy = ex.sub(ex.mul(ex.const(2), start), ex.ONE)
    return ex.clamp01(ex.div(busy, ex.mul(count, trips)))
