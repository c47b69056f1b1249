"""Instruction classes: what one execution of a PTX instruction costs, per thread.

Conventions (so numbers compare with Nsight Compute's `flop_count_*` metrics):
- FLOPs count `add`, `sub`, `mul` as 1 and `fma`/`mad` as 2; packed `f16x2`/`bf16x2` count per
  element (so `fma.rn.f16x2` is 4 FLOPs). `min/max/abs/neg/setp` are instructions, not FLOPs.
- `div` and `sqrt` count 1 FLOP; in fp32 they also count one SFU operation: `div.approx`,
  `div.full` and `sqrt.approx` are an MUFU reciprocal/square root plus a multiply, and the IEEE
  `div.rn`/`sqrt.rn` sequences start from the same MUFU seed. In fp64 they are software
  sequences on the FP64 pipe (1 FLOP counted, no SFU).
- SFU: `ex2 lg2 rsqrt rcp sin cos tanh` (approximate forms; also `rcp.rn.f32`, which seeds from
  MUFU.RCP).
- Tensor FLOPs are 2·M·N·K from the shape modifier, shared out over the 32 threads of a warp
  (`mma`, `wmma`) or the 128 threads of a warpgroup (`wgmma`).

Issue slots and pipes are a separate count from FLOPs: what the instruction costs in machine
code (SASS) on the module's architecture, from the measured table of `flipflop.analysis.sass`
(`div.rn.f32` is 1 FLOP but about ten issue slots on sm_86, six of them on the FP32 pipe and one
on the SFU). `*_PIPE` counts are lane-instructions issued to a pipe. A form the table does not
hold costs one slot, on the pipe of its PTX class (fp32/fp64/fp16 instructions, integer
operations, conversions, SFU operations).
"""

from __future__ import annotations

import re
from functools import lru_cache

from flipflop.analysis import sass

# Index of each count in a class vector.
INSTRUCTIONS = 0
FP32_FLOPS = 1
FP64_FLOPS = 2
FP16_FLOPS = 3
INT_OPS = 4
CONVERSIONS = 5
SFU_OPS = 6
TENSOR_FLOPS = 7
ATOMICS = 8
BARRIERS = 9
SHUFFLES = 10
BRANCHES = 11
DIVERGENT_BRANCHES = 12
ASYNC_COPY_BYTES = 13
FP32_INSTRUCTIONS = 14
FP64_INSTRUCTIONS = 15
FP16_INSTRUCTIONS = 16
TENSOR_INSTRUCTIONS = 17
LOADS = 18
STORES = 19
CALLS = 20
PARAM_ACCESSES = 21  # kernel-argument and call-argument loads/stores (constant bank, not memory)
ISSUE_SLOTS = 22  # SASS instructions issued
FP32_PIPE = 23
FP64_PIPE = 24
FP16_PIPE = 25
INT_PIPE = 26
SFU_PIPE = 27
CONVERSION_PIPE = 28
# One warp's cycles through the block, issue or dependent chain (`flipflop.analysis.chains`):
# per execution of a block, not of an instruction.
CHAIN_CYCLES = 29
VECTOR_LENGTH = 30

NAMES = (
    "instructions", "fp32_flops", "fp64_flops", "fp16_flops", "int_ops", "conversions",
    "sfu_ops", "tensor_flops", "atomics", "barriers", "shuffles", "branches",
    "divergent_branches", "async_copy_bytes", "fp32_instructions", "fp64_instructions",
    "fp16_instructions", "tensor_instructions", "loads", "stores", "calls", "param_accesses",
    "issue_slots", "fp32_pipe", "fp64_pipe", "fp16_pipe", "int_pipe", "sfu_pipe",
    "conversion_pipe", "chain_cycles",
)  # fmt: skip

