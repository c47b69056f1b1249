"""Joins the grammar's statements and the fast path's statements into the IR, in PTX line order.

Functions come from the grammar (with their body's line span); the fast path's instructions and
labels fall into the function whose span holds their line. Basic blocks start at a label and
after a branch, return or exit.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar, cast

from flipflop.ir import (
    Address,
    BasicBlock,
    Function,
    Instruction,
    Module,
    Negated,
    Operand,
    PredicatePair,
    Register,
    RegisterDeclaration,
    SourceLoc,
    Symbol,
    UnknownStatement,
    Variable,
    Vector,
)
from flipflop.ptx.errors import PtxSyntaxError
from flipflop.ptx.isa import BLOCK_ENDING_OPCODES
from flipflop.ptx.scanner import Scan
from flipflop.ptx.scopes import ScopeSpan, declares
from flipflop.ptx.statements import (
    BodyItem,
    FunctionParts,
    LabelMark,
    LocMark,
    ModuleParts,
    PragmaMark,
    RegisterMark,
    ScopeParts,
)


@dataclass(frozen=True)
class _Body:
    """A function body's statements from the grammar, flattened out of nested scopes."""

    flow: tuple[Instruction | LabelMark | LocMark, ...]
    unknown: tuple[UnknownStatement, ...]
    registers: tuple[RegisterMark, ...]
    locals: tuple[Variable, ...]
    pragmas: tuple[str, ...]
    scopes: tuple[ScopeSpan, ...]  # scopes with bare register names or labels


def build_module(parts: ModuleParts, scan: Scan, text: str) -> Module:
    """The IR of one module; raises PtxSyntaxError for fast-path statements outside functions."""
    events, event_lines = scan.events, scan.event_lines
    bodies = [
        (function, _flatten(function.body.items, function.body.open_line, function.body.close_line))
        if function.body is not None
        else (function, None)
        for function in parts.functions
    ]
    any_grammar_loc = any(
        isinstance(item, LocMark) for _, body in bodies if body is not None for item in body.flow
    )
    functions: list[Function] = []
    unknown: list[UnknownStatement] = list(scan.unknown)
    covered_events = 0
    covered_locs = 0
    carried: SourceLoc | None = None
    register_lines = [mark.ptx_line for mark in scan.registers]
    scanned_scopes = sorted(scan.scopes)
    scope_lines = [scope.first_line for scope in scanned_scopes]
    for function, body in bodies:
        if function.body is None or body is None:
            functions.append(_function(function, (), None, ()))
            continue
        first_line, last_line = function.body.open_line, function.body.close_line
        low, high = bisect_left(event_lines, first_line), bisect_right(event_lines, last_line)
        loc_low = bisect_left(scan.loc_lines, first_line)
        loc_high = bisect_right(scan.loc_lines, last_line)
        covered_events += high - low
        covered_locs += loc_high - loc_low
        unknown.extend(body.unknown)
        fast_locs = (scan.loc_lines[loc_low:loc_high], scan.loc_values[loc_low:loc_high])
        fast_events, fast_lines = events[low:high], event_lines[low:high]
        flow = body.flow
        scopes = list(body.scopes)
        scopes += scanned_scopes[
            bisect_left(scope_lines, first_line) : bisect_right(scope_lines, last_line)
        ]
        if scopes:
            repeated = _repeated_labels(scopes, fast_events, flow)
            fast_events = _ScopeResolver(scopes, repeated).resolve(fast_events, fast_lines)
            flow_lines = [item.ptx_line for item in flow]
            flow = tuple(_ScopeResolver(scopes, repeated).resolve(flow, flow_lines))
        if any_grammar_loc:
            items, carried = _merge_by_line(
                fast_events, fast_lines, fast_locs, flow, parts.files, carried
            )
        else:
            items = _insert_grammar_statements(fast_events, fast_lines, fast_locs, flow, carried)
            if loc_high > loc_low:
                carried = scan.loc_values[loc_high - 1]
        scanned_registers = scan.registers[
            bisect_left(register_lines, first_line) : bisect_right(register_lines, last_line)
        ]
        registers = _in_line_order(body.registers, scanned_registers)
        functions.append(_function(function, _split_blocks(items), body, registers))

    if covered_events != len(events) or covered_locs != len(scan.loc_lines):
        raise _outside_functions(parts, scan, text)
    unknown.sort(key=lambda statement: (statement.ptx_line, statement.column))
    return Module(
        version=parts.version,
        target=parts.target,
        address_size=parts.address_size,
        files=dict(parts.files),
        globals=parts.globals,
        functions=tuple(functions),
        unknown_statements=tuple(unknown),
    )


