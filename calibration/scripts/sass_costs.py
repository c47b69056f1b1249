"""Measures what each PTX arithmetic and conversion form costs in SASS, per GPU architecture.

    .venv/bin/python calibration/scripts/sass_costs.py [--out calibration/data/sass_costs.json]
                     [--arch sm_86]... [--form div.rn.f32]... [--steps 8] [--jobs 2]

ptxas turns some PTX instructions into many machine instructions: `div.rn.f32` becomes a MUFU
reciprocal, an FCHK range check, five FFMAs and a branch around a slow-path call; `div.s64`
calls a subroutine of about seventy integer instructions. FlipFlop counts PTX, so it needs to
know, per architecture, how many issue slots and which pipes one PTX instruction costs. This
script measures that from the compiler itself; `calibration/data/sass_costs.json` is its output
and the source of every number the analysis uses (`flipflop.analysis.sass`).

How one form is measured on one architecture:
1. A PTX kernel applies the instruction `steps` times in a dependent chain. The chain starts
   from a value loaded from global memory and ends in a store, so ptxas can neither fold nor
   drop it. Between two links every source operand passes through a `shfl.sync.idx` whose lane
   comes from memory: ptxas cannot see through a shuffle, so it cannot merge two links (two
   adds into one IADD3, two ANDs into one LOP3) nor reuse one link's work in the next (the
   reciprocal of a divisor that never changes).
2. `ptxas -arch=sm_XX` assembles it and `nvdisasm` disassembles the cubin.
3. The instructions of the fast path are counted: the path through the kernel from its entry to
   EXIT that makes the fewest subroutine calls, then has the fewest instructions. A subroutine
   reached only through a predicated slow-path branch is thus not counted; one that every path
   calls is counted along its own fast path. The shuffles and ballots of step 1 are not counted.
4. The same count for a baseline kernel (the same loads and stores, no chain) is subtracted and
   the difference divided by `steps`: issue slots per PTX instruction, split by pipe.

Forms that differ only in the comparison operator or in the signedness of a type that does not
change the operation share one entry (`flipflop.analysis.sass.canonical_spelling`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from heapq import heappop, heappush
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))
from flipflop.toolchain import ToolchainError, find_toolchain  # noqa: E402

DEFAULT_OUT = ROOT / "calibration" / "data" / "sass_costs.json"
# The architectures of the GPU profiles (Turing to Blackwell) plus sm_100, every one that
# nvcc 13 generates code for.
ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
DEFAULT_STEPS = 8
PTX_VERSION = "9.0"  # what nvcc 13.0 writes
_TIMEOUT_S = 120

# --------------------------------------------------------------------------- pipes

# SASS opcode (before the first dot) -> pipe. Names follow the CUDA binary utilities' instruction
# set reference (sm_75 to sm_120 tables); the split is the model's, not Nsight Compute's finer one.
PIPES: Mapping[str, tuple[str, ...]] = {
    "fp32": ("FADD", "FADD32I", "FCHK", "FCMP", "FFMA", "FFMA32I", "FMNMX", "FMUL", "FMUL32I",
             "FSEL", "FSET", "FSETP", "FSWZADD"),
    "fp64": ("DADD", "DFMA", "DMUL", "DSETP", "DMNMX"),
    "fp16": ("HADD2", "HADD2_32I", "HFMA2", "HFMA2_32I", "HMNMX2", "HMUL2", "HMUL2_32I",
             "HSET2", "HSETP2"),
    "sfu": ("MUFU",),
    "int": ("BFE", "BFI", "BMSK", "BREV", "FLO", "IABS", "IADD", "IADD3", "IADD32I", "ICMP",
            "IDP", "IDP4A", "IMAD", "IMADSP", "IMNMX", "IMUL", "IMUL32I", "ISCADD", "ISETP",
            "LEA", "LOP", "LOP3", "LOP32I", "MOV", "MOV32I", "P2R", "PLOP3", "POPC", "PRMT",
            "R2P", "SEL", "SGXT", "SHF", "SHL", "SHR", "VABSDIFF", "VABSDIFF4", "VIADD",
            "VIADDMNMX", "VIMNMX", "VIMNMX3", "CS2R"),
    "conversion": ("F2F", "F2FP", "F2I", "F2IP", "FRND", "I2F", "I2FP", "I2I", "I2IP"),
    "branch": ("BRA", "BRX", "BSSY", "BSYNC", "CALL", "EXIT", "JMP", "JMX", "RET", "WARPSYNC",
               "BMOV", "BREAK", "YIELD"),
    "uniform": ("UIADD3", "UIMAD", "ULDC", "ULEA", "ULOP3", "UMOV", "UPRMT", "USEL", "USHF",
                "UISETP", "UFLO", "UPOPC", "UBREV", "USGXT"),
    "memory": ("LDC", "LDG", "LDL", "LDS", "STG", "STL", "STS", "LD", "ST"),
}  # fmt: skip
_PIPE_OF = {opcode: pipe for pipe, opcodes in PIPES.items() for opcode in opcodes}
# The chain's own glue (step 1): not part of any measured form.
_GLUE = frozenset(("LDS", "STS", "VOTE"))


def pipe_of(opcode: str) -> str:
    """The pipe of a SASS opcode such as `MUFU.RCP` or `IMAD.WIDE.U32`; "other" if unknown."""
    return _PIPE_OF.get(opcode.split(".", 1)[0], "other")


# --------------------------------------------------------------------------- forms


@dataclass(frozen=True)
class Form:
    """One PTX instruction form and the PTX types of its destination and sources."""

    spelling: str  # e.g. "div.rn.f32"
    destination: str  # a PTX type; "pred" for a predicate
    sources: tuple[str, ...]
    immediates: str = ""  # trailing immediate operands, e.g. ", 0x96" for lop3
    # Operands after the destination when they are not the sources in order: `{0}`, `{1}`…
    # for the sources, `{p}` for a predicate that does not change (the condition of selp).
    template: str = ""


def _same(spelling: str, arity: int) -> Form:
    kind = spelling.rsplit(".", 1)[1]
    return Form(spelling, kind, (kind,) * arity)


def _forms() -> tuple[Form, ...]:
    forms: list[Form] = []
    unary, binary, ternary = 1, 2, 3
    for spelling in (
        "add.f32", "add.rn.f32", "add.ftz.f32", "sub.f32", "sub.ftz.f32", "mul.f32",
        "mul.rn.f32", "mul.ftz.f32", "div.rn.f32", "div.rn.ftz.f32", "div.full.f32",
        "div.full.ftz.f32", "div.approx.f32", "div.approx.ftz.f32", "min.f32", "max.f32",
        "min.ftz.f32", "max.ftz.f32", "min.NaN.f32", "max.NaN.f32", "copysign.f32",
        "add.f64", "add.rn.f64", "sub.f64", "mul.f64", "mul.rn.f64", "div.rn.f64", "min.f64",
        "max.f64", "copysign.f64",
        "add.f16", "sub.f16", "mul.f16", "min.f16", "max.f16", "add.f16x2", "sub.f16x2",
        "mul.f16x2", "min.f16x2", "max.f16x2", "add.rn.bf16x2", "mul.rn.bf16x2",
        "min.bf16x2", "max.bf16x2",
        "add.s32", "sub.s32", "mul.lo.s32", "mul.hi.s32", "mul.hi.u32", "mul24.lo.s32",
        "mul24.lo.u32", "div.s32", "div.u32", "rem.s32", "rem.u32", "min.s32", "min.u32",
        "max.s32", "max.u32", "and.b32", "or.b32", "xor.b32",
        "add.s64", "sub.s64", "mul.lo.s64", "mul.hi.s64", "mul.hi.u64", "div.s64", "div.u64",
        "rem.s64", "rem.u64", "min.s64", "min.u64", "max.s64", "max.u64", "and.b64",
        "or.b64", "xor.b64",
        "add.s16", "sub.s16", "mul.lo.s16", "min.s16", "min.u16", "max.s16", "max.u16",
        "and.b16", "or.b16", "xor.b16",
    ):  # fmt: skip
        forms.append(_same(spelling, binary))
    for spelling in (
        "fma.rn.f32", "fma.rn.ftz.f32", "fma.rn.sat.f32", "fma.rn.f64", "fma.rn.f16",
        "fma.rn.f16x2", "fma.rn.bf16", "fma.rn.bf16x2", "mad.lo.s32", "mad.hi.s32",
        "mad.hi.u32", "mad24.lo.s32", "mad.lo.s64", "sad.s32", "sad.u32", "fma.rm.f32",
        "fma.rp.f32", "fma.rz.f32", "fma.rm.f64", "fma.rp.f64", "fma.rz.f64",
    ):  # fmt: skip
        forms.append(_same(spelling, ternary))
    for spelling in (
        "rcp.rn.f32", "rcp.rn.ftz.f32", "rcp.approx.f32", "rcp.approx.ftz.f32", "sqrt.rn.f32",
        "sqrt.rn.ftz.f32", "sqrt.approx.f32", "sqrt.approx.ftz.f32", "rsqrt.approx.f32",
        "rsqrt.approx.ftz.f32", "ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32",
        "lg2.approx.ftz.f32", "sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32",
        "cos.approx.ftz.f32", "tanh.approx.f32", "abs.f32", "neg.f32", "abs.ftz.f32",
        "neg.ftz.f32",
        "rcp.rn.f64", "rcp.approx.ftz.f64", "sqrt.rn.f64", "rsqrt.approx.f64",
        "rsqrt.approx.ftz.f64", "abs.f64", "neg.f64",
        "neg.f16", "abs.f16", "neg.f16x2", "abs.f16x2", "ex2.approx.f16x2",
        "tanh.approx.f16x2",
        "abs.s32", "neg.s32", "not.b32", "cnot.b32", "brev.b32", "abs.s64", "neg.s64",
        "not.b64", "brev.b64",
    ):  # fmt: skip
        forms.append(_same(spelling, unary))
    for spelling, destination, sources in (
        ("popc.b32", "u32", ("b32",)), ("popc.b64", "u32", ("b64",)),
        ("clz.b32", "u32", ("b32",)), ("clz.b64", "u32", ("b64",)),
        ("bfind.u32", "u32", ("u32",)), ("bfind.s32", "u32", ("s32",)),
        ("bfind.u64", "u32", ("u64",)),
        ("shl.b32", "b32", ("b32", "u32")), ("shr.u32", "u32", ("u32", "u32")),
        ("shr.s32", "s32", ("s32", "u32")), ("shl.b64", "b64", ("b64", "u32")),
        ("shr.u64", "u64", ("u64", "u32")), ("shr.s64", "s64", ("s64", "u32")),
        ("shl.b16", "b16", ("b16", "u32")), ("shr.u16", "u16", ("u16", "u32")),
        ("mul.wide.s32", "s64", ("s32", "s32")), ("mul.wide.u32", "u64", ("u32", "u32")),
        ("mul.wide.s16", "s32", ("s16", "s16")), ("mul.wide.u16", "u32", ("u16", "u16")),
        ("mad.wide.s32", "s64", ("s32", "s32", "s64")),
        ("mad.wide.u32", "u64", ("u32", "u32", "u64")),
        ("prmt.b32", "b32", ("b32", "b32", "b32")),
        ("shf.l.wrap.b32", "b32", ("b32", "b32", "u32")),
        ("shf.r.wrap.b32", "b32", ("b32", "b32", "u32")),
        ("shf.l.clamp.b32", "b32", ("b32", "b32", "u32")),
        ("shf.r.clamp.b32", "b32", ("b32", "b32", "u32")),
        ("dp4a.s32.s32", "s32", ("s32", "s32", "s32")),
        ("dp4a.u32.u32", "u32", ("u32", "u32", "u32")),
        ("dp2a.lo.s32.s32", "s32", ("s32", "s32", "s32")),
        ("cvta.to.global.u64", "u64", ("u64",)), ("cvta.global.u64", "u64", ("u64",)),
        ("cvta.to.shared.u64", "u64", ("u64",)), ("cvta.shared.u64", "u64", ("u64",)),
        ("cvta.to.local.u64", "u64", ("u64",)), ("cvta.local.u64", "u64", ("u64",)),
    ):  # fmt: skip
        forms.append(Form(spelling, destination, sources))
    forms.append(Form("lop3.b32", "b32", ("b32", "b32", "b32"), immediates=", 0x96"))
    # Bit fields as nvcc writes them: position and length are constants.
    for spelling, kind in (("bfe.u32", "u32"), ("bfe.s32", "s32"), ("bfe.u64", "u64"),
                           ("bfe.s64", "s64")):  # fmt: skip
        forms.append(Form(spelling, kind, (kind,), immediates=", 8, 12"))
    for spelling, kind in (("bfi.b32", "b32"), ("bfi.b64", "b64")):
        forms.append(Form(spelling, kind, (kind, kind), immediates=", 8, 12"))
    # A selp of two loaded values becomes a predicated load; with one immediate it stays a
    # select, as in the `selp.b32 %r, 1, 0, %p` nvcc writes most.
    for kind, constant in (("b16", "1234"), ("b32", "12345678"), ("b64", "123456789012")):
        forms.append(Form(f"selp.{kind}", kind, (kind,), template=f"{{0}}, {constant}, {{p}}"))
    for kind in ("f32", "f64", "s32", "u32", "s64", "u64", "s16", "u16", "f16"):
        forms.append(Form(f"setp.lt.{kind}", "pred", (kind, kind)))
    forms.append(Form("setp.lt.ftz.f32", "pred", ("f32", "f32")))
    forms.append(Form("setp.lt.f16x2", "pred", ("f16x2", "f16x2")))
    forms.append(Form("testp.finite.f32", "pred", ("f32",)))
    forms.append(Form("testp.finite.f64", "pred", ("f64",)))
    for spelling in (
        "cvt.f64.f32", "cvt.rn.f32.f64", "cvt.rz.f32.f64", "cvt.rn.f32.s32", "cvt.rn.f32.u32",
        "cvt.rz.f32.s32", "cvt.rn.f32.s64", "cvt.rn.f32.u64", "cvt.rn.f64.s32",
        "cvt.rn.f64.u32", "cvt.rn.f64.s64", "cvt.rn.f64.u64", "cvt.rzi.s32.f32",
        "cvt.rzi.u32.f32", "cvt.rni.s32.f32", "cvt.rmi.s32.f32", "cvt.rpi.s32.f32",
        "cvt.rzi.ftz.s32.f32", "cvt.rzi.s64.f32", "cvt.rzi.u64.f32", "cvt.rni.s64.f32",
        "cvt.rzi.s32.f64", "cvt.rzi.u32.f64", "cvt.rni.s32.f64", "cvt.rmi.s32.f64",
        "cvt.rzi.s64.f64", "cvt.rzi.u64.f64", "cvt.rni.s64.f64", "cvt.rni.f32.f32",
        "cvt.rzi.f32.f32", "cvt.rmi.f32.f32", "cvt.rpi.f32.f32", "cvt.rni.ftz.f32.f32",
        "cvt.rni.f64.f64", "cvt.rzi.f64.f64", "cvt.rmi.f64.f64", "cvt.rpi.f64.f64",
        "cvt.sat.f32.f32", "cvt.rn.f16.f32", "cvt.rz.f16.f32", "cvt.f32.f16",
        "cvt.rn.bf16.f32", "cvt.f32.bf16", "cvt.rn.f16.f64", "cvt.f64.f16",
        "cvt.rn.f32.s16", "cvt.rn.f16.s32", "cvt.rzi.s32.f16",
        "cvt.s64.s32", "cvt.u64.u32", "cvt.u32.u64", "cvt.s32.s64", "cvt.s32.s16",
        "cvt.s32.s8", "cvt.u32.u16", "cvt.u32.u8", "cvt.u16.u32", "cvt.s16.s32",
        "cvt.u8.u32", "cvt.s8.s32", "cvt.u64.u16", "cvt.s64.s16", "cvt.u16.u8",
        "cvt.s16.s8", "cvt.u16.u64",
    ):  # fmt: skip
        *_, destination, source = spelling.split(".")
        forms.append(Form(spelling, destination, (source,)))
    forms.append(Form("cvt.rn.f16x2.f32", "b32", ("f32", "f32")))
    forms.append(Form("cvt.rn.bf16x2.f32", "b32", ("f32", "f32")))
    return tuple(forms)


FORMS = _forms()
FORMS_BY_SPELLING = {form.spelling: form for form in FORMS}

# --------------------------------------------------------------------------- PTX kernels

_BITS = {"pred": 1, "b8": 16, "s8": 16, "u8": 16, "b16": 16, "s16": 16, "u16": 16, "f16": 16,
         "bf16": 16, "b32": 32, "s32": 32, "u32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
         "b64": 64, "s64": 64, "u64": 64, "f64": 64}  # fmt: skip
_SLOTS = 4  # per thread: one per source operand
_SLOT_BYTES = 8


class _Writer:
    """Emits the body of a chain kernel with fresh registers of each width."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.used = Counter[str]()
        self.roles: dict[str, str] = {}

    def fresh(self, bits: int) -> str:
        prefix = {1: "p", 16: "h", 32: "r", 64: "d"}[bits]
        self.used[prefix] += 1
        return f"%{prefix}{self.used[prefix]}"

    def named(self, bits: int, role: str) -> str:
        """One register per role, reused by every link (fewer copies from the allocator)."""
        name = f"%{role}_{bits}"
        self.roles[name] = {1: ".pred", 16: ".b16", 32: ".b32", 64: ".b64"}[bits]
        return name

    def emit(self, line: str) -> None:
        self.lines.append(f"\t{line}")

    def declarations(self) -> list[str]:
        sizes = {"p": ".pred", "h": ".b16", "r": ".b32", "d": ".b64"}
        ranges = [f"\t.reg {sizes[p]} %{p}<{self.used[p] + 1}>;" for p in sorted(self.used)]
        return ranges + [f"\t.reg {kind} {name};" for name, kind in sorted(self.roles.items())]


