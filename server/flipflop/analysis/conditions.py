"""Branch conditions over register values: comparisons and logic over them.

`setp` compares two register values (polynomials, see `flipflop.analysis.poly`); predicate logic
(`and`/`or`/`not`/`mov` on `.pred`, and the combining operand of `setp.and`/`setp.or`) joins
comparisons. `read_condition` turns the predicate a branch reads into such a tree, and
`predicate_taint` says what it depends on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from flipflop.analysis.poly import DATA, LANE, THREAD, Poly
from flipflop.ir import Function, Immediate, Negated, Operand, PredicatePair, Register


class FunctionValues(Protocol):
    """What reading a condition needs of a function's register values: the definition a use
    reads, the value of an operand there, and a register's taint
    (`flipflop.analysis.dataflow.FunctionValues` provides them)."""

    @property
    def function(self) -> Function: ...

    def definition_site(self, name: str, block: int, index: int) -> tuple[int, int] | None: ...

    def operand(self, operand: Operand, block: int, index: int, depth: int = 0) -> Poly: ...

    def taint(self, name: str) -> int: ...

COMPARISONS = {
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "lo": "lt", "ls": "le", "hi": "gt", "hs": "ge",
    "equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge",
}  # fmt: skip
"""PTX comparison modifiers by the comparison they make (unsigned and unordered ones alike)."""
NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}
_PREDICATE_LOGIC = frozenset(("and", "or", "xor", "not", "mov"))


@dataclass(frozen=True)
class Compare:
    left: Poly
    op: str  # eq ne lt le gt ge
    right: Poly
    site: tuple[int, int]  # (block, instruction) of the setp


@dataclass(frozen=True)
class Not:
    inner: Condition


@dataclass(frozen=True)
class Both:
    left: Condition
    right: Condition


@dataclass(frozen=True)
class Either:
    left: Condition
    right: Condition


Condition = Compare | Not | Both | Either


def negate(condition: Condition) -> Condition:
    if isinstance(condition, Not):
        return condition.inner
    if isinstance(condition, Compare):
        return Compare(condition.left, NEGATE[condition.op], condition.right, condition.site)
    if isinstance(condition, Both):
        return Either(negate(condition.left), negate(condition.right))
    return Both(negate(condition.left), negate(condition.right))


def read_condition(
    values: FunctionValues, predicate: str, block: int, index: int, depth: int = 0
) -> Condition | None:
    """The condition a predicate register holds at (block, index), over register values;
    None when it is not a comparison (or logic over comparisons) the analysis follows."""
    site = values.definition_site(predicate, block, index)
    if site is None or depth > 8:
        return None
    b, i = site
    instruction = values.function.blocks[b].instructions[i]
    operands = instruction.operands
    if instruction.opcode == "setp" and len(operands) >= 3:
        op = comparison(instruction.modifiers)
        if op is None:
            return None
        condition: Condition = Compare(
            values.operand(operands[1], b, i), op, values.operand(operands[2], b, i), (b, i)
        )
        if len(operands) >= 4:
            extra = _predicate_operand(values, operands[3], b, i, depth)
            if extra is None:
                return None
            if "and" in instruction.modifiers:
                condition = Both(condition, extra)
            elif "or" in instruction.modifiers:
                condition = Either(condition, extra)
            else:
                return None
        destination = operands[0]
        if isinstance(destination, PredicatePair) and _names(destination.second) == predicate:
            return negate(condition)
        return condition
    if "pred" in instruction.modifiers and instruction.opcode in ("and", "or", "not", "mov"):
        known: list[Condition] = []
        for operand in operands[1:]:
            part = _predicate_operand(values, operand, b, i, depth)
            if part is None:
                return None
            known.append(part)
        if not known:
            return None
        if instruction.opcode == "not":
            return negate(known[0])
        if instruction.opcode == "mov":
            return known[0]
        if len(known) != 2:
            return None
        if instruction.opcode == "and":
            return Both(known[0], known[1])
        return Either(known[0], known[1])
    return None


def predicate_taint(
    values: FunctionValues, predicate: str, block: int, index: int, depth: int = 0
) -> int:
    """`taint` of a predicate read at (block, index), through `setp` and predicate logic
    from the values of the compared registers: a branch's condition needs those values
    anyway, so this seldom costs a search of its own. Where the definition is not one of
    those (or not known), the flow-insensitive `taint`."""
    site = values.definition_site(predicate, block, index)
    if site is None or depth > 8:
        return values.taint(predicate)
    b, i = site
    instruction = values.function.blocks[b].instructions[i]
    opcode, modifiers, operands = instruction[0], instruction[1], instruction[2]
    if opcode == "setp" and len(operands) >= 3:
        left, right = values.operand(operands[1], b, i), values.operand(operands[2], b, i)
        taint = left.taint() | right.taint()
        sources = operands[3:]  # the predicate combined with the comparison, if any
    elif opcode in _PREDICATE_LOGIC and "pred" in modifiers:
        taint = 0
        sources = operands[1:]
    else:
        return values.taint(predicate)
    for operand in sources:
        if type(operand) is Negated:
            operand = operand.operand
        if type(operand) is Register:
            taint |= predicate_taint(values, operand.name, b, i, depth + 1)
        elif type(operand) is not Immediate:
            taint |= DATA | THREAD | LANE
    return taint


def _predicate_operand(
    values: FunctionValues, operand: Operand, block: int, index: int, depth: int
) -> Condition | None:
    if isinstance(operand, Negated):
        inner = _predicate_operand(values, operand.operand, block, index, depth)
        return None if inner is None else negate(inner)
    if isinstance(operand, Register):
        return read_condition(values, operand.name, block, index, depth + 1)
    return None


def comparison(modifiers: tuple[str, ...]) -> str | None:
    for modifier in modifiers:
        op = COMPARISONS.get(modifier)
        if op is not None:
            return op
    return None


def _names(operand: Operand) -> str | None:
    return operand.name if isinstance(operand, Register) else None
