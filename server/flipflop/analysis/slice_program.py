"""A control slice as a register program: which instructions it can follow, and their ops.

Extraction (`flipflop.analysis.control`) only asks `followable`; the program itself is built
by `compile_slice` when a launch first interprets the slice, so that kernels whose slices are
never run pay nothing for it. Values are kept modulo 2^64 in int64 lanes and read at the
width and signedness of the instruction that reads them, which is exact for two's-complement
arithmetic: add, sub, mul, shl and the bitwise operations commute with truncation, and the
operations that do not (comparisons, min/max, shr, div/rem, widening) read their operands at
their type first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from flipflop.analysis.slice_types import ControlSlice, InputKind, SliceEnd, TerminatorKind
from flipflop.ir import (
    Address,
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
WARP_SIZE_SYMBOL = "WARP_SZ"  # PTX's predefined warp size, 32

_INTEGER_TYPES = {
    "s8": (8, True), "s16": (16, True), "s32": (32, True), "s64": (64, True),
    "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
    "b8": (8, False), "b16": (16, False), "b32": (32, False), "b64": (64, False),
    "pred": (1, False),
}  # fmt: skip
_FLOAT_TYPES = frozenset(("f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2"))
_COMPARE = {
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "lo": "lt", "ls": "le", "hi": "gt", "hs": "ge",
}  # fmt: skip
_BOOLEAN = frozenset(("and", "or", "xor"))
_SIMPLE = frozenset(("add", "sub", "min", "max", "and", "or", "xor", "shl", "shr", "div", "rem"))
_UNARY = frozenset(("neg", "not", "abs"))

Spec = tuple[str, int, bool, str]
"""(op code, bits, signed, detail) of an opcode as spelled, for a number of sources."""


class Constant(NamedTuple):
    """An immediate operand, as a 64-bit two's-complement value."""

    value: int


Source = int | Constant  # a slot of the block's registers, or a constant


class Op(NamedTuple):
    """One instruction of the slice. `code` names the operation; `bits`/`signed` are the type
    the operands are read as."""

    code: str
    dest: int
    sources: tuple[Source, ...]
    bits: int
    signed: bool
    detail: str = ""  # comparison of a setp, boolean of setp.and/or/xor, source type of cvt
    second_dest: int = -1  # setp's complement destination `d|e`
    guard: int = -1  # slot of the guarding predicate, -1 when unguarded
    guard_negated: bool = False




class Terminator(NamedTuple):
    """How a block ends: `jump` to `taken`; `branch` to `taken` when the predicate in slot
    `predicate` holds (`negated`: when it does not), else to `fallthrough` (a `taken` of -1
    ends the thread: `@%p ret`); `opaque` a conditional branch whose predicate the slice
    cannot compute; `exit` the thread is done."""

    kind: TerminatorKind
    taken: int = -1
    fallthrough: int = -1
    predicate: int = -1
    negated: bool = False


class BlockProgram(NamedTuple):
    """A block's ops and terminator over its own few slots: `columns[k]` is the register file
    slot that local slot k stands for; `written` the local slots the ops write."""

    ops: tuple[Op, ...]
    end: Terminator
    columns: tuple[int, ...] = ()
    written: tuple[int, ...] = ()




class SlotInput(NamedTuple):
    """A register file slot filled before the program runs: a special register, a kernel
    parameter (a pointer parameter gets a stand-in address when the launch does not give
    one), or the address of a variable (a stand-in: only differences and comparisons of
    addresses are meaningful to control flow)."""

    slot: int
    kind: InputKind
    name: str


@dataclass(frozen=True)
class SliceProgram:
    blocks: tuple[BlockProgram | None, ...]
    slots: int
    inputs: tuple[SlotInput, ...]


# --------------------------------------------------------------------------- followable


def spec_of(instruction: Instruction, specs: dict[tuple[str, int], Spec | None]) -> Spec | None:
    """`_spec` of the instruction, cached in `specs` by spelling and operand count."""
    key = (instruction.full_opcode, len(instruction.operands))
    if key in specs:
        return specs[key]
    found = specs[key] = _spec(instruction.opcode, instruction.modifiers, key[1] - 1)
    return found


