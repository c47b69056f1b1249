"""Trip counts of natural loops, as expressions in the launch shape and kernel parameters.

A loop is understood when one of its exits compares an induction variable `A + s·k` (k = 0, 1,
... the iteration) with a loop-invariant bound B. The count is per thread that enters the loop:
- bottom-tested loops (the test is in a latch, as nvcc rotates them) run the body once before
  the first test: trips = 1 + #{k ≥ 0 : the test passes for 0..k};
- top-tested loops run trips = #{k ≥ 0 : the test passes for 0..k}.
When A depends on the thread and the threads start one step apart (block- and grid-stride
loops) the exact average over threads is used: (B − A_base)/s. When A is a multiple of one
thread (or global) index plus a uniform base, each thread's count is averaged exactly over the
index's range. Otherwise the average thread (indices at their mean) stands for all.

Halving loops (`for (s = n / 2; s > 0; s >>= 1)`) run bitlen(n / 2) times.

Anything else gets `DEFAULT_TRIP_COUNT` and is flagged as assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.analysis import expr as ex
from flipflop.analysis.cfg import ControlFlow, Loop
from flipflop.analysis.conditions import SWAP, Compare, negate
from flipflop.analysis.dataflow import FunctionValues, InductionVariable
from flipflop.analysis.poly import DATA, Poly
from flipflop.analysis.threads import (
    index_extent,
    mean_position,
    split_position,
    strides_exactly,
)
from flipflop.ir import Function, Immediate, Register

DEFAULT_TRIP_COUNT = 16.0
"""Trips assumed for a loop whose bound the analysis cannot read (a data-dependent `while`, a
bound loaded from memory). Our choice, not a measurement: a short loop, so that an unknown
loop neither dominates nor vanishes; every use is reported as an assumption."""


@dataclass(frozen=True)
class TripCount:
    expression: ex.Expr
    assumed: bool
    reason: str  # how it was derived, or why it could not be
    # The exit test it was read from: (counter step, bound); None for halving loops.
    test: tuple[ex.Expr, ex.Expr] | None = None


def trip_count(
    function: Function, flow: ControlFlow, values: FunctionValues, loop: Loop
) -> TripCount:
    exits = _exit_branches(function, flow, loop)
    reasons: list[str] = []
    counted: list[TripCount] = []
    for block, bottom in exits:
        result = _from_exit(function, values, loop, block, bottom)
        if isinstance(result, TripCount):
            counted.append(result)
        else:
            reasons.append(result)
    if counted:
        first = counted[0]
        # Unrolled copies test the same counter against the same bound, each a step further;
        # an exit that tests another bound or step (`if (row >= rows) break;` in a tile loop)
        # may end the loop first, and only a run of the launch can say how often.
        if any(other.test != first.test for other in counted[1:]):
            return TripCount(first.expression, True, "another exit tests another bound: "
                             f"{first.reason} where a run cannot count it")  # fmt: skip
        return first
    reason = "; ".join(dict.fromkeys(reasons)) or "no conditional exit"
    return TripCount(ex.const(DEFAULT_TRIP_COUNT), True, reason)


def _exit_branches(function: Function, flow: ControlFlow, loop: Loop) -> list[tuple[int, bool]]:
    """Blocks ending in a conditional branch that leaves the loop, latches first."""
    found: list[tuple[int, bool]] = []
    for block in sorted(loop.body):
        instructions = function.blocks[block].instructions
        if not instructions or instructions[-1].opcode != "bra" or instructions[-1].guard is None:
            continue
        successors = flow.successors[block]
        if len(successors) == 2 and sum(s in loop.body for s in successors) == 1:
            found.append((block, block in loop.latches))
    found.sort(key=lambda item: (not item[1], item[0] != loop.header))
    return found


def _from_exit(
    function: Function, values: FunctionValues, loop: Loop, block: int, bottom: bool
) -> TripCount | str:
    instructions = function.blocks[block].instructions
    branch = instructions[-1]
    assert branch.guard is not None
    condition = values.condition(branch.guard.predicate, block, len(instructions) - 1)
    if condition is None:
        return "the exit test is not a comparison the analysis follows"
    if branch.guard.negated:
        condition = negate(condition)
    target = values.flow.branch_targets[block]
    if target not in loop.body:
        condition = negate(condition)  # the branch leaves: the loop continues when it is false
    if not isinstance(condition, Compare):
        return "the exit test combines several conditions"
    halving = _halving(function, values, loop, condition, bottom)
    if halving is not None:
        return halving
    counter = f"iter:{loop.index}"
    left, op, right = condition.left, condition.op, condition.right
    if right.contains(counter) and not left.contains(counter):
        left, right, op = right, left, SWAP[op]
    split = left.split(counter)
    if split is None or right.contains(counter) or not left.contains(counter):
        return "the exit test does not follow a counter that changes by a fixed step"
    step, start = split
    if split_position(step)[0].terms or step.to_expr() is None:
        return "the loop's step is not a constant, launch shape or parameter"
    direction = _sign(step)
    if direction == 0:
        return "the direction of the loop's step is unknown"
    position, start_base = split_position(start)
    if split_position(right)[0].terms:
        return "the loop's bound differs between threads"
    bound = right.to_expr()
    base = start_base.to_expr()
    if bound is None:
        return f"the loop's bound {_opaque_reason(right)}"
    if base is None:
        return f"the loop's start {_opaque_reason(start_base)}"
    magnitude = step.scale(direction)
    stride = magnitude.to_expr()
    assert stride is not None
    if direction > 0:
        ranges = {"lt": ex.sub(bound, base), "le": ex.add(ex.sub(bound, base), ex.ONE),
                  "ne": ex.sub(bound, base)}  # fmt: skip
    else:
        ranges = {"gt": ex.sub(base, bound), "ge": ex.add(ex.sub(base, bound), ex.ONE),
                  "ne": ex.sub(base, bound)}  # fmt: skip
    span = ranges.get(op)
    if span is None:
        return f"the exit test '{op}' never ends a loop stepping that way"
    exact_average = False
    if position.terms:
        extent = index_extent(position)
        if strides_exactly(position if direction > 0 else -position, magnitude):
            exact_average = True
        elif extent is not None and op != "ne":
            # Start = scale·i + base over an index i uniform on [0, count): average each
            # thread's own count exactly rather than count at the average start.
            scale, count = extent
            slope = ex.const(-scale if direction > 0 else scale)
            passes = ex.mean_ceil_of(span, slope, stride, count)
            trips = ex.add(passes, ex.ONE) if bottom else passes
            shape = "bottom-tested" if bottom else "top-tested"
            return TripCount(trips, False, f"{shape} loop, counter step {stride}, bound {bound}, "
                             "averaged over the threads' starts", (stride, bound))  # fmt: skip
        else:
            mean = mean_position(position)
            if mean is None:
                return "the loop's start depends on the thread in a way the analysis cannot average"
            span = ex.sub(span, mean) if direction > 0 else ex.add(span, mean)
    if exact_average or op == "ne":
        passes = ex.maximum(ex.ZERO, ex.div(span, stride))
    else:
        passes = ex.maximum(ex.ZERO, ex.ceil_div(span, stride))
    trips = ex.add(passes, ex.ONE) if bottom else passes
    if bottom:
        trips = ex.maximum(ex.ONE, trips)
    shape = "bottom-tested" if bottom else "top-tested"
    return TripCount(trips, False, f"{shape} loop, counter step {stride}, bound {bound}",
                     (stride, bound))


def _halving(
    function: Function, values: FunctionValues, loop: Loop, condition: Compare, bottom: bool
) -> TripCount | None:
    """`s >>= c` while `s > C` (or `s != 0`), and `s <<= c` while `s < B`: geometric counters,
    as tree reductions write them over the block (`gap = blockDim.x / 2; gap > 32`,
    `gap = 1; gap < blockDim.x; gap *= 2`)."""
    b, i = condition.site
    setp = function.blocks[b].instructions[i]
    operands = setp.operands
    if len(operands) < 3:
        return None
    for position, other in ((1, 2), (2, 1)):
        register = operands[position]
        if not isinstance(register, Register):
            continue
        found = _geometric_counter(function, values, loop, register.name)
        if found is None:
            continue
        induction, tested_after_update = found
        if len(induction.inits) != 1 or not isinstance(induction.step, Immediate):
            return None
        op = condition.op if position == 1 else SWAP[condition.op]
        bound_side = condition.right if position == 1 else condition.left
        if split_position(bound_side)[0].terms:
            return None  # the bound differs between threads
        bound = bound_side.to_expr()
        init_block, init_index = induction.inits[0]
        start = values.definition(init_block, init_index, induction.register).to_expr()
        if start is None or bound is None:
            return None
        shift = ex.const(float(induction.step.value))
        after_update = tested_after_update or (
            induction.increment[0] == b and induction.increment[1] < i
        )
        halving = induction.step_sign > 0
        passes = (_halving_passes(start, op, bound, shift, operands[other]) if halving
                  else _doubling_passes(start, op, bound, shift))
        if passes is None:
            return None
        # Passes count the values from `start` on that pass the test. A bottom-tested loop
        # runs the body once before its first test: on `start` itself that adds a trip; on
        # the updated value the passes already count that first body.
        trips = passes
        if bottom and not after_update:
            trips = ex.add(trips, ex.ONE)
        elif bottom and not halving:
            trips = ex.maximum(ex.ONE, trips)
        shape = "halving" if halving else "doubling"
        return TripCount(trips, False, f"{shape} loop from {start}, bound {bound}")
    return None


def _geometric_counter(
    function: Function, values: FunctionValues, loop: Loop, register: str
) -> tuple[InductionVariable, bool] | None:
    """The geometric induction variable a test reads, and whether it reads the value after
    this iteration's update (`shl t, s, 1; setp.lt t, n; mov s, t`)."""
    induction = values.inductions.get(register)
    if induction is not None:
        if induction.geometric and induction.loop == loop.index:
            return induction, False
        return None
    for candidate in values.inductions.values():
        if not candidate.geometric or candidate.loop != loop.index:
            continue
        b, i = candidate.increment
        update = function.blocks[b].instructions[i]
        if update.opcode == "mov" and len(update.operands) == 2 and isinstance(
                update.operands[1], Register) and update.operands[1].name == register:
            return candidate, True
    return None


