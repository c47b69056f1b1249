"""The integer and predicate control slice of one function, kept for interpreting a launch.

Where the symbolic analysis cannot read a loop's trip count or a branch's condition (nvcc's
unroll remainders, counters started from a phi of thread-dependent values, `min`/`max`/shift
index math), the launch still decides them: block sizes compiled in, `%tid` ranging over the
block, parameters given per launch. This module keeps, at extraction time, the instructions
that feed every conditional branch of the function (`mov`, integer arithmetic, `min`/`max`,
shifts, bitwise logic, `selp`, `setp`, predicate logic, integer `cvt`, `mul.wide`, thread and
block indices, kernel parameters, immediates), translated to a small register program per
block; `flipflop.analysis.interpret` runs it for a launch.

A value loaded from memory (other than a kernel parameter), a float, a call's result or a
special register whose value the launch does not fix makes every register it reaches opaque;
a branch on an opaque predicate cannot be followed, and a loop or guard whose own branch is
opaque keeps its assumed value (the reason is kept for the report).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from flipflop.analysis.cfg import ControlFlow
from flipflop.analysis.scan import FunctionScan
from flipflop.ir import (
    Address,
    Function,
    Immediate,
    Instruction,
    Negated,
    Operand,
    PredicatePair,
    Register,
    SpecialRegister,
    Symbol,
)

LAUNCH_REGISTERS = frozenset((
    "tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z",
    "ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z", "laneid",
))  # fmt: skip
"""Special registers whose value a launch fixes for every thread (`%warpid` and `%smid` are
the hardware's choice, clocks change while the kernel runs)."""

_INTEGER_TYPES = {
    "s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
    "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
    "b8": (8, False), "b16": (16, False), "b32": (32, False), "b64": (64, False),
    "pred": (1, False),
}  # fmt: skip
_FLOAT_TYPES = frozenset(("f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2"))
_CARRY = frozenset(("cc",))
_COMPARE = {
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "lo": "lt", "ls": "le", "hi": "gt", "hs": "ge",
}  # fmt: skip
_BOOLEAN = frozenset(("and", "or", "xor"))
_SIMPLE = frozenset(("add", "sub", "min", "max", "and", "or", "xor", "shl", "shr", "div", "rem"))
_UNARY = frozenset(("neg", "not", "abs"))


class Constant(NamedTuple):
    """An immediate operand, as a 64-bit two's-complement value."""

    value: int


Source = int | Constant  # a slot of the register file, or a constant


class Op(NamedTuple):
    """One instruction of the slice. `code` names the operation; `bits`/`signed` are the type
    the operands are read as (values are kept modulo 2^64 and read at their width)."""

    code: str
    dest: int
    sources: tuple[Source, ...]
    bits: int
    signed: bool
    detail: str = ""  # comparison of a setp, boolean of setp.and/or/xor, source type of cvt
    second_dest: int = -1  # setp's complement destination `d|e`
    guard: int = -1  # slot of the guarding predicate, -1 when unguarded
    guard_negated: bool = False


TerminatorKind = Literal["exit", "jump", "branch", "opaque"]


class Terminator(NamedTuple):
    """How a block ends: `jump` to `taken`; `branch` to `taken` when the predicate in slot
    `predicate` holds (`negated`: when it does not), else to `fallthrough`; `opaque` a
    conditional branch whose predicate the slice cannot compute; `exit` the thread is done."""

    kind: TerminatorKind
    taken: int = -1
    fallthrough: int = -1
    predicate: int = -1
    negated: bool = False


class BlockProgram(NamedTuple):
    ops: tuple[Op, ...]
    end: Terminator


InputKind = Literal["special", "param", "pointer", "symbol"]


class SlotInput(NamedTuple):
    """A slot filled before the program runs: a special register, a kernel parameter (a
    pointer parameter gets a stand-in address when the launch does not give one), or the
    address of a variable (a stand-in: only differences and comparisons of addresses are
    meaningful to control flow)."""

    slot: int
    kind: InputKind
    name: str


@dataclass(frozen=True)
class LoopTarget:
    """An assumed loop: trips per entry = header visits / entries from outside the body."""

    factor: int  # the function's own factor index
    header: int
    body: frozenset[int]
    enclosing: tuple[int, ...] = ()  # factors of the derived loops around it


@dataclass(frozen=True)
class GuardTarget:
    """An unknown branch: the share of the threads reaching `branch` that go on to `region`."""

    factor: int
    branch: int
    region: int
    enclosing: tuple[int, ...] = ()  # factors of the derived loops around it


class _Memo:
    """Per-object cache of evaluations: neither part of the value nor pickled."""

    def __init__(self) -> None:
        self.entries: OrderedDict[object, object] = OrderedDict()

    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.entries = OrderedDict()


@dataclass(frozen=True)
class ControlSlice:
    """The control slice of one function, with what to measure when it runs."""

    function: str
    blocks: tuple[BlockProgram | None, ...]  # None: unreachable, or no target reachable from it
    order: tuple[int, ...]  # schedule priority per block (loop bodies contiguous), -1: never run
    entry: int
    slots: int
    inputs: tuple[SlotInput, ...]
    loops: tuple[LoopTarget, ...]
    guards: tuple[GuardTarget, ...]
    reach: tuple[int, ...]  # per block: bit set of targets (loops, then guards) reachable from it
    excluded: tuple[tuple[int, str], ...]  # (factor, why its own branch cannot be interpreted)
    offset: int = 0  # where the function's factors start among the kernel's
    memo: _Memo = field(default_factory=_Memo, compare=False, repr=False)

    @property
    def targets(self) -> int:
        return len(self.loops) + len(self.guards)

    def entries_at_least(self, values: Sequence[float]) -> float:
        """A lower bound on the block executions a run needs: the most times any target is
        reached, by the trips of the derived loops around it (the kernel's factor values)."""
        most = 0.0
        around = [t.enclosing for t in self.loops] + [t.enclosing for t in self.guards]
        for factors in around:
            most = max(most, math.prod(values[self.offset + i] for i in factors))
        return most

    def reads(self, kind: InputKind, names: Iterable[str]) -> bool:
        wanted = set(names)
        return any(item.kind == kind and item.name in wanted for item in self.inputs)


def control_slice(
    function: Function,
    flow: ControlFlow,
    scan: FunctionScan,
    kernel_params: frozenset[str],
    loops: list[LoopTarget],
    guards: list[GuardTarget],
) -> ControlSlice | None:
    """The slice that decides the targets (None when there are none; without any program
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
        return ControlSlice(function.name, (), (), 0, 0, (), (), (), (), tuple(excluded))
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
        self._slots: dict[str, int] = {}
        self.inputs: list[SlotInput] = []
        self.slice_registers: set[str] = set()
        self._pointer_params = _pointer_parameters(function, kernel_params)

    # ------------------------------------------------------------------ which registers

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

    def _sites(self, name: str) -> list[tuple[int, int]]:
        single = self.scan.single_site.get(name)
        if single is not None:
            return [single]
        return list(self.scan.multiple_sites.get(name, ()))

    def opaque_predicates(self) -> set[str]:
        """Registers of the slice whose value the program cannot compute: a definition that is
        not interpretable, or one that reads such a register (to a fixed point)."""
        roots = [p for b in self.flow.reachable_order if (p := self._decision(b))]
        readers: dict[str, set[str]] = {}
        seen: set[str] = set()
        opaque: set[str] = set()
        stack = list(dict.fromkeys(roots))
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            sites = [site for site in self._sites(name) if site[0] in self.reachable]
            if not sites:
                opaque.add(name)  # never written: an input the launch does not fix
                continue
            for b, i in sites:
                instruction = self.function.blocks[b].instructions[i]
                reads = self._interpretable_reads(instruction, name)
                if reads is None:
                    opaque.add(name)
                    continue
                for source in reads:
                    readers.setdefault(source, set()).add(name)
                    stack.append(source)
        pending = list(opaque)
        while pending:
            name = pending.pop()
            for reader in readers.get(name, ()):
                if reader not in opaque:
                    opaque.add(reader)
                    pending.append(reader)
        self.slice_registers = seen
        return opaque

    def _interpretable_reads(self, instruction: Instruction, name: str) -> list[str] | None:
        """Registers the instruction reads to compute `name`; None when it is not one the
        program follows (a load, a float, a call result, an unknown special register)."""
        if self._translate(instruction, dry=True) is None:
            return None
        reads: list[str] = []
        for operand in instruction.operands[1:]:
            reads.extend(_registers(operand))
        if instruction.guard is not None:
            reads.append(instruction.guard.predicate)
            reads.append(name)  # a guarded write keeps the old value where the guard fails
        return reads

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

    # ------------------------------------------------------------------ translating

    def slot(self, name: str) -> int:
        known = self._slots.get(name)
        if known is None:
            known = self._slots[name] = len(self._slots)
        return known

    def _input(self, kind: InputKind, name: str) -> int:
        key = f"{kind}:{name}"
        known = self._slots.get(key)
        if known is None:
            known = self.slot(key)
            self.inputs.append(SlotInput(known, kind, name))
        return known

    def _source(self, operand: Operand, dry: bool) -> Source | None:
        if isinstance(operand, Register):
            return 0 if dry else self.slot(operand.name)
        if isinstance(operand, Immediate):
            value = operand.value
            if isinstance(value, float):
                return None
            return Constant(((value + (1 << 63)) % (1 << 64)) - (1 << 63))
        if isinstance(operand, SpecialRegister):
            if operand.name not in LAUNCH_REGISTERS:
                return None
            return 0 if dry else self._input("special", operand.name)
        if isinstance(operand, Symbol):
            if operand.name == "WARP_SZ":  # PTX's predefined warp size
                return Constant(32)
            return 0 if dry else self._input("symbol", operand.name)
        if isinstance(operand, Negated) and isinstance(operand.operand, Register):
            return None  # handled by the caller, which inserts the negation
        return None

    def _translate(self, instruction: Instruction, dry: bool = False) -> list[Op] | None:
        """The instruction as ops, or None when the program cannot follow it. With `dry`
        nothing is allocated: only whether it can be followed is decided."""
        opcode, modifiers, operands = (
            instruction.opcode,
            instruction.modifiers,
            instruction.operands,
        )
        if (
            not operands
            or not _FLOAT_TYPES.isdisjoint(modifiers)
            or not _CARRY.isdisjoint(modifiers)
        ):
            return None
        if "sat" in modifiers or opcode in ("addc", "subc", "madc"):
            return None
        bits, signed = _operand_type(opcode, modifiers)
        if bits == 0:
            return None
        destination = operands[0]
        second = -1
        if isinstance(destination, PredicatePair):
            if opcode != "setp" or not isinstance(destination.first, Register):
                return None
            if isinstance(destination.second, Register):
                second = 0 if dry else self.slot(destination.second.name)
            destination = destination.first
        if not isinstance(destination, Register):
            return None
        dest = 0 if dry else self.slot(destination.name)
        prelude: list[Op] = []
        sources: list[Source] = []
        for operand in operands[1:]:
            if isinstance(operand, Negated) and isinstance(operand.operand, Register):
                if dry:
                    sources.append(0)
                    continue
                temporary = self.slot(f"!{operand.operand.name}")
                prelude.append(Op("not", temporary, (self.slot(operand.operand.name),), 1, False))
                sources.append(temporary)
                continue
            if opcode == "ld":
                continue
            source = self._source(operand, dry)
            if source is None:
                return None
            sources.append(source)
        code, detail = self._code(instruction, bits, signed, len(sources), dry)
        if code is None:
            return None
        if code == "load":
            return [] if dry else [Op("mov", dest, (self._param_slot(instruction),), 64, True)]
        guard, negated = -1, False
        if instruction.guard is not None:
            guard = 0 if dry else self.slot(instruction.guard.predicate)
            negated = instruction.guard.negated
        op = Op(code, dest, tuple(sources), bits, signed, detail, second, guard, negated)
        return [*prelude, op]

    def _code(self, instruction: Instruction, bits: int, signed: bool, count: int,
              dry: bool) -> tuple[str | None, str]:  # fmt: skip
        opcode, modifiers = instruction.opcode, instruction.modifiers
        if opcode in ("mov", "cvta"):
            return ("mov" if count == 1 else None), ""
        if opcode == "ld":
            return ("load" if self._reads_parameter(instruction) else None), ""
        if opcode == "cvt":
            types = [m for m in modifiers if m in _INTEGER_TYPES]
            if len(types) != 2 or count != 1:
                return None, ""
            return "cvt", types[1]
        if opcode in ("mul", "mul24"):
            if count != 2:
                return None, ""
            if "wide" in modifiers:
                return "mulwide", ""
            if "hi" in modifiers:
                return ("mulhi" if bits <= 32 else None), ""
            return "mul", ""
        if opcode in ("mad", "mad24"):
            if count != 3 or "hi" in modifiers:
                return None, ""
            return ("madwide" if "wide" in modifiers else "mad"), ""
        if opcode == "selp":
            return ("selp" if count == 3 else None), ""
        if opcode == "setp":
            compare = next((_COMPARE[m] for m in modifiers if m in _COMPARE), None)
            if compare is None or count not in (2, 3):
                return None, ""
            boolean = next((m for m in modifiers if m in _BOOLEAN), "")
            if (count == 3) != bool(boolean):
                return None, ""
            return "setp", f"{compare}.{boolean}" if boolean else compare
        if opcode in _SIMPLE:
            return (opcode if count == 2 else None), ""
        if opcode in _UNARY:
            return (opcode if count == 1 else None), ""
        return None, ""

    def _reads_parameter(self, instruction: Instruction) -> bool:
        if "param" not in instruction.modifiers or len(instruction.operands) != 2:
            return False
        if any(m.startswith("v") and m[1:].isdigit() for m in instruction.modifiers):
            return False
        address = instruction.operands[1]
        return (
            isinstance(address, Address)
            and isinstance(address.base, Symbol)
            and address.base.name in self.kernel_params
            and address.offset == 0
        )

    def _param_slot(self, instruction: Instruction) -> int:
        address = instruction.operands[1]
        assert isinstance(address, Address) and isinstance(address.base, Symbol)
        name = address.base.name
        kind: InputKind = "pointer" if name in self._pointer_params else "param"
        return self._input(kind, name)

    # ------------------------------------------------------------------ the program

    def build(self, loops: list[LoopTarget], guards: list[GuardTarget], opaque: set[str],
              excluded: tuple[tuple[int, str], ...]) -> ControlSlice:  # fmt: skip
        flow = self.flow
        count = len(self.function.blocks)
        marks = [target_block for loop in loops for target_block in (loop.header,)]
        marks += [guard.branch for guard in guards]
        reach = _reach(flow, [(1 << t, b) for t, b in enumerate(marks)], count)
        order = _schedule_order(flow, count)
        wanted = self.slice_registers - opaque
        programs: list[BlockProgram | None] = []
        for block in range(count):
            if order[block] < 0 or not reach[block]:
                programs.append(None)
                continue
            ops: list[Op] = []
            for instruction in self.function.blocks[block].instructions:
                writes = _written(instruction)
                if writes and writes & wanted:
                    translated = self._translate(instruction)
                    assert translated is not None  # `wanted` holds only interpretable ones
                    ops.extend(translated)
            programs.append(BlockProgram(tuple(ops), self._end(block, opaque)))
        runnable = tuple(o if programs[b] is not None else -1 for b, o in enumerate(order))
        return ControlSlice(
            function=self.function.name,
            blocks=tuple(programs),
            order=runnable,
            entry=flow.reachable_order[0],
            slots=len(self._slots),
            inputs=tuple(self.inputs),
            loops=tuple(loops),
            guards=tuple(guards),
            reach=tuple(reach),
            excluded=excluded,
        )

    def _end(self, block: int, opaque: set[str]) -> Terminator:
        successors = self.flow.successors[block]
        instructions = self.function.blocks[block].instructions
        last = instructions[-1] if instructions else None
        if not successors:
            return Terminator("exit")
        if last is not None and last.opcode in ("ret", "exit") and last.guard is not None:
            # `@%p ret`: the lanes where the guard holds are done, the others fall through.
            if last.guard.predicate in opaque or last.guard.predicate not in self.slice_registers:
                return Terminator("opaque")
            return Terminator("branch", -1, successors[0], self.slot(last.guard.predicate),
                              last.guard.negated)  # fmt: skip
        if len(successors) == 1:
            return Terminator("jump", successors[0])
        predicate = self.branch_predicate(block)
        target = self.flow.branch_targets[block]
        if predicate is None or target is None or predicate in opaque:
            return Terminator("opaque")
        guard = self.function.blocks[block].instructions[-1].guard
        assert guard is not None
        fallthrough = successors[0] if successors[1] == target else successors[1]
        return Terminator("branch", target, fallthrough, self.slot(predicate), guard.negated)


def _operand_type(opcode: str, modifiers: tuple[str, ...]) -> tuple[int, bool]:
    """(bits, signed) of the operands; for `cvt` the destination type. (0, False) when the
    instruction has no integer type."""
    types = [m for m in modifiers if m in _INTEGER_TYPES]
    if opcode == "cvt":
        types = types[:1]
    if not types:
        return 0, False
    return _INTEGER_TYPES[types[-1]]


def _registers(operand: Operand) -> list[str]:
    if isinstance(operand, Register):
        return [operand.name]
    if isinstance(operand, Negated):
        return _registers(operand.operand)
    if isinstance(operand, Address) and isinstance(operand.base, Register):
        return [operand.base.name]
    return []


def _written(instruction: Instruction) -> set[str]:
    if not instruction.operands or instruction.opcode in ("bra", "st", "call", "ret", "exit"):
        return set()
    first = instruction.operands[0]
    if isinstance(first, Register):
        return {first.name}
    if isinstance(first, PredicatePair):
        return {r.name for r in (first.first, first.second) if isinstance(r, Register)}
    return set()


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
    """Per block, the union of the bits of the marked blocks reachable from it."""
    reach = [0] * count
    for bit, block in marks:
        stack = [block]
        while stack:
            current = stack.pop()
            if reach[current] & bit:
                continue
            reach[current] |= bit
            stack.extend(flow.predecessors[current])
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