def ptx_kernel(form: Form | None, destination: str, arch: str, steps: int,
               widen_halves: bool = False) -> str:  # fmt: skip
    """A kernel applying `form` `steps` times in a dependent chain; with `form=None` (or no
    steps) the baseline: the same loads and stores of a `destination`-typed value.

    Each link stores its result to the thread's slot in shared memory with a volatile store
    and the next link loads its sources back with volatile loads: ptxas must keep every bit of
    every result and cannot see what comes back, so it can neither merge two links nor reuse
    one link's work in the next. The shared-memory accesses (and the ballots that store
    predicates) are the chain's glue and are not counted."""
    w = _Writer()
    pointer, global_, offset, base, slot = (w.fresh(64) for _ in range(5))
    thread = w.fresh(32)
    w.emit(f"ld.param.u64 {pointer}, [data];")
    w.emit(f"cvta.to.global.u64 {global_}, {pointer};")
    # Every thread works on its own values: ptxas would see through values all lanes share.
    w.emit(f"mov.u32 {thread}, %tid.x;")
    w.emit(f"mul.wide.u32 {offset}, {thread}, 64;")
    w.emit(f"add.s64 {base}, {global_}, {offset};")
    w.emit(f"mov.u64 {slot}, slots;")
    w.emit(f"mad.wide.u32 {slot}, {thread}, {_SLOT_BYTES * _SLOTS}, {slot};")
    word = w.fresh(32)
    w.emit(f"ld.global.u32 {word}, [{base}+8];")
    fixed = w.fresh(1)  # a predicate that never changes (the condition of selp)
    w.emit(f"setp.ne.u32 {fixed}, {word}, 0;")
    sources_count = max(len(form.sources), 1) if form is not None else 1
    first = _load_global(w, destination, base)
    _store(w, first, destination, slot, sources_count, widen_halves)
    for _ in range(steps if form is not None else 0):
        assert form is not None
        sources = [_load_slot(w, kind, slot, j, reuse=True) for j, kind in enumerate(form.sources)]
        if form.template:
            operands = form.template.format(*sources, p=fixed)
        else:
            operands = ", ".join(sources) + form.immediates
        result = w.named(_BITS[form.destination], "result")
        w.emit(f"{form.spelling} {result}, {operands};")
        _store(w, result, form.destination, slot, sources_count, widen_halves)
    bits = max(_BITS[destination], 32)
    final = _load_slot(w, f"b{bits}", slot, 0)
    w.emit(f"st.global.b{bits} [{base}+16], {final};")
    ballot = w.fresh(32)
    w.emit(f"vote.sync.ballot.b32 {ballot}, {fixed}, -1;")
    w.emit(f"st.global.u32 [{base}+24], {ballot};")
    w.emit("ret;")
    header = [f".version {PTX_VERSION}", f".target {arch}", ".address_size 64", "",
              f".shared .align 8 .b8 slots[{1024 * _SLOT_BYTES * _SLOTS}];", "",
              ".visible .entry chain(.param .u64 data)", "{"]  # fmt: skip
    return "\n".join([*header, *w.declarations(), *w.lines, "}", ""])