def followable(instruction: Instruction, kernel_params: frozenset[str],
               specs: dict[tuple[str, int], Spec | None]) -> bool:  # fmt: skip
    """Whether the program can compute what the instruction writes."""
    spec = spec_of(instruction, specs)
    if spec is None:
        return False
    operands = instruction.operands
    destination = operands[0]
    if type(destination) is PredicatePair:
        if spec[0] != "setp" or type(destination.first) is not Register:
            return False
    elif type(destination) is not Register:
        return False
    if spec[0] == "load":
        return reads_parameter(instruction, kernel_params) is not None
    for operand in operands[1:]:
        kind = type(operand)
        if kind is Register:
            continue
        if kind is Negated:
            if type(operand.operand) is not Register:  # type: ignore[union-attr]
                return False
        elif kind is Immediate:
            if isinstance(operand.value, float):  # type: ignore[union-attr]
                return False
        elif kind is SpecialRegister:
            if operand.name not in LAUNCH_REGISTERS:  # type: ignore[union-attr]
                return False
        elif kind is not Symbol:
            return False
    return True


def reads_parameter(instruction: Instruction, kernel_params: frozenset[str]) -> str | None:
    """The kernel parameter an `ld.param` reads whole, if it is one."""
    modifiers = instruction.modifiers
    if "param" not in modifiers or len(instruction.operands) != 2:
        return None
    if any(m.startswith("v") and m[1:].isdigit() for m in modifiers):
        return None
    address = instruction.operands[1]
    if (
        isinstance(address, Address)
        and isinstance(address.base, Symbol)
        and address.base.name in kernel_params
        and address.offset == 0
    ):
        return address.base.name
    return None


def _spec(opcode: str, modifiers: tuple[str, ...], count: int) -> Spec | None:
    if not _FLOAT_TYPES.isdisjoint(modifiers) or "cc" in modifiers or "sat" in modifiers:
        return None
    if opcode in ("addc", "subc", "madc"):
        return None
    bits, signed = operand_type(opcode, modifiers)
    if bits == 0:
        return None
    code, detail = _code(opcode, modifiers, count, bits)
    return None if code is None else (code, bits, signed, detail)


def _code(opcode: str, modifiers: tuple[str, ...], count: int,
          bits: int) -> tuple[str | None, str]:  # fmt: skip
    if opcode in ("mov", "cvta"):
        return ("mov" if count == 1 else None), ""
    if opcode == "ld":
        return ("load" if "param" in modifiers and count == 1 else None), ""
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


def operand_type(opcode: str, modifiers: tuple[str, ...]) -> tuple[int, bool]:
    """(bits, signed) of the operands; for `cvt` the destination type. (0, False) when the
    instruction has no integer type."""
    types = [m for m in modifiers if m in _INTEGER_TYPES]
    if opcode == "cvt":
        types = types[:1]
    if not types:
        return 0, False
    return _INTEGER_TYPES[types[-1]]


# --------------------------------------------------------------------------- compiling


def compile_slice(control: ControlSlice) -> SliceProgram:
    """The slice's blocks as ops over a dense register file."""
    translator = _Translator(control.kernel_params, control.pointer_params)
    renumber: dict[int, int] = {}  # translator slots some block uses, numbered densely
    blocks: list[BlockProgram | None] = []
    for block in control.blocks:
        if block is None:
            blocks.append(None)
            continue
        ops: list[Op] = []
        for instruction in block.instructions:
            translated = translator.translate(instruction)
            assert translated is not None, instruction  # the slice keeps followable ones
            ops.extend(translated)
        program = BlockProgram(tuple(ops), translator.end(block.end))
        blocks.append(_localize(program, renumber))
    inputs = tuple(
        item._replace(slot=renumber[item.slot])
        for item in translator.inputs
        if item.slot in renumber
    )
    return SliceProgram(tuple(blocks), len(renumber), inputs)