# The pipe counts in the order of `sass.PIPES`.
PIPE_INDICES = (FP32_PIPE, FP64_PIPE, FP16_PIPE, INT_PIPE, SFU_PIPE, CONVERSION_PIPE)
# Where a form without a table entry issues: its PTX class.
_DEFAULT_PIPE = ((FP32_PIPE, FP32_INSTRUCTIONS), (FP64_PIPE, FP64_INSTRUCTIONS),
                 (FP16_PIPE, FP16_INSTRUCTIONS), (INT_PIPE, INT_OPS), (SFU_PIPE, SFU_OPS),
                 (CONVERSION_PIPE, CONVERSIONS))  # fmt: skip

FLOAT_TYPES = {"f32": "fp32", "f64": "fp64", "f16": "fp16", "bf16": "fp16", "tf32": "fp32",
               "f16x2": "fp16", "bf16x2": "fp16"}  # fmt: skip
INT_TYPES = frozenset((
    "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64", "b128",
    "pred",
))  # fmt: skip
TYPE_BYTES = {
    "b8": 1, "s8": 1, "u8": 1, "pred": 1, "b16": 2, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "e4m3": 1, "e5m2": 1, "b32": 4, "s32": 4, "u32": 4, "f32": 4, "tf32": 4, "f16x2": 4,
    "bf16x2": 4, "b64": 8, "s64": 8, "u64": 8, "f64": 8, "b128": 16,
}  # fmt: skip

_FLOP_WEIGHT = {"add": 1, "sub": 1, "mul": 1, "fma": 2, "mad": 2, "div": 1, "sqrt": 1}
_SFU = frozenset(("ex2", "lg2", "rsqrt", "rcp", "sin", "cos", "tanh"))
_INT_OPS = frozenset((
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min",
    "max", "popc", "clz", "bfind", "fns", "brev", "bfe", "bfi", "shl", "shr", "shf", "and",
    "or", "xor", "not", "cnot", "lop3", "prmt", "setp", "set", "selp", "slct", "dp4a", "dp2a",
    "szext", "bmsk", "addc", "subc", "madc", "cvta", "isspacep",
))  # fmt: skip
_FLOAT_OTHER = frozenset(("min", "max", "abs", "neg", "setp", "set", "testp", "copysign",
                          "selp", "slct", "mov", "cvt"))  # fmt: skip
_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")
_STORE_OPCODES = frozenset(("st", "sust", "stmatrix", "red", "cp"))
_LOAD_OPCODES = frozenset(("ld", "ldu", "tex", "tld4", "suld", "ldmatrix"))


WORK_INDICES = (FP32_INSTRUCTIONS, FP64_INSTRUCTIONS, FP16_INSTRUCTIONS, TENSOR_INSTRUCTIONS,
                SFU_OPS, LOADS, STORES, ATOMICS)  # fmt: skip
"""The counts that make up a kernel's useful work (as opposed to index arithmetic)."""


def data_type(modifiers: tuple[str, ...]) -> str | None:
    """The instruction's (last) data type modifier, e.g. `f32` in `setp.lt.f32`."""
    for modifier in reversed(modifiers):
        if modifier in TYPE_BYTES:
            return modifier
    return None


def mma_shape(modifiers: tuple[str, ...]) -> tuple[int, int, int] | None:
    for modifier in modifiers:
        match = _SHAPE.match(modifier)
        if match:
            return int(match.group(1)), int(match.group(2)), int(match.group(3))
    return None


@lru_cache(maxsize=8192)
def classify(opcode: str, modifiers: tuple[str, ...], arch: str = "") -> tuple[float, ...]:
    """Per-execution counts of one instruction (a vector indexed by the constants above) on
    `arch`, an architecture of the SASS cost table (`sass.table_arch`); "" for no table."""
    counts = _ptx_counts(opcode, modifiers)
    cost = sass.issue_cost(".".join((opcode, *modifiers)), arch) if arch else None
    if cost is None:
        counts[ISSUE_SLOTS] = counts[INSTRUCTIONS]
        for pipe, ptx_class in _DEFAULT_PIPE:
            counts[pipe] = counts[ptx_class]
    else:
        counts[ISSUE_SLOTS] = cost.slots
        for pipe, amount in zip(PIPE_INDICES, cost.pipes, strict=True):
            counts[pipe] = amount
    return tuple(counts)


