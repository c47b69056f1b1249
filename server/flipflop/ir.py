"""Typed, immutable IR of a PTX module.

The parser (`flipflop.ptx`) produces these objects; every analysis reads them. Instructions and
operands are NamedTuples rather than dataclasses because a large module holds millions of them
and tuple construction is several times cheaper; they are just as immutable and typed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

# --------------------------------------------------------------------------- source positions


class SourceLoc(NamedTuple):
    """A `.loc` position: the CUDA source line an instruction came from."""

    file: str  # path from the module's `.file` table ("" when the index is unknown)
    line: int
    column: int


# --------------------------------------------------------------------------- operands


class Register(NamedTuple):
    """A register operand, e.g. `%r5`, `%rd12`, `%p3`, or a bare identifier in inline asm."""

    name: str


class SpecialRegister(NamedTuple):
    """A special register, e.g. `%tid.x`, `%ntid.y`, `%ctaid.z`, `%laneid`, `%clock64`."""

    name: str  # without the leading '%', e.g. "tid.x"


class Immediate(NamedTuple):
    """An integer or floating-point constant; `text` keeps the PTX spelling (`0f3F800000`)."""

    value: int | float
    text: str


class Symbol(NamedTuple):
    """A variable, function or label name used as an operand."""

    name: str


class Address(NamedTuple):
    """A memory address `[base+offset]`; base is a register or a symbol, offset in bytes."""

    base: Register | Symbol | Immediate
    offset: int


class Vector(NamedTuple):
    """A braced vector operand `{%f1, %f2, _, %f4}`."""

    elements: tuple[Operand, ...]


class Sink(NamedTuple):
    """The sink operand `_`."""


class PredicatePair(NamedTuple):
    """`%p|%q` destination of setp and friends."""

    first: Operand
    second: Operand


class Negated(NamedTuple):
    """`!%p` used as a source operand."""

    operand: Operand


class Expression(NamedTuple):
    """Any other operand form (e.g. `sym+8` outside brackets, a call's parameter list)."""

    text: str


Operand = (
    Register
    | SpecialRegister
    | Immediate
    | Symbol
    | Address
    | Vector
    | Sink
    | PredicatePair
    | Negated
    | Expression
)


# --------------------------------------------------------------------------- statements


class Guard(NamedTuple):
    """`@%p` or `@!%p` in front of an instruction."""

    predicate: str
    negated: bool


class Instruction(NamedTuple):
    """One PTX instruction statement."""

    opcode: str  # base opcode, e.g. "ld", "fma", "wgmma"
    modifiers: tuple[str, ...]  # dotted parts in order, without dots: ("global", "nc", "v4", "f32")
    operands: tuple[Operand, ...]
    guard: Guard | None
    loc: SourceLoc | None  # the latest `.loc` before it
    ptx_line: int  # 1-based line in the PTX text
    # The opcode as written, "ld.global.nc.v4.f32": one string object per spelling in a
    # module, so that counting instructions by kind hashes a string rather than a tuple.
    full_opcode: str


def split_opcode(text: str) -> tuple[str, tuple[str, ...]]:
    """An opcode as written into `Instruction.opcode` and `.modifiers`:
    `ld.global.nc.v4.f32` -> ("ld", ("global", "nc", "v4", "f32"))."""
    base, *modifiers = text.split(".")
    return base, tuple(modifiers)


@dataclass(frozen=True)
class BasicBlock:
    """A maximal run of instructions: starts at a label or after a branch, ends at a branch."""

    label: str | None
    instructions: tuple[Instruction, ...]


# --------------------------------------------------------------------------- declarations

StateSpace = Literal["reg", "sreg", "const", "global", "local", "param", "shared", "tex"]
Linkage = Literal["visible", "extern", "weak", "common", ""]


@dataclass(frozen=True)
class Variable:
    """A `.global/.const/.shared/.local/.param/.reg` declaration."""

    name: str
    space: StateSpace
    type: str  # e.g. "f32", "b8", "u64"
    array_dims: tuple[int | None, ...] = ()  # [] is None (unsized, e.g. extern shared)
    align: int | None = None
    vector: int | None = None  # .v2/.v4
    linkage: Linkage = ""
    has_initializer: bool = False
    ptx_line: int = 0

    @property
    def size_bytes(self) -> int | None:
        """Size in bytes when every dimension is known."""
        width = _TYPE_BYTES.get(self.type)
        if width is None:
            return None
        total = width * (self.vector or 1)
        for dim in self.array_dims:
            if dim is None:
                return None
            total *= dim
        return total


@dataclass(frozen=True)
class RegisterDeclaration:
    """`.reg .f32 %f<42>;` — `count` is the range size, 1 for a single register."""

    type: str
    prefix: str
    count: int


@dataclass(frozen=True)
class PerformanceDirectives:
    """The PTX performance-tuning directives of an entry (all optional)."""

    maxntid: tuple[int, ...] | None = None
    reqntid: tuple[int, ...] | None = None
    minnctapersm: int | None = None
    maxnctapersm: int | None = None
    maxnreg: int | None = None
    reqnctapercluster: tuple[int, ...] | None = None
    explicitcluster: bool = False
    maxclusterrank: int | None = None
    noreturn: bool = False
    pragmas: tuple[str, ...] = ()


FunctionKind = Literal["entry", "func"]


@dataclass(frozen=True)
class Function:
    """An `.entry` (kernel) or `.func` (device function)."""

    name: str
    kind: FunctionKind
    params: tuple[Variable, ...]
    returns: tuple[Variable, ...]
    linkage: Linkage
    directives: PerformanceDirectives
    registers: tuple[RegisterDeclaration, ...]
    locals: tuple[Variable, ...]  # .local/.shared/.const declared inside the body
    blocks: tuple[BasicBlock, ...]
    ptx_line: int
    has_body: bool = True  # False for prototypes (`.extern .func f(...);`)

    @property
    def is_kernel(self) -> bool:
        return self.kind == "entry"

    @property
    def instruction_count(self) -> int:
        return sum(len(block.instructions) for block in self.blocks)


@dataclass(frozen=True)
class Module:
    """A whole PTX module."""

    version: str  # ".version 8.8" -> "8.8"
    target: tuple[str, ...]  # ("sm_90a",) or ("sm_80", "debug")
    address_size: int
    files: dict[int, str] = field(default_factory=dict)  # .file index -> path
    globals: tuple[Variable, ...] = ()
    functions: tuple[Function, ...] = ()
    unknown_statements: tuple[UnknownStatement, ...] = ()

    @property
    def kernels(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.is_kernel)

    def function(self, name: str) -> Function | None:
        """The function's definition; its prototype when the module only declares it (a kernel
        whose address a global holds is declared before it is defined)."""
        declared: Function | None = None
        for candidate in self.functions:
            if candidate.name == name:
                if candidate.has_body:
                    return candidate
                declared = declared or candidate
        return declared


@dataclass(frozen=True)
class UnknownStatement:
    """A statement the grammar does not know (e.g. a newer ISA); kept and reported, not fatal."""

    text: str
    ptx_line: int
    column: int
    message: str


_TYPE_BYTES: dict[str, int] = {
    "b8": 1, "s8": 1, "u8": 1, "pred": 1,
    "b16": 2, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "f16x2": 4, "bf16x2": 4,
    "b32": 4, "s32": 4, "u32": 4, "f32": 4, "tf32": 4,
    "b64": 8, "s64": 8, "u64": 8, "f64": 8,
    "b128": 16,
}  # fmt: skip