def _load_global(w: _Writer, kind: str, base: str) -> str:
    bits = _BITS[kind]
    if bits == 1:
        word, value = w.fresh(32), w.fresh(1)
        w.emit(f"ld.global.u32 {word}, [{base}];")
        w.emit(f"setp.ne.u32 {value}, {word}, 0;")
        return value
    value = w.fresh(bits)
    w.emit(f"ld.global.b{bits} {value}, [{base}];")
    return value


def _store(w: _Writer, value: str, kind: str, slot: str, copies: int,
           widen_halves: bool) -> None:  # fmt: skip
    """The result once per source of the next link: loads of one address may be merged.

    A 16-bit result is stored as 16 bits or, with `widen_halves`, zero-extended to 32: ptxas
    keeps 16-bit registers in halves of 32-bit ones and, depending on the instruction that
    wrote them, needs a PRMT for one way or a zero-extension for the other."""
    bits = _BITS[kind]
    if bits == 1:  # a predicate leaves through a ballot, also glue
        word = w.fresh(32)
        w.emit(f"vote.sync.ballot.b32 {word}, {value}, -1;")
        value, bits = word, 32
    elif bits == 16 and widen_halves:
        word = w.fresh(32)
        w.emit(f"cvt.u32.u16 {word}, {value};")
        value, bits = word, 32
    for index in range(copies):
        w.emit(f"st.volatile.shared.b{bits} [{slot}+{_SLOT_BYTES * index}], {value};")


