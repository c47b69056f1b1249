"""How long one warp takes through a basic block when nothing else competes for its SM.

A warp issues one instruction per cycle at best, and an instruction waits until the registers
it reads are written. PTX order is not the machine's: ptxas list-schedules each block, moving
independent work (a tile's loads, other accumulators) into the gaps, so a block costs the larger
of its issue slots and its longest dependent chain — the bound a list schedule reaches within a
factor of two (Graham, 1969), and the per-warp ILP term of GPU models (Hong & Kim, ISCA 2009;
GPUMech, Huang et al., MICRO 2014). A thread with eight independent FMA chains takes about a
cycle per FMA, one chain four (`ALU_DEPENDENT_LATENCY_CYCLES`).

Latencies: arithmetic takes the dependent-issue latency per machine instruction it expands to
(`div.rn.f32` is a chain of about ten), shared-memory loads the shared latency. Loads from global
and local memory count as arithmetic here: what they wait on DRAM is the model's separate
memory chain (`flipflop.model.performance`), which must not be counted twice.

Registers written by earlier blocks are taken as ready when the block starts; results still in
flight at its end are waited for (a loop's accumulator chain is paced by its latency).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from flipflop.analysis.scan import NO_DESTINATION
from flipflop.gpu.latencies import ALU_DEPENDENT_LATENCY_CYCLES, SHARED_LATENCY_CYCLES
from flipflop.ir import (
    Address,
    Immediate,
    Instruction,
    Negated,
    Operand,
    PredicatePair,
    Register,
    Vector,
)

IssueCost = Callable[[str], tuple[float, float]]  # (issue slots, latency) of a PTX spelling
_SHARED_LOADS = frozenset(("ldmatrix",))
# Opcodes whose first operand is read, not written; a barrier's, here, too (`bar.red` writes
# one, but what it waits for is the model's barrier term).
_NO_DESTINATION = NO_DESTINATION | {"bar", "barrier"}


def issue_cost(spelling: str, slots: float) -> tuple[float, float]:
    """(issue slots, cycles until the result is ready) of one execution of `spelling`, which
    issues `slots` machine instructions (at least one)."""
    opcode, *modifiers = spelling.split(".")
    slots = max(1.0, slots)
    if opcode in _SHARED_LOADS or (
        opcode in ("ld", "ldu") and any(m.startswith("shared") for m in modifiers)
    ):
        return slots, SHARED_LATENCY_CYCLES
    return slots, slots * ALU_DEPENDENT_LATENCY_CYCLES


def schedule_cycles(instructions: Sequence[Instruction], cost: IssueCost) -> float:
    """Cycles one warp spends on `instructions` as a list scheduler orders them: at least one
    cycle per issue slot, and at least the longest dependent chain. `cost` gives each
    spelling's `issue_cost`."""
    ready: dict[str, float] = {}  # register -> cycle its value is available
    ready_at = ready.get
    no_destination = _NO_DESTINATION
    slots_total = 0.0
    longest = 0.0
    for instruction in instructions:
        opcode, _, operands, guard = instruction[0], instruction[1], instruction[2], instruction[3]
        slots, latency = cost(instruction[6])
        writes = bool(operands) and opcode not in no_destination
        start = 0.0
        for position, operand in enumerate(operands):
            if position == 0 and writes:
                continue
            kind = type(operand)
            if kind is Register:
                at = ready_at(cast(Register, operand).name, 0.0)
            elif kind is Immediate:
                continue
            else:
                at = _latest(operand, ready)
            if at > start:
                start = at
        if guard is not None:
            at = ready_at(guard[0], 0.0)
            if at > start:
                start = at
        done = start + latency
        if writes:
            head = operands[0]
            if type(head) is Register:
                ready[head.name] = done
            else:
                _mark(head, done, ready)
        slots_total += slots
        if done > longest:
            longest = done
    return max(slots_total, longest)


def _latest(operand: Operand, ready: dict[str, float]) -> float:
    if isinstance(operand, Register):
        return ready.get(operand.name, 0.0)
    if isinstance(operand, Address):
        base = operand.base
        return ready.get(base.name, 0.0) if isinstance(base, Register) else 0.0
    if isinstance(operand, Vector):
        return max((_latest(element, ready) for element in operand.elements), default=0.0)
    if isinstance(operand, Negated):
        return _latest(operand.operand, ready)
    if isinstance(operand, PredicatePair):
        return max(_latest(operand.first, ready), _latest(operand.second, ready))
    return 0.0


def _mark(operand: Operand, cycle: float, ready: dict[str, float]) -> None:
    if isinstance(operand, Register):
        ready[operand.name] = cycle
    elif isinstance(operand, Vector):
        for element in operand.elements:
            _mark(element, cycle, ready)
    elif isinstance(operand, PredicatePair):
        _mark(operand.first, cycle, ready)
        _mark(operand.second, cycle, ready)