def _flatten(items: tuple[BodyItem, ...], first_line: int, last_line: int) -> _Body:
    flow: list[Instruction | LabelMark | LocMark] = []
    unknown: list[UnknownStatement] = []
    registers: list[RegisterMark] = []
    locals_: list[Variable] = []
    pragmas: list[str] = []
    bare: list[ScopeSpan] = []

    # Scopes nest as deep as the text does: walk them with a stack of iterators, not recursion.
    stack: list[tuple[Iterator[BodyItem], int, int, list[RegisterMark], set[str]]] = [
        (iter(items), first_line, last_line, [], set())
    ]
    while stack:
        scope_items, scope_first, scope_last, scope_marks, scope_labels = stack[-1]
        for item in scope_items:
            if isinstance(item, (Instruction, LabelMark, LocMark)):
                flow.append(item)
                if isinstance(item, LabelMark) and len(stack) > 1:
                    scope_labels.add(item.name)
            elif isinstance(item, UnknownStatement):
                unknown.append(item)
            elif isinstance(item, RegisterMark):
                registers.append(item)
                if item.bare_names or item.bare_ranges:
                    scope_marks.append(item)
            elif isinstance(item, Variable):
                if item.space != "param":  # .param inside a body passes call arguments
                    locals_.append(item)
            elif isinstance(item, PragmaMark):
                pragmas.append(item.text)
            elif isinstance(item, ScopeParts):
                stack.append((iter(item.items), item.open_line, item.close_line, [], set()))
                break
        else:
            stack.pop()
            if scope_marks or scope_labels:
                names = frozenset(name for mark in scope_marks for name in mark.bare_names)
                ranges = tuple(pair for mark in scope_marks for pair in mark.bare_ranges)
                bare.append(
                    ScopeSpan(scope_first, scope_last, names, ranges, frozenset(scope_labels))
                )
    return _Body(
        tuple(flow), tuple(unknown), tuple(registers), tuple(locals_), tuple(pragmas), tuple(bare)
    )


def _in_line_order(
    grammar_marks: tuple[RegisterMark, ...], scanned_marks: list[RegisterMark]
) -> tuple[RegisterDeclaration, ...]:
    """Register declarations of both paths in the order of their lines."""
    if not scanned_marks:
        marks: list[RegisterMark] | tuple[RegisterMark, ...] = grammar_marks
    elif not grammar_marks:
        marks = scanned_marks
    else:
        marks = sorted([*grammar_marks, *scanned_marks], key=lambda mark: mark.ptx_line)
    return tuple(declaration for mark in marks for declaration in mark.declarations)


def _insert_grammar_statements(
    events: list[Instruction | str],
    event_lines: list[int],
    fast_locs: tuple[list[int], list[SourceLoc]],
    flow: tuple[Instruction | LabelMark | LocMark, ...],
    carried: SourceLoc | None,
) -> list[Instruction | str]:
    """Put the grammar's instructions and labels (few) between the fast path's (many), by line.

    Only used when every `.loc` came through the fast path, so each grammar instruction takes
    the latest fast-path `.loc` above it.
    """
    if not flow:
        return events
    loc_lines, loc_values = fast_locs
    items: list[Instruction | str] = []
    position = 0
    for statement in flow:
        cut = bisect_left(event_lines, statement.ptx_line, position)
        items.extend(events[position:cut])
        position = cut
        if isinstance(statement, LabelMark):
            items.append(statement.name)
        elif isinstance(statement, Instruction):
            above = bisect_left(loc_lines, statement.ptx_line)
            loc = loc_values[above - 1] if above else carried
            items.append(statement._replace(loc=loc))
    items.extend(events[position:])
    return items