def _load_slot(w: _Writer, kind: str, slot: str, index: int, reuse: bool = False) -> str:
    bits = _BITS[kind]
    if bits == 1:
        raise ValueError("predicate sources other than a fixed one are not measured")
    value = w.named(bits, f"source{index}") if reuse else w.fresh(bits)
    # Signed 16-bit sources load sign-extended, as nvcc's own loads of them do.
    kind_loaded = kind if kind in ("s16", "s8") else f"b{bits}"
    kind_loaded = "s16" if kind_loaded == "s8" else kind_loaded
    w.emit(f"ld.volatile.shared.{kind_loaded} {value}, [{slot}+{_SLOT_BYTES * index}];")
    return value


# --------------------------------------------------------------------------- SASS


@dataclass(frozen=True)
class SassInstruction:
    opcode: str  # with modifiers: "MUFU.RCP"
    predicated: bool  # guarded by a predicate other than PT
    target: str | None  # label of a branch or call
    conditional: bool  # a branch that may fall through
    operands: str = ""  # as nvdisasm writes them: "R4, R9.reuse, R10, R4"
    guard: str = ""  # "@P0", "@!P1"; empty when unguarded


@dataclass(frozen=True)
class SassFunction:
    name: str
    blocks: tuple[tuple[str, tuple[SassInstruction, ...]], ...]  # (label, instructions)


