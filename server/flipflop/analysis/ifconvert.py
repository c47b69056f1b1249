"""Branches ptxas turns into predicated instructions (if-conversion).

A conditional forward branch around a few instructions does not survive into the machine code:
ptxas predicates the instructions and drops the branch, and the block before the branch, the
skipped blocks and the block they rejoin are scheduled as one. pnpoly's crossing test (`if
(between && p.x < …) c = !c`, two branches per edge in the PTX) is predicated completely. The
rules below are what ptxas 13.0 does on sm_75 and sm_86, read with nvdisasm from
`tests/model_kernels/if_conversion.cu` (`tests/test_if_conversion.py` compares every kernel of it
with its machine code):

- the branch jumps forward, over blocks entered only from the block before each, that leave only
  by falling through or by further branches to the same place (an `&&` chain);
- those blocks hold no load from global, local or generic memory (stores and shared loads are
  predicated), no call, barrier, atomic, warp vote or shuffle, no return;
- they issue at most `MAX_PREDICATED_SLOTS` machine instructions: four dependent FFMAs or five
  integer operations are predicated, five FFMAs keep their branch (the count is the table's, so
  compares ptxas folds into one another count one each: an approximation at the margin).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from flipflop.analysis.cfg import ControlFlow, branch_target
from flipflop.ir import BasicBlock, Function, Instruction

MAX_PREDICATED_SLOTS = 5.0

_NEVER_PREDICATED = frozenset((
    "call", "ret", "exit", "trap", "bar", "barrier", "membar", "fence", "atom", "red", "vote",
    "shfl", "match", "activemask", "redux", "tex", "tld4", "suld", "sust", "sured", "mbarrier",
    "cp", "wmma", "mma", "ldmatrix", "stmatrix", "prefetch", "prefetchu", "brkpt", "nanosleep",
))  # fmt: skip
_PREDICATED_LOAD_SPACES = frozenset(("shared", "const", "param"))


@dataclass(frozen=True)
class IfConversion:
    """The predicated regions of a function: per head block (whose final branch is gone), the
    blocks it skips over, in order."""

    regions: Mapping[int, tuple[int, ...]]
    # Straight-line runs of blocks the machine code schedules as one: the first block -> the
    # others, in order (a predicated region, and the block it rejoins when entered only from
    # the region and its head; chained hammocks, as an unrolled tile loop writes them, are one).
    schedules: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    def inside(self) -> frozenset[int]:
        return frozenset(block for blocks in self.regions.values() for block in blocks)


NO_IF_CONVERSION = IfConversion({})


def if_converted(function: Function, flow: ControlFlow,
                 slots: Callable[[Instruction], float]) -> IfConversion:  # fmt: skip
    """The branches of `function` ptxas predicates; `slots` gives an instruction's machine
    instructions (the SASS cost table)."""
    blocks = function.blocks
    regions: dict[int, tuple[int, ...]] = {}
    for head, basic in enumerate(blocks):
        if not basic.instructions:
            continue
        last = basic.instructions[-1]
        join = flow.branch_targets[head]
        if last.opcode != "bra" or last.guard is None or join is None or join <= head + 1:
            continue
        region = tuple(range(head + 1, join))
        if _predicable(blocks, flow, region, join, slots):
            regions[head] = region
    if not regions:
        return NO_IF_CONVERSION
    leader_of: dict[int, int] = {}
    for head, region in sorted(regions.items()):
        leader = leader_of.get(head, head)
        for member in region:
            leader_of[member] = leader
        join = region[-1] + 1
        if set(flow.predecessors[join]) <= {head, *region}:
            leader_of[join] = leader
    schedules: dict[int, list[int]] = {}
    for member, leader in sorted(leader_of.items()):
        schedules.setdefault(leader, []).append(member)
    return IfConversion(regions, {lead: tuple(rest) for lead, rest in schedules.items()})


def _predicable(blocks: Sequence[BasicBlock], flow: ControlFlow, region: tuple[int, ...],
                join: int, slots: Callable[[Instruction], float]) -> bool:  # fmt: skip
    total = 0.0
    for block in region:
        if flow.predecessors[block] != (block - 1,):
            return False
        if any(s != join and s not in region for s in flow.successors[block]):
            return False
        instructions = blocks[block].instructions
        for position, instruction in enumerate(instructions):
            if instruction.opcode == "bra":
                target = branch_target(instruction)
                if position != len(instructions) - 1 or target is None:
                    return False
                if flow.branch_targets[block] != join:
                    return False
                continue
            if not _may_be_predicated(instruction):
                return False
            total += slots(instruction)
            if total > MAX_PREDICATED_SLOTS:
                return False
    return True


def _may_be_predicated(instruction: Instruction) -> bool:
    opcode = instruction.opcode
    if opcode in _NEVER_PREDICATED:
        return False
    if opcode in ("ld", "ldu"):
        return any(space in instruction.modifiers for space in _PREDICATED_LOAD_SPACES)
    return True