def _merge_by_line(
    events: list[Instruction | str],
    event_lines: list[int],
    fast_locs: tuple[list[int], list[SourceLoc]],
    flow: tuple[Instruction | LabelMark | LocMark, ...],
    files: dict[int, str],
    carried: SourceLoc | None,
) -> tuple[list[Instruction | str], SourceLoc | None]:
    """Interleave both paths' statements by line and give each instruction its latest `.loc`."""
    ordered: list[tuple[int, Instruction | str | SourceLoc]] = list(
        zip(event_lines, events, strict=True)
    )
    ordered.extend(zip(*fast_locs, strict=True))
    for statement in flow:
        if isinstance(statement, LabelMark):
            ordered.append((statement.ptx_line, statement.name))
        elif isinstance(statement, LocMark):
            loc = SourceLoc(files.get(statement.file_index, ""), statement.line, statement.column)
            ordered.append((statement.ptx_line, loc))
        else:
            ordered.append((statement.ptx_line, statement))
    ordered.sort(key=lambda entry: entry[0])  # stable: one line's statements keep their order
    current = carried
    items: list[Instruction | str] = []
    for _, item in ordered:
        if isinstance(item, SourceLoc):
            current = item
        elif isinstance(item, Instruction):
            items.append(item if item.loc == current else item._replace(loc=current))
        else:
            items.append(item)
    return items, current


def _split_blocks(items: list[Instruction | str]) -> tuple[BasicBlock, ...]:
    blocks: list[BasicBlock] = []
    label: str | None = None
    current: list[Instruction] = []
    for item in items:
        if type(item) is str:
            if current or label is not None:
                blocks.append(BasicBlock(label, tuple(current)))
            label, current = item, []
        else:
            current.append(item)  # type: ignore[arg-type]
            if item[0] in BLOCK_ENDING_OPCODES:
                blocks.append(BasicBlock(label, tuple(current)))
                label, current = None, []
    if current or label is not None:
        blocks.append(BasicBlock(label, tuple(current)))
    return tuple(blocks)


def _repeated_labels(
    scopes: list[ScopeSpan],
    events: list[Instruction | str],
    flow: tuple[Instruction | LabelMark | LocMark, ...],
) -> frozenset[str]:
    """Labels of inner scopes whose name the function declares more than once.

    Inline asm inlined twice declares its labels twice (CUTLASS's `LAB_WAIT:` in every
    barrier wait); each copy is local to its scope, so those get names of their own.
    """
    scoped = {label for scope in scopes for label in scope.labels}
    if not scoped:
        return frozenset()
    counts = Counter(item for item in events if type(item) is str and item in scoped)
    counts.update(item.name for item in flow if isinstance(item, LabelMark) and item.name in scoped)
    return frozenset(name for name, count in counts.items() if count > 1)


_Statement = Instruction | str | LabelMark | LocMark
_S = TypeVar("_S", bound=_Statement)  # each statement comes back as the kind it was