def classify_spelling(spelling: str, arch: str = "") -> tuple[float, ...]:
    """`classify` of a dotted spelling such as `div.rn.f32`."""
    opcode, *modifiers = spelling.split(".")
    return classify(opcode, tuple(modifiers), arch)


def _ptx_counts(opcode: str, modifiers: tuple[str, ...]) -> list[float]:
    counts = [0.0] * VECTOR_LENGTH
    counts[INSTRUCTIONS] = 1.0
    kind = data_type(modifiers)
    family = FLOAT_TYPES.get(kind or "")
    lanes = 2.0 if kind in ("f16x2", "bf16x2") else 1.0

    if opcode == "mma" or (opcode == "wmma" and modifiers[:1] == ("mma",)):
        _tensor(counts, modifiers, threads=32)
    elif opcode == "wgmma" and modifiers[:1] == ("mma_async",):
        _tensor(counts, modifiers, threads=128)
    elif opcode in ("atom", "red"):
        counts[ATOMICS] = 1.0
        counts[LOADS if opcode == "atom" else STORES] = 1.0
    elif opcode in ("bar", "barrier"):
        counts[BARRIERS] = 1.0
    elif opcode in ("shfl", "vote", "match", "redux", "activemask"):
        counts[SHUFFLES] = 1.0
    elif opcode in ("bra", "brx"):
        counts[BRANCHES] = 1.0
    elif opcode == "call":
        counts[CALLS] = 1.0
    elif opcode in ("ld", "st") and "param" in modifiers:
        counts[PARAM_ACCESSES] = 1.0
    elif opcode in _LOAD_OPCODES or (opcode == "wmma" and modifiers[:1] == ("load",)):
        counts[LOADS] = 1.0
    elif opcode in _STORE_OPCODES or (opcode == "wmma" and modifiers[:1] == ("store",)):
        counts[STORES] = 1.0
    elif opcode == "cvt":
        counts[CONVERSIONS] = 1.0
    elif family is not None:
        _float(counts, opcode, modifiers, family, lanes)
    elif opcode in _INT_OPS and (kind in INT_TYPES or kind is None):
        counts[INT_OPS] = 1.0
    return counts


def _tensor(counts: list[float], modifiers: tuple[str, ...], threads: int) -> None:
    counts[TENSOR_INSTRUCTIONS] = 1.0
    shape = mma_shape(modifiers)
    if shape is not None:
        m, n, k = shape
        counts[TENSOR_FLOPS] = 2.0 * m * n * k / threads


def _float(
    counts: list[float], opcode: str, modifiers: tuple[str, ...], family: str, lanes: float
) -> None:
    flop_index = {"fp32": FP32_FLOPS, "fp64": FP64_FLOPS, "fp16": FP16_FLOPS}[family]
    instr_index = {"fp32": FP32_INSTRUCTIONS, "fp64": FP64_INSTRUCTIONS,
                   "fp16": FP16_INSTRUCTIONS}[family]  # fmt: skip
    approx = "approx" in modifiers
    if opcode in _SFU:
        if family == "fp64" and not approx:
            counts[flop_index] = lanes
            counts[instr_index] = 1.0
        else:
            counts[SFU_OPS] = lanes
        return
    counts[instr_index] = 1.0
    weight = _FLOP_WEIGHT.get(opcode)
    if weight is not None:
        counts[flop_index] = weight * lanes
        if opcode in ("div", "sqrt") and family == "fp32":
            counts[SFU_OPS] = lanes
    elif opcode not in _FLOAT_OTHER:
        counts[instr_index] = 1.0