_INSTRUCTION = re.compile(
    r"^\s*/\*[0-9a-f]+\*/\s+(?P<guard>@!?U?P[T0-9]+\s+)?(?P<opcode>[A-Z][A-Z0-9_.]*)"
    r"(?P<operands>[^;]*);"
)
_LABEL = re.compile(r"^(?P<label>[.$\w]+):\s*$")
_FUNCTION = re.compile(r"^\s*\.type\s+(?P<name>[^,\s]+),@function")
_TARGET = re.compile(r"`\((?P<target>[^)]+)\)")


def parse_sass(text: str) -> dict[str, SassFunction]:
    """The functions of `nvdisasm -c` output, split into labelled blocks."""
    functions: dict[str, list[tuple[str, list[SassInstruction]]]] = {}
    names: set[str] = set()
    current: list[tuple[str, list[SassInstruction]]] | None = None
    for line in text.splitlines():
        declared = _FUNCTION.match(line)
        if declared:
            names.add(declared["name"])
            continue
        labelled = _LABEL.match(line.strip())
        if labelled:
            label = labelled["label"]
            if label in names:
                current = functions.setdefault(label, [])
            if current is not None and not label.startswith(".text."):
                current.append((label, []))
            continue
        matched = _INSTRUCTION.match(line)
        if matched is None or current is None:
            continue
        opcode = matched["opcode"]
        operands = matched["operands"]
        guard = (matched["guard"] or "").strip()
        predicated = bool(guard) and guard not in ("@PT", "@UPT")
        target_match = _TARGET.search(operands)
        base = opcode.split(".", 1)[0]
        # `BRA P1, target` or `BRA !P2, target` carry a second condition.
        extra = bool(re.match(r"\s*!?U?P[0-9]", operands)) and base == "BRA"
        if not current:
            current.append(("", []))
        current[-1][1].append(SassInstruction(
            opcode, predicated, target_match["target"] if target_match else None,
            conditional=predicated or extra, operands=operands.strip(), guard=guard,
        ))  # fmt: skip
    return {name: SassFunction(name, tuple((label, tuple(body)) for label, body in blocks))
            for name, blocks in functions.items()}  # fmt: skip