def _halving_passes(start: ex.Expr, op: str, bound: ex.Expr, shift: ex.Expr,
                    written: object) -> ex.Expr | None:
    """#{k ≥ 0 : floor(start / 2^(c·k)) > C}: ceil(bitlen(floor(start / (C + 1))) / c)."""
    if not isinstance(bound, ex.Const) or not isinstance(written, Immediate):
        return None
    if op == "ne" and bound.value == 0:
        above = 0.0
    elif op == "gt":
        above = bound.value
    elif op == "ge":
        above = bound.value - 1
    else:
        return None
    if above < 0:
        return None
    return ex.ceil_div(ex.bit_length(ex.div(start, ex.const(above + 1))), shift)


def _doubling_passes(first: ex.Expr, op: str, bound: ex.Expr, shift: ex.Expr) -> ex.Expr | None:
    """#{k ≥ 0 : first·2^(c·k) < B}: ceil(bitlen(ceil(B / first) − 1) / c)."""
    if op == "le":
        bound = ex.add(bound, ex.ONE)
    elif op != "lt":
        return None
    below = ex.sub(ex.ceil_div(bound, first), ex.ONE)
    return ex.ceil_div(ex.bit_length(below), shift)


def _opaque_reason(value: Poly) -> str:
    """Why a bound or start is not an expression in constants, the launch shape and
    parameters, in words a reader can check against the source."""
    if value.taint() & DATA:
        return "depends on data read from memory"
    if any(atom.startswith("iter:") for monomial in value.terms for atom in monomial):
        return "changes with an outer loop's counter"
    return "is computed in the kernel in a form the analysis does not count"


def _sign(step: Poly) -> int:
    signs = {1 if coefficient > 0 else -1 for coefficient in step.terms.values()}
    return signs.pop() if len(signs) == 1 else 0