class _ScopeResolver:
    """Resolves names against the scopes around each statement, in one sweep in line order.

    Scopes nest, so the ones around a statement are a stack that grows at a scope's first line
    and shrinks after its last. Inside its scope, a bare name that a `.reg` declared is a
    register, and a repeated label gets its scope's own name (`LAB_WAIT@120`).
    """

    def __init__(self, scopes: list[ScopeSpan], repeated: frozenset[str]) -> None:
        self._scopes = sorted(scopes, key=lambda scope: (scope.first_line, -scope.last_line))
        self._repeated = repeated
        self._around: list[ScopeSpan] = []
        self._upcoming = 0

    def resolve(self, items: Sequence[_S], lines: Sequence[int]) -> list[_S]:
        """`items` (in line order, at `lines`) with their names resolved."""
        resolved: list[_S] = []
        scopes, around = self._scopes, self._around
        for item, line in zip(items, lines, strict=True):
            while self._upcoming < len(scopes) and scopes[self._upcoming].first_line <= line:
                scope = scopes[self._upcoming]
                while around and around[-1].last_line < scope.first_line:
                    around.pop()
                around.append(scope)
                self._upcoming += 1
            while around and around[-1].last_line < line:
                around.pop()
            if around:
                item = cast(_S, self._resolved(item))
            resolved.append(item)
        return resolved

    def _resolved(self, item: _Statement) -> _Statement:
        if isinstance(item, Instruction):
            operands = item.operands
            resolved = tuple(_as_register(op, self._register, self._label) for op in operands)
            # compared by identity: a Register and a Symbol of the same name are equal tuples
            if all(new is old for new, old in zip(resolved, operands, strict=True)):
                return item
            return item._replace(operands=resolved)
        if isinstance(item, str):
            return self._label(item) or item
        if isinstance(item, LabelMark):
            renamed = self._label(item.name)
            return item if renamed is None else item._replace(name=renamed)
        return item

    def _register(self, name: str) -> bool:
        return any(declares(scope, name) for scope in self._around)

    def _label(self, name: str) -> str | None:
        """The scope's own name for a repeated label declared in a scope around, else None."""
        if name not in self._repeated:
            return None
        for scope in reversed(self._around):
            if name in scope.labels:
                return f"{name}@{scope.first_line}"
        return None


def _as_register(
    operand: Operand,
    declared: Callable[[str], bool],
    label: Callable[[str], str | None],
) -> Operand:
    """The operand with declared bare names as registers and repeated labels renamed; the same
    object when nothing changes."""
    if isinstance(operand, Symbol):
        if declared(operand.name):
            return Register(operand.name)
        renamed = label(operand.name)
        return operand if renamed is None else Symbol(renamed)
    if isinstance(operand, Address) and isinstance(operand.base, Symbol):
        base = operand.base
        return Address(Register(base.name), operand.offset) if declared(base.name) else operand
    if isinstance(operand, Vector):
        elements = tuple(_as_register(e, declared, label) for e in operand.elements)
        if all(new is old for new, old in zip(elements, operand.elements, strict=True)):
            return operand
        return Vector(elements)
    if isinstance(operand, Negated):
        inner = _as_register(operand.operand, declared, label)
        return operand if inner is operand.operand else Negated(inner)
    if isinstance(operand, PredicatePair):
        first = _as_register(operand.first, declared, label)
        second = _as_register(operand.second, declared, label)
        if first is operand.first and second is operand.second:
            return operand
        return PredicatePair(first, second)
    return operand


def _function(
    parts: FunctionParts,
    blocks: tuple[BasicBlock, ...],
    body: _Body | None,
    registers: tuple[RegisterDeclaration, ...],
) -> Function:
    directives = parts.directives
    if body is not None and body.pragmas:
        directives = replace(directives, pragmas=directives.pragmas + body.pragmas)
    return Function(
        name=parts.name,
        kind=parts.kind,
        params=parts.params,
        returns=parts.returns,
        linkage=parts.linkage,
        directives=directives,
        registers=registers,
        locals=body.locals if body is not None else (),
        blocks=blocks,
        ptx_line=parts.ptx_line,
        has_body=parts.body is not None,
    )


def _outside_functions(parts: ModuleParts, scan: Scan, text: str) -> PtxSyntaxError:
    spans = sorted(
        (f.body.open_line, f.body.close_line) for f in parts.functions if f.body is not None
    )
    starts = [first for first, _ in spans]

    def inside(line: int) -> bool:
        index = bisect_right(starts, line) - 1
        return index >= 0 and line <= spans[index][1]

    candidates = [
        (line, "label" if isinstance(event, str) else "instruction")
        for line, event in zip(scan.event_lines, scan.events, strict=True)
        if not inside(line)
    ][:1]
    candidates += [(line, "'.loc' directive") for line in scan.loc_lines if not inside(line)][:1]
    line, what = min(candidates)
    source_line = text.split("\n")[line - 1]
    column = len(source_line) - len(source_line.lstrip()) + 1
    return PtxSyntaxError(f"{what} outside a function body", line, column, source_line)