def fast_path(functions: Mapping[str, SassFunction], name: str) -> Counter[str]:
    """SASS opcodes on the fast path of function `name` (see the module docstring), with the
    fast paths of the subroutines it calls unconditionally folded in."""
    memo: dict[str, tuple[int, Counter[str]]] = {}
    return _fast_path(functions, name, memo, ())[1]


def _fast_path(functions: Mapping[str, SassFunction], name: str,
               memo: dict[str, tuple[int, Counter[str]]],
               stack: tuple[str, ...]) -> tuple[int, Counter[str]]:  # fmt: skip
    """(calls made, opcode counts) along the cheapest path from entry to EXIT/RET."""
    if name in memo:
        return memo[name]
    if name in stack:
        raise ValueError(f"recursive SASS call to {name}")
    nodes = _nodes(functions[name])
    index_of = {label: i for i, (label, _) in enumerate(nodes) if label}
    costs = [_node_cost(functions, body, memo, (*stack, name)) for _, body in nodes]
    path = _cheapest(nodes, costs, index_of, 0, lambda node: costs[node][3], lambda _: True)
    if path is None:
        raise ValueError(f"no path to EXIT or RET in {name}")
    memo[name] = _tally(costs, path)
    return memo[name]


def loop_fast_paths(functions: Mapping[str, SassFunction], name: str) -> list[Counter[str]]:
    """SASS opcodes of one iteration of each loop of function `name` along its fast path: from
    the target of a backward branch to that branch, through the blocks between them."""
    memo: dict[str, tuple[int, Counter[str]]] = {}
    nodes = _nodes(functions[name])
    index_of = {label: i for i, (label, _) in enumerate(nodes) if label}
    costs = [_node_cost(functions, body, memo, (name,)) for _, body in nodes]
    found = []
    for latch, (_, body) in enumerate(nodes):
        last = body[-1] if body else None
        if last is None or last.opcode.split(".", 1)[0] != "BRA" or last.target not in index_of:
            continue
        header = index_of[last.target]
        if header > latch:
            continue
        path = _cheapest(nodes, costs, index_of, header, latch.__eq__,
                         range(header, latch + 1).__contains__)  # fmt: skip
        if path is not None:
            found.append(_tally(costs, path)[1])
    return found


_NodeCost = tuple[int, int, Counter[str], bool]
_Nodes = Sequence[tuple[str, tuple[SassInstruction, ...]]]


def _cheapest(
    nodes: _Nodes,
    costs: Sequence[_NodeCost],
    index_of: Mapping[str, int],
    start: int,
    ends: Callable[[int], bool],
    inside: Callable[[int], bool],
) -> list[int] | None:
    """The nodes of the path from `start` to a node where `ends` holds that makes the fewest
    calls, then counts the fewest instructions (Dijkstra; costs are never negative)."""
    reach: dict[int, tuple[int, int]] = {start: (0, 0)}  # (calls, instructions) before a node
    previous: dict[int, int | None] = {start: None}
    queue: list[tuple[int, int, int]] = [(0, 0, start)]
    done: set[int] = set()
    while queue:
        calls, count, node = heappop(queue)
        if node in done:
            continue
        done.add(node)
        if ends(node):
            path = []
            step: int | None = node
            while step is not None:
                path.append(step)
                step = previous[step]
            return path[::-1]
        node_calls, node_count, _, _ = costs[node]
        after = (calls + node_calls, count + node_count)
        for successor in _successors(nodes, node, index_of):
            if inside(successor) and successor not in done and after < reach.get(
                successor, (1 << 60, 0)
            ):
                reach[successor] = after
                previous[successor] = node
                heappush(queue, (*after, successor))
    return None