class _Translator:
    def __init__(self, kernel_params: frozenset[str], pointer_params: frozenset[str]) -> None:
        self.kernel_params = kernel_params
        self.pointer_params = pointer_params
        self._slots: dict[str, int] = {}
        self.inputs: list[SlotInput] = []
        self._specs: dict[tuple[str, int], Spec | None] = {}

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

    def end(self, end: SliceEnd) -> Terminator:
        predicate = self.slot(end.predicate) if end.predicate else -1
        return Terminator(end.kind, end.taken, end.fallthrough, predicate, end.negated)

    def _source(self, operand: Operand) -> Source | None:
        if isinstance(operand, Register):
            return self.slot(operand.name)
        if isinstance(operand, Immediate):
            value = operand.value
            if isinstance(value, float):
                return None
            return Constant(((value + (1 << 63)) % (1 << 64)) - (1 << 63))
        if isinstance(operand, SpecialRegister):
            if operand.name not in LAUNCH_REGISTERS:
                return None
            return self._input("special", operand.name)
        if isinstance(operand, Symbol):
            if operand.name == WARP_SIZE_SYMBOL:
                return Constant(32)
            return self._input("symbol", operand.name)
        return None

    def translate(self, instruction: Instruction) -> list[Op] | None:
        """The instruction as ops, or None when the program cannot follow it."""
        spec = spec_of(instruction, self._specs)
        if spec is None:
            return None
        code, bits, signed, detail = spec
        operands = instruction.operands
        destination = operands[0]
        second = -1
        if type(destination) is PredicatePair:
            if type(destination.second) is Register:
                second = self.slot(destination.second.name)
            destination = destination.first
        if type(destination) is not Register:
            return None
        dest = self.slot(destination.name)
        if code == "load":
            name = reads_parameter(instruction, self.kernel_params)
            if name is None:
                return None
            kind: InputKind = "pointer" if name in self.pointer_params else "param"
            return [Op("mov", dest, (self._input(kind, name),), 64, True)]
        prelude: list[Op] = []
        sources: list[Source] = []
        for operand in operands[1:]:
            if isinstance(operand, Negated) and isinstance(operand.operand, Register):
                name = operand.operand.name
                temporary = self.slot(f"!{name}")
                prelude.append(Op("not", temporary, (self.slot(name),), 1, False))
                sources.append(temporary)
                continue
            source = self._source(operand)
            if source is None:
                return None
            sources.append(source)
        guard, negated = -1, False
        if instruction.guard is not None:
            guard = self.slot(instruction.guard.predicate)
            negated = instruction.guard.negated
        op = Op(code, dest, tuple(sources), bits, signed, detail, second, guard, negated)
        return [*prelude, op] if prelude else [op]


def _localize(program: BlockProgram, renumber: dict[int, int]) -> BlockProgram:
    """The program over its own slots (see `BlockProgram`); `renumber` gives every slot used
    anywhere its dense number in the register file, assigned on first use."""
    columns: dict[int, int] = {}  # register file slot -> local slot
    local: dict[int, int] = {-1: -1}  # translator slot -> local slot

    def slot(number: int) -> int:
        known = local.get(number)
        if known is None:
            dense = renumber.setdefault(number, len(renumber))
            known = local[number] = columns.setdefault(dense, len(columns))
        return known

    ops: list[Op] = []
    written: set[int] = set()
    for op in program.ops:
        sources = tuple(slot(s) if type(s) is int else s for s in op.sources)
        dest, second = slot(op.dest), slot(op.second_dest)
        written.add(dest)
        if second >= 0:
            written.add(second)
        ops.append(Op(op.code, dest, sources, op.bits, op.signed, op.detail, second,
                      slot(op.guard), op.guard_negated))  # fmt: skip
    end = program.end
    if end.predicate >= 0:
        end = end._replace(predicate=slot(end.predicate))
    return BlockProgram(tuple(ops), end, tuple(columns), tuple(sorted(written)))
