"""What one PTX instruction costs in SASS: issue slots and pipe counts per architecture.

ptxas expands some PTX instructions into many machine instructions (`div.rn.f32` into a MUFU
reciprocal, an FCHK, five FFMAs and a branch around a slow path; `div.s64` into a call of about
seventy integer instructions), and folds others away (`cvt.u32.u64`, `cvta.to.global`). The
numbers come from `calibration/data/sass_costs.json`, measured from ptxas and nvdisasm by
`calibration/scripts/sass_costs.py` (its docstring says how); this module only looks them up.

Spellings that cost the same share one entry (`canonical_spelling`): every comparison operator of
`setp` is measured as `lt` (one ISETP/FSETP/DSETP whatever the operator), and the operations
whose machine code does not depend on signedness (`add`, `sub`, `mul.lo`, `selp`…) as one type
per width. A form the table does not hold costs what it did before the table existed: one issue
slot, on the pipe its PTX class names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from flipflop.toolchain.arches import ArchError, compute_capability

TABLE_FILE = "sass_costs.json"

# Pipes the model charges, in the order of `IssueCost.pipes`. The table's other pipes (branch,
# uniform, memory, other) cost issue slots only.
PIPES = ("fp32", "fp64", "fp16", "int", "sfu", "conversion")

# Forms the table does not measure because their machine code is known to be at most one
# instruction (and often none once registers are allocated): they keep the one-slot default.
SINGLE_INSTRUCTION = {
    "mov": "a register copy or an immediate: one MOV at most, usually none after allocation",
    "and.pred": "one PLOP3, or folded into the compare that produces an operand",
    "or.pred": "one PLOP3, or folded into the compare that produces an operand",
    "xor.pred": "one PLOP3, or folded into the compare that produces an operand",
    "not.pred": "folded into the consumer's predicate operand (!P) or one PLOP3",
}  # fmt: skip

_SIGN_FREE = frozenset(("add", "sub", "mul", "mad", "and", "or", "xor", "not", "cnot", "shl",
                        "selp", "popc", "brev", "lop3", "prmt", "bfi", "neg"))  # fmt: skip
_INTEGER = re.compile(r"^[bsu](8|16|32|64)$")
_COMBINE = frozenset(("and", "or", "xor"))


@dataclass(frozen=True)
class IssueCost:
    """Per execution of one PTX instruction: SASS issue slots and lane-instructions per pipe."""

    slots: float
    pipes: tuple[float, ...]  # in the order of `PIPES`


@dataclass(frozen=True)
class SassTable:
    arches: tuple[str, ...]  # sorted by compute capability
    costs: dict[str, dict[str, IssueCost]]  # arch -> canonical spelling -> cost
    header: dict[str, Any]  # the file's provenance fields


class SassTableError(ValueError):
    """The shipped table is missing or malformed (a packaging error, not bad user input)."""


@lru_cache(maxsize=1)
def load_table() -> SassTable:
    """The shipped table, read once per process."""
    try:
        text = resources.files("flipflop.analysis").joinpath(TABLE_FILE).read_text("utf-8")
    except OSError as error:
        raise SassTableError(f"cannot read the SASS cost table {TABLE_FILE}: {error}") from error
    return parse_table(json.loads(text))


def parse_table(document: dict[str, Any]) -> SassTable:
    try:
        costs = {
            arch: {spelling: _cost(entry) for spelling, entry in forms.items()}
            for arch, forms in document["arches"].items()
        }
        arches = tuple(sorted(costs, key=compute_capability))
    except (KeyError, TypeError, ValueError, ArchError) as error:
        raise SassTableError(f"malformed SASS cost table: {error}") from error
    header = {key: value for key, value in document.items() if key != "arches"}
    return SassTable(arches, costs, header)


def _cost(entry: dict[str, Any]) -> IssueCost:
    pipes = entry["pipes"]
    return IssueCost(float(entry["slots"]), tuple(float(pipes.get(p, 0.0)) for p in PIPES))


def table_arch(target: tuple[str, ...] | str, table: SassTable | None = None) -> str:
    """The table's architecture for a PTX `.target`: the same one, else the newest older one
    (sm_87 -> sm_86), else the oldest; "" when the target names no architecture."""
    table = load_table() if table is None else table
    names = (target,) if isinstance(target, str) else target
    for name in names:
        try:
            wanted = compute_capability(name)
        except ArchError:
            continue
        older = [arch for arch in table.arches if compute_capability(arch) <= wanted]
        return older[-1] if older else table.arches[0]
    return ""


def canonical_spelling(spelling: str) -> str:
    """The table's name for an instruction spelling (see the module docstring)."""
    opcode, *modifiers = spelling.split(".")
    if opcode == "setp" and len(modifiers) >= 2:
        kind = _unsigned_bits(modifiers[-1])
        rest = [m for m in modifiers[1:-1] if m not in _COMBINE]
        return ".".join(["setp", "lt", *rest, kind])
    if opcode == "shr" and modifiers and modifiers[-1].startswith("b"):
        return ".".join([opcode, *modifiers[:-1], "u" + modifiers[-1][1:]])
    if opcode in ("mul", "mad") and "lo" not in modifiers:
        return spelling  # .hi and .wide depend on the signedness
    if opcode in _SIGN_FREE and modifiers:
        kind = modifiers[-1]
        matched = _INTEGER.match(kind)
        if opcode == "selp" and kind in ("f32", "f64"):
            return f"selp.b{kind[1:]}"
        if matched:
            bits = matched.group(1)
            signed_name = opcode in ("add", "sub", "mul", "mad", "neg")
            replacement = f"s{bits}" if signed_name else f"b{bits}"
            return ".".join([opcode, *modifiers[:-1], replacement])
    return spelling


def _unsigned_bits(kind: str) -> str:
    return "u" + kind[1:] if kind.startswith("b") and _INTEGER.match(kind) else kind


@lru_cache(maxsize=8192)
def issue_cost(spelling: str, arch: str) -> IssueCost | None:
    """The measured cost of `spelling` on `arch` (a table architecture), or None."""
    if not arch:
        return None
    forms = load_table().costs.get(arch)
    if forms is None:
        return None
    return forms.get(canonical_spelling(spelling))