def _tally(costs: Sequence[_NodeCost], path: Iterable[int]) -> tuple[int, Counter[str]]:
    opcodes = Counter[str]()
    calls = 0
    for node in path:
        node_calls, _, node_opcodes, _ = costs[node]
        calls += node_calls
        opcodes.update(node_opcodes)
    return calls, opcodes


def _nodes(function: SassFunction) -> list[tuple[str, tuple[SassInstruction, ...]]]:
    """Basic blocks: the labelled blocks, split after every branch and end."""
    nodes: list[tuple[str, tuple[SassInstruction, ...]]] = []
    for label, instructions in function.blocks:
        start = 0
        for i, instruction in enumerate(instructions):
            if instruction.opcode.split(".", 1)[0] in ("BRA", "EXIT", "RET", "BRX", "JMP"):
                nodes.append((label if start == 0 else "", instructions[start:i + 1]))
                start = i + 1
        if start < len(instructions) or not instructions:
            nodes.append((label if start == 0 else "", instructions[start:]))
    return nodes


def _node_cost(functions: Mapping[str, SassFunction], instructions: Sequence[SassInstruction],
               memo: dict[str, tuple[int, Counter[str]]],
               stack: tuple[str, ...]) -> _NodeCost:  # fmt: skip
    """(calls, counted instructions, opcodes, whether the block unconditionally ends the
    function) of one block, with the fast paths of its callees."""
    calls = 0
    opcodes = Counter[str]()
    ends = False
    for instruction in instructions:
        base = instruction.opcode.split(".", 1)[0]
        if base not in _GLUE:
            opcodes[instruction.opcode] += 1
        callee = instruction.target
        if base == "CALL" and callee is not None and callee in functions:
            callee_calls, callee_opcodes = _fast_path(functions, callee, memo, stack)
            calls += 1 + callee_calls
            opcodes.update(callee_opcodes)
        if base in ("EXIT", "RET") and not instruction.conditional:
            ends = True
    return calls, sum(opcodes.values()), opcodes, ends


def _successors(nodes: _Nodes, node: int,
                index_of: Mapping[str, int]) -> list[int]:  # fmt: skip
    instructions = nodes[node][1]
    last = instructions[-1] if instructions else None
    falls_through = True
    found = []
    if last is not None and last.opcode.split(".", 1)[0] == "BRA":
        if last.target is not None and last.target in index_of:
            found.append(index_of[last.target])
        falls_through = last.conditional
    if falls_through and node + 1 < len(nodes):
        found.append(node + 1)
    return found


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Tools:
    ptxas: Path
    nvdisasm: Path
    ptxas_version: str
    nvdisasm_version: str


@dataclass(frozen=True)
class Cost:
    """Per PTX instruction: issue slots, slots by pipe, and SASS opcodes (all per instruction)."""

    slots: float
    pipes: dict[str, float]
    sass: dict[str, float]

    def to_json(self) -> dict[str, object]:
        return {"slots": self.slots, "pipes": self.pipes, "sass": self.sass}


class MeasureError(RuntimeError):
    """ptxas refused the kernel (the form does not exist on that architecture) or failed."""


def find_tools(environ: Mapping[str, str] | None = None) -> Tools:
    """The project's ptxas (as the toolchain finds it) and nvdisasm from PATH, beside ptxas or
    from the `nvidia-cuda-nvdisasm` wheel."""
    try:
        toolchain = find_toolchain(environ=environ)
    except ToolchainError as error:
        raise MeasureError(str(error)) from error
    ptxas = toolchain.ptxas
    candidates = [shutil.which("nvdisasm"), ptxas.parent / "nvdisasm",
                  ptxas.resolve().parent / "nvdisasm"]  # fmt: skip
    for root in map(Path, sys.path):
        candidates.append(root / "nvidia" / "cu13" / "bin" / "nvdisasm")
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            nvdisasm = Path(candidate)
            break
    else:
        raise MeasureError("nvdisasm not found: install the dev extra (nvidia-cuda-nvdisasm)")
    return Tools(ptxas, nvdisasm, _version(ptxas), _version(nvdisasm))


def _version(tool: Path) -> str:
    text = subprocess.run([str(tool), "--version"], capture_output=True, text=True,
                          timeout=_TIMEOUT_S).stdout  # fmt: skip
    found = re.search(r"V(\d+\.\d+\.\d+)", text)
    return found.group(1) if found else "unknown"


def sass_of(ptx: str, arch: str, tools: Tools) -> str:
    """`nvdisasm -c` of the cubin ptxas makes of `ptx`."""
    with tempfile.TemporaryDirectory(prefix="sass-costs-") as folder:
        source, cubin = Path(folder, "chain.ptx"), Path(folder, "chain.cubin")
        source.write_text(ptx, encoding="utf-8")
        assembled = subprocess.run(
            [str(tools.ptxas), f"-arch={arch}", str(source), "-o", str(cubin)],
            capture_output=True, text=True, timeout=_TIMEOUT_S,
        )  # fmt: skip
        if assembled.returncode != 0:
            raise MeasureError(assembled.stderr.strip() or f"ptxas failed on {arch}")
        listed = subprocess.run([str(tools.nvdisasm), "-c", str(cubin)], capture_output=True,
                                text=True, timeout=_TIMEOUT_S)  # fmt: skip
        if listed.returncode != 0:
            raise MeasureError(listed.stderr.strip() or "nvdisasm failed")
        return listed.stdout


