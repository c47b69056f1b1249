"""The integer and predicate control slice of one function, kept for interpreting a launch.

Where the symbolic analysis cannot read a loop's trip count or a branch's condition (nvcc's
unroll remainders, counters started from a phi of thread-dependent values, `min`/`max`/shift
index math), the launch still decides them: block sizes compiled in, `%tid` ranging over the
block, parameters given per launch. This module keeps, at extraction time, the instructions
that feed every conditional branch of the function (`mov`, integer arithmetic, `min`/`max`,
shifts, bitwise logic, `selp`, `setp`, predicate logic, integer `cvt`, `mul.wide`, thread and
block indices, kernel parameters, immediates), block by block;
`flipflop.analysis.slice_program` turns them into a register program and
`flipflop.analysis.interpret` runs it for a launch.

A value loaded from memory (other than a kernel parameter), a float, a call's result or a
special register whose value the launch does not fix makes every register it reaches opaque;
a branch on an opaque predicate cannot be followed, and a loop or guard whose own branch is
opaque keeps its assumed value (the reason is kept for the report).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flipflop.analysis.cfg import ControlFlow
from flipflop.analysis.scan import FunctionScan
from flipflop.analysis.slice_program import Spec, followable, reads_parameter
from flipflop.analysis.slice_types import (
    ControlSlice,
    GuardTarget,
    LoopTarget,
    SliceBlock,
    SliceEnd,
)
from flipflop.ir import (
    Address,
    Function,
    Instruction,
    Negated,
    Operand,
    Register,
    SpecialRegister,
    Symbol,
)

_NARROW = frozenset(("u8", "u16", "u32", "s8", "s16", "s32", "b8", "b16", "b32"))


def control_slice(
    function: Function,
    flow: ControlFlow,
    scan: FunctionScan,
    kernel_params: frozenset[str],
    loops: list[LoopTarget],
    guards: list[GuardTarget],
) -> ControlSlice | None:
    """The slice that decides the targets (None when there are none; without any blocks
    when none of them can be interpreted, with the reasons)."""
    if not loops and not guards:
        return None
    builder = _Builder(function, flow, scan, kernel_params)
    opaque = builder.opaque_predicates()
    excluded: list[tuple[int, str]] = []
    kept_loops = []
    for loop in loops:
        reason = builder.loop_reason(loop, opaque)
        if reason is None:
            kept_loops.append(loop)
        else:
            excluded.append((loop.factor, reason))
    kept_guards = []
    for guard in guards:
        if builder.branch_predicate(guard.branch) in opaque:
            excluded.append((guard.factor, "the branch depends on values loaded from memory"))
        else:
            kept_guards.append(guard)
    if not kept_loops and not kept_guards:  # nothing to run: only the reasons are kept
        return ControlSlice(function.name, (), (), 0, (), (), (), tuple(excluded))
    return builder.build(kept_loops, kept_guards, opaque, tuple(excluded))


# --------------------------------------------------------------------------- building


class _Builder:
    def __init__(self, function: Function, flow: ControlFlow, scan: FunctionScan,
                 kernel_params: frozenset[str]) -> None:  # fmt: skip
        self.function = function
        self.flow = flow
        self.scan = scan
        self.kernel_params = kernel_params
        self.reachable = frozenset(flow.reachable_order)
        self.slice_registers: set[str] = set()
        # Followable definitions in the slice, with the register they are kept for.
        self._sites_kept: dict[tuple[int, int], str] = {}
        self._specs: dict[tuple[str, int], Spec | None] = {}

    def branch_predicate(self, block: int) -> str | None:
        instructions = self.function.blocks[block].instructions
        if not instructions:
            return None
        last = instructions[-1]
        if last.opcode != "bra" or last.guard is None or len(self.flow.successors[block]) != 2:
            return None
        return last.guard.predicate

    def _decision(self, block: int) -> str | None:
        """The predicate that decides where a thread goes after the block, if any."""
        predicate = self.branch_predicate(block)
        if predicate is not None:
            return predicate
        instructions = self.function.blocks[block].instructions
        last = instructions[-1] if instructions else None
        if last is not None and last.opcode in ("ret", "exit") and last.guard is not None:
            return last.guard.predicate
        return None

    def opaque_predicates(self) -> set[str]:
        """Registers of the slice whose value the program cannot compute: a definition that is
        not followable, or one that reads such a register (to a fixed point)."""
        single, multiple = self.scan.single_site, self.scan.multiple_sites
        blocks = self.function.blocks
        reachable = self.reachable
        kernel_params, specs = self.kernel_params, self._specs
        kept = self._sites_kept
        edges: list[tuple[str, list[str]]] = []  # (register, what its definition reads)
        seen: set[str] = set()
        opaque: set[str] = set()
        stack = list(
            dict.fromkeys(p for b in self.flow.reachable_order if (p := self._decision(b)))
        )
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            site = single.get(name)
            sites = (site,) if site is not None else multiple.get(name, ())
            found = False
            for b, i in sites:
                if b not in reachable:
                    continue
                found = True
                instruction = blocks[b].instructions[i]
                if not followable(instruction, kernel_params, specs):
                    opaque.add(name)
                    continue
                kept[b, i] = name
                reads = _reads(instruction, name)
                if reads:
                    edges.append((name, reads))
                    stack.extend(reads)
            if not found:
                opaque.add(name)  # never written: an input the launch does not fix
        if opaque:  # what reads an opaque register is opaque too
            readers: dict[str, list[str]] = {}
            for name, reads in edges:
                for source in reads:
                    readers.setdefault(source, []).append(name)
            pending = list(opaque)
            while pending:
                for reader in readers.get(pending.pop(), ()):
                    if reader not in opaque:
                        opaque.add(reader)
                        pending.append(reader)
        self.slice_registers = seen
        return opaque

    def loop_reason(self, loop: LoopTarget, opaque: set[str]) -> str | None:
        exits = []
        for block in sorted(loop.body):
            successors = self.flow.successors[block]
            if any(s not in loop.body for s in successors):
                exits.append(block)
        if not exits:
            return "the loop has no exit"
        predicates = [self.branch_predicate(block) for block in exits]
        if all(p is not None and p in opaque for p in predicates):
            return "the loop's exit test depends on values loaded from memory"
        return None

    def build(self, loops: list[LoopTarget], guards: list[GuardTarget], opaque: set[str],
              excluded: tuple[tuple[int, str], ...]) -> ControlSlice:  # fmt: skip
        flow = self.flow
        blocks = self.function.blocks
        count = len(blocks)
        marks = [loop.header for loop in loops] + [guard.branch for guard in guards]
        reach = _reach(flow, [(1 << t, b) for t, b in enumerate(marks)], count)
        order = _schedule_order(flow, count)
        by_block: dict[int, list[int]] = {}  # positions of the definitions the program runs
        for (b, i), name in sorted(self._sites_kept.items()):
            if name not in opaque:
                by_block.setdefault(b, []).append(i)
        targets = {loop.header for loop in loops}
        targets.update(block for guard in guards for block in (guard.branch, guard.region))
        skipped = self._skipped_loops(targets, by_block)
        kept: list[SliceBlock | None] = []
        specials: set[str] = set()
        params: dict[str, None] = {}
        narrow: set[str] = set()  # read as 8- to 32-bit values: not addresses
        for block in range(count):
            if order[block] < 0 or not reach[block] or block in skipped.inside:
                kept.append(None)
                continue
            instructions = tuple(blocks[block].instructions[i] for i in by_block.get(block, ()))
            for instruction in instructions:
                if instruction.opcode == "ld":
                    param = reads_parameter(instruction, self.kernel_params)
                    if param is not None:
                        params[param] = None
                        if not _NARROW.isdisjoint(instruction.modifiers):
                            narrow.add(param)
                    continue
                for operand in instruction.operands[1:]:
                    if type(operand) is SpecialRegister:
                        specials.add(operand.name)
            kept.append(SliceBlock(instructions, skipped.rerouted(self._end(block, opaque))))
        runnable = tuple(o if kept[b] is not None else -1 for b, o in enumerate(order))
        pointers: frozenset[str] = frozenset()
        wide = frozenset(params).difference(narrow)
        if wide:
            pointers = _pointer_parameters(self.function, wide)
        return ControlSlice(
            function=self.function.name,
            blocks=tuple(kept),
            order=runnable,
            entry=flow.reachable_order[0],
            loops=tuple(loops),
            guards=tuple(guards),
            reach=tuple(reach),
            excluded=excluded,
            specials=frozenset(specials),
            params=tuple(params),
            kernel_params=frozenset(params),
            pointer_params=pointers,
        )

    def _skipped_loops(self, targets: set[int], by_block: dict[int, list[int]]) -> _Skipped:
        """Loops the run can step over: no target inside, one way out, and nothing the slice
        computes inside read after it. Whatever their trips, every thread entering one leaves
        it for the same block with the state that matters unchanged, so the counts are those of
        a run that jumps from its header to its exit; a channel loop of 1536 trips inside a
        guarded tile loop no longer spends the step budget (dedispersion)."""
        flow = self.flow
        blocks = self.function.blocks
        writers: dict[int, set[str]] = {}  # per block, the slice registers it writes
        readers: dict[str, set[int]] = {}  # per register, the blocks that read it
        for b, positions in by_block.items():
            for i in positions:
                name = self._sites_kept[b, i]
                writers.setdefault(b, set()).add(name)
                for read in _reads(blocks[b].instructions[i], name):
                    readers.setdefault(read, set()).add(b)
        for b in self.reachable:
            if (predicate := self._decision(b)) is not None:
                readers.setdefault(predicate, set()).add(b)
        exits: dict[int, int] = {}
        inside: set[int] = set()
        for loop in flow.loops:
            body = loop.body
            if loop.header in inside or flow.reachable_order[0] in body or body & targets:
                continue
            leaving = {s for b in body for s in flow.successors[b] if s not in body}
            if len(leaving) != 1 or any(not flow.successors[b] or self._returns(b) for b in body):
                continue
            written = set().union(*(writers.get(b, ()) for b in body))
            if any(not readers.get(name, set()) <= body for name in written):
                continue
            exits[loop.header] = next(iter(leaving))
            inside.update(body)
        return _Skipped(exits, frozenset(inside))

    def _returns(self, block: int) -> bool:
        instructions = self.function.blocks[block].instructions
        return bool(instructions) and instructions[-1].opcode in ("ret", "exit")

    def _end(self, block: int, opaque: set[str]) -> SliceEnd:
        successors = self.flow.successors[block]
        instructions = self.function.blocks[block].instructions
        last = instructions[-1] if instructions else None
        if not successors:
            return SliceEnd("exit")
        if last is not None and last.opcode in ("ret", "exit") and last.guard is not None:
            # `@%p ret`: the lanes where the guard holds are done, the others fall through.
            if last.guard.predicate in opaque or last.guard.predicate not in self.slice_registers:
                return SliceEnd("opaque")
            return SliceEnd("branch", -1, successors[0], last.guard.predicate, last.guard.negated)
        if len(successors) == 1:
            return SliceEnd("jump", successors[0])
        predicate = self.branch_predicate(block)
        target = self.flow.branch_targets[block]
        if predicate is None or target is None or predicate in opaque:
            return SliceEnd("opaque")
        guard = self.function.blocks[block].instructions[-1].guard
        assert guard is not None
        fallthrough = successors[0] if successors[1] == target else successors[1]
        return SliceEnd("branch", target, fallthrough, predicate, guard.negated)


@dataclass(frozen=True)
class _Skipped:
    """Loops the slice steps over: each header's way out, and every block inside them."""

    exits: Mapping[int, int]
    inside: frozenset[int]

    def rerouted(self, end: SliceEnd) -> SliceEnd:
        """The block end with each edge into a skipped loop sent on to the loop's exit."""
        if not self.exits:
            return end
        return end._replace(taken=self._past(end.taken), fallthrough=self._past(end.fallthrough))

    def _past(self, block: int) -> int:
        while block in self.exits:
            block = self.exits[block]
        return block


def _reads(instruction: Instruction, name: str) -> list[str]:
    """Registers a followable instruction reads to compute `name`, its guard among them (a
    guarded write keeps the old value where the guard fails, so `name` itself too)."""
    reads: list[str] = []
    for operand in instruction.operands[1:]:
        kind = type(operand)
        if kind is Register:
            reads.append(operand.name)  # type: ignore[union-attr]
        elif kind is Negated:
            reads.append(operand.operand.name)  # type: ignore[union-attr]
    if instruction.guard is not None:
        reads.append(instruction.guard.predicate)
        reads.append(name)
    return reads


def _registers(operand: Operand) -> list[str]:
    if isinstance(operand, Register):
        return [operand.name]
    if isinstance(operand, Negated):
        return _registers(operand.operand)
    if isinstance(operand, Address) and isinstance(operand.base, Register):
        return [operand.base.name]
    return []


def _pointer_parameters(function: Function, kernel_params: frozenset[str]) -> frozenset[str]:
    """Kernel parameters used as addresses: loaded into a register that is converted with
    `cvta` or is the base of an address. They get a stand-in address when not given."""
    loaded: dict[str, str] = {}
    used: set[str] = set()
    for block in function.blocks:
        for instruction in block.instructions:
            operands = instruction.operands
            if instruction.opcode == "ld" and "param" in instruction.modifiers:
                address = operands[1] if len(operands) == 2 else None
                if (
                    isinstance(address, Address)
                    and isinstance(address.base, Symbol)
                    and address.base.name in kernel_params
                    and isinstance(operands[0], Register)
                ):
                    loaded[operands[0].name] = address.base.name
                continue
            if instruction.opcode == "cvta" and len(operands) == 2:
                used.update(_registers(operands[1]))
            for operand in operands:
                if isinstance(operand, Address) and isinstance(operand.base, Register):
                    used.add(operand.base.name)
    return frozenset(param for register, param in loaded.items() if register in used)