def kernel_opcodes(ptx: str, arch: str, tools: Tools) -> Counter[str]:
    return fast_path(parse_sass(sass_of(ptx, arch, tools)), "chain")


def measure(form: Form, arch: str, tools: Tools, steps: int = DEFAULT_STEPS) -> Cost:
    """Issue slots and pipes of one execution of `form` on `arch` (see the module docstring).

    The baseline is the same chain with `steps` links, the measured kernel has `2 × steps`:
    what is set up once (constants ptxas keeps in registers, the entry and the exit) is in
    both, so the difference over `steps` is what one more link costs."""
    variants = (False, True) if _BITS[form.destination] == 16 else (False,)
    costs = [_one_more_link(form, arch, tools, steps, widen) for widen in variants]
    return min(costs, key=lambda cost: cost.slots)


def _one_more_link(form: Form, arch: str, tools: Tools, steps: int, widen: bool) -> Cost:
    baseline = kernel_opcodes(ptx_kernel(form, form.destination, arch, steps, widen), arch,
                              tools)  # fmt: skip
    chain = kernel_opcodes(ptx_kernel(form, form.destination, arch, 2 * steps, widen), arch,
                           tools)  # fmt: skip
    sass: dict[str, float] = {}
    for opcode in sorted(set(chain) | set(baseline)):
        difference = (chain[opcode] - baseline[opcode]) / steps
        if difference:
            sass[opcode] = round(difference, 3)
    pipes: dict[str, float] = {}
    for opcode, amount in sass.items():
        pipe = pipe_of(opcode)
        pipes[pipe] = round(pipes.get(pipe, 0.0) + amount, 3)
    pipes = {pipe: amount for pipe, amount in sorted(pipes.items()) if amount}
    return Cost(round(sum(pipes.values()), 3), pipes, sass)


def measure_all(forms: Iterable[Form], arches: Iterable[str], tools: Tools, steps: int,
                jobs: int) -> dict[str, dict[str, Cost]]:  # fmt: skip
    """Every form on every architecture it exists on (ptxas refusing it means it does not)."""
    jobs_list = [(form, arch) for arch in arches for form in forms]

    def one(job: tuple[Form, str]) -> tuple[str, str, Cost | None]:
        form, arch = job
        try:
            return form.spelling, arch, measure(form, arch, tools, steps)
        except MeasureError:
            return form.spelling, arch, None

    table: dict[str, dict[str, Cost]] = {arch: {} for arch in arches}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for spelling, arch, cost in pool.map(one, jobs_list):
            if cost is not None:
                table[arch][spelling] = cost
    return table


def table_json(table: Mapping[str, Mapping[str, Cost]], tools: Tools, steps: int,
               command: str, commit: str) -> dict[str, object]:  # fmt: skip
    return {
        "about": (
            "SASS issue slots and pipe mix of one execution of each PTX arithmetic and "
            "conversion form, on the fast path, per architecture. Measured by "
            "calibration/scripts/sass_costs.py from ptxas and nvdisasm output (see its "
            "docstring); not fitted to any timing."
        ),
        "command": command,
        "commit": commit,
        "ptxas": tools.ptxas_version,
        "nvdisasm": tools.nvdisasm_version,
        "ptx_version": PTX_VERSION,
        "steps": steps,
        "pipes": {pipe: list(opcodes) for pipe, opcodes in PIPES.items()},
        "arches": {
            arch: {spelling: cost.to_json() for spelling, cost in sorted(costs.items())}
            for arch, costs in table.items()
        },
    }


def _commit() -> str:
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=_TIMEOUT_S).stdout.strip()  # fmt: skip
        status = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                                 "calibration/scripts"], capture_output=True, text=True,
                                timeout=_TIMEOUT_S).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{' (script modified)' if status else ''}" if head else "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--arch", action="append", help="default: " + ", ".join(ARCHES))
    parser.add_argument("--form", action="append", help="PTX spelling; default: every form")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    unknown = [name for name in args.form or () if name not in FORMS_BY_SPELLING]
    if unknown:
        parser.error(f"unknown form(s): {', '.join(unknown)}")
    forms = [FORMS_BY_SPELLING[name] for name in args.form] if args.form else list(FORMS)
    try:
        tools = find_tools()
        table = measure_all(forms, args.arch or ARCHES, tools, args.steps, args.jobs)
    except MeasureError as error:
        print(f"sass_costs: error: {error}", file=sys.stderr)
        return 3
    command = "python calibration/scripts/sass_costs.py " + " ".join(argv or sys.argv[1:])
    document = table_json(table, tools, args.steps, command.strip(), _commit())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    counts = ", ".join(f"{arch} {len(costs)}" for arch, costs in table.items())
    print(f"wrote {args.out}: {len(forms)} forms; measured per architecture: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