def _reach(flow: ControlFlow, marks: list[tuple[int, int]], count: int) -> list[int]:
    """Per block, the union of the bits of the marked blocks reachable from it: a backward
    fixed point, visiting blocks in reverse of the reverse post-order (one pass without loops,
    one more per loop nesting level)."""
    reach = [0] * count
    for bit, block in marks:
        reach[block] |= bit
    own = list(reach)
    order = list(reversed(flow.reachable_order))
    changed = True
    while changed:
        changed = False
        for block in order:
            bits = own[block]
            for successor in flow.successors[block]:
                bits |= reach[successor]
            if bits != reach[block]:
                reach[block] = bits
                changed = True
    return reach


def _schedule_order(flow: ControlFlow, count: int) -> list[int]:
    """A topological order of the forward edges in which every loop's body is contiguous
    after its header: threads that leave a loop early wait at its exit for the others, so
    threads run together as much as their paths allow. -1 for unreachable blocks."""
    rank = {block: position for position, block in enumerate(flow.reachable_order)}
    keys: dict[int, tuple[int, ...]] = {}
    for block in flow.reachable_order:
        headers = [rank[flow.loops[loop].header] for loop in reversed(flow.loops_of(block))]
        keys[block] = (*headers, rank[block])
    order = [-1] * count
    for position, block in enumerate(sorted(keys, key=keys.__getitem__)):
        order[block] = position
    return order
