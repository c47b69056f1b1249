"""How a launch's grid relates to its block: fixed, or "enough blocks to cover N threads".

Recognised ceil-division forms, per grid axis, where B is the block's extent on the same axis
(written the same way, or folding to the same number):
`(N + B - 1) / B`, `(N + 255) / 256`, `(N - 1) / B + 1`, `(N + B - 1) >> log2(B)`,
`ceil_div(N, B)` and its relatives (`cdiv`, `div_up`, `DIV_UP`, `iDivUp`, ...), and the floor
form `N / B`. A grid variable resolves through its declaration first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from flipflop.launch import AxisKind, ProblemSize
from flipflop.source.folding import (
    ARGUMENT_LISTS,
    FileSymbols,
    Folder,
    is_ceil_div_name,
)
from flipflop.source.model import FoldedDim3, GridAxis, LaunchSite
from flipflop.source.syntax import compact, expression_children, strip_parentheses, text_of

_AXES = ("x", "y", "z")


@dataclass(frozen=True)
class Term:
    sign: int
    node: Node


@dataclass(frozen=True)
class Coverage:
    """A recognised ceil/floor division of one grid axis, with the nodes an edit rewrites."""

    form: Literal["ceil_call", "add_minus_one", "add_constant", "minus_one_plus_one",
                  "shift", "floor"]
    expression: Node
    numerator: tuple[Term, ...]
    divisor: Node
    # Literal D - 1 written as one number (`(n + 255) / 256`); None in the other forms.
    constant: Node | None = None
    # The `B` of `+ B - 1` (it must follow the divisor).
    divisor_copy: Node | None = None

    @property
    def rounding(self) -> Literal["ceil", "floor"]:
        return "floor" if self.form == "floor" else "ceil"


def additive_terms(node: Node, sign: int = 1) -> list[Term]:
    """Flatten `a + b - (c - d)` into signed terms."""
    node = strip_parentheses(node)
    if node.type == "binary_expression":
        operator = text_of(node.child_by_field_name("operator") or node)
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if operator in ("+", "-") and left is not None and right is not None:
            return additive_terms(left, sign) + additive_terms(right,
                                                               sign if operator == "+" else -sign)
    return [Term(sign, node)]


def numerator_text(terms: tuple[Term, ...]) -> str:
    pieces: list[str] = []
    for index, term in enumerate(terms):
        text = text_of(term.node)
        if term.node.type == "binary_expression":
            text = f"({text})"
        if index == 0:
            pieces.append(text if term.sign > 0 else f"-{text}")
        else:
            pieces.append(f"{'+' if term.sign > 0 else '-'} {text}")
    return " ".join(pieces)


def _is_literal(node: Node, value: int, folder: Folder) -> bool:
    return node.type == "number_literal" and folder.scalar(node).value == value


def match_coverage(axis: Node, folder: Folder) -> Coverage | None:
    """Recognise a ceil/floor division in one grid-axis expression (before checking the block)."""
    node = _through_variable(strip_parentheses(axis), folder)
    if node.type == "call_expression":
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if function is not None and arguments is not None and is_ceil_div_name(text_of(function)):
            items = expression_children(arguments)
            if len(items) == 2:
                return Coverage("ceil_call", node, (Term(1, items[0]),), items[1])
        return None
    if node.type != "binary_expression":
        return None
    operator = text_of(node.child_by_field_name("operator") or node)
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None or right is None:
        return None
    if operator == "+" and _is_literal(strip_parentheses(right), 1, folder):
        inner = strip_parentheses(left)
        if inner.type == "binary_expression" and text_of(
                inner.child_by_field_name("operator") or inner) == "/":
            divisor = inner.child_by_field_name("right")
            terms = additive_terms(inner.child_by_field_name("left") or inner)
            minus_one = [t for t in terms if t.sign < 0 and _is_literal(t.node, 1, folder)]
            if divisor is not None and minus_one:
                rest = tuple(t for t in terms if t is not minus_one[0])
                return Coverage("minus_one_plus_one", node, rest, divisor)
        return None
    if operator not in ("/", ">>"):
        return None
    divisor = right
    divisor_value = folder.scalar(right).value
    if operator == ">>":
        if divisor_value is None or not 0 <= divisor_value < 31:
            return None
        divisor_value = 1 << divisor_value
    terms = additive_terms(left)
    divisor_text = compact(text_of(strip_parentheses(divisor)))
    copies = [t for t in terms if t.sign > 0 and (
        (operator == "/" and compact(text_of(t.node)) == divisor_text)
        or (divisor_value is not None and folder.scalar(t.node).value == divisor_value))]
    ones = [t for t in terms if t.sign < 0 and _is_literal(t.node, 1, folder)]
    if copies and ones and len(terms) > 2:
        rest = tuple(t for t in terms if t is not copies[0] and t is not ones[0])
        return Coverage("shift" if operator == ">>" else "add_minus_one", node, rest, divisor,
                        divisor_copy=copies[0].node)
    if divisor_value is not None:
        constants = [t for t in terms if t.sign > 0 and t.node.type == "number_literal"
                     and folder.scalar(t.node).value == divisor_value - 1]
        if constants and len(terms) > 1:
            rest = tuple(t for t in terms if t is not constants[0])
            form: Literal["shift", "add_constant"] = "shift" if operator == ">>" else "add_constant"
            return Coverage(form, node, rest, divisor, constant=constants[0].node)
    if operator == ">>":
        return Coverage("shift", node, tuple(terms), divisor) if len(terms) == 1 else None
    return Coverage("floor", node, tuple(terms), divisor)


def _through_variable(node: Node, folder: Folder) -> Node:
    """A scalar grid variable (`int blocks = (n + 255) / 256;`) stands for its initializer."""
    for _ in range(8):
        if node.type != "identifier":
            return node
        binding = folder.resolve(node)
        if binding is None or binding.is_dim3 or binding.value is None:
            return node
        if not folder.is_stable(binding) or binding.value.type in ARGUMENT_LISTS:
            return node
        node = strip_parentheses(binding.value)
    return node


def block_spellings(block: Node, axis: int, folder: Folder) -> set[str]:
    """Ways the block's extent on `axis` can be written in a grid expression."""
    spellings = {f"{compact(text_of(block))}.{_AXES[axis]}"}
    components = folder.dim3_components(block)
    if components is None:
        if axis == 0:
            spellings.add(compact(text_of(strip_parentheses(block))))
    else:
        component = components[axis]
        if component is not None:
            spellings.add(compact(text_of(strip_parentheses(component))))
    return spellings


def divisor_value(coverage: Coverage, folder: Folder) -> int | None:
    """The number of threads one block covers in this division (2**k for `>> k`)."""
    value = folder.scalar(coverage.divisor).value
    if coverage.form == "shift" and value is not None:
        return 1 << value if 0 <= value < 31 else None
    return value


def divisor_matches_block(coverage: Coverage, block: Node, axis: int, block_folded: FoldedDim3,
                          folder: Folder) -> bool:
    divisor = coverage.divisor
    if coverage.form != "shift" and compact(text_of(strip_parentheses(divisor))) in \
            block_spellings(block, axis, folder):
        return True
    extent = (block_folded.x, block_folded.y, block_folded.z)[axis]
    return extent is not None and divisor_value(coverage, folder) == extent


def substituted_text(node: Node, folder: Folder) -> str:
    """Expression text with every name that folds replaced by its value."""
    data = node.text or b""
    pieces: list[bytes] = []
    cursor = node.start_byte
    stack = [node]
    replacements: list[tuple[int, int, str]] = []
    while stack:
        current = stack.pop()
        if current.type in ("identifier", "qualified_identifier", "field_expression"):
            folded = folder.scalar(current)
            if folded.value is not None:
                replacements.append((current.start_byte, current.end_byte, str(folded.value)))
                continue
        stack.extend(current.named_children)
    for start, end, value in sorted(replacements):
        pieces.append(data[cursor - node.start_byte:start - node.start_byte])
        pieces.append(value.encode())
        cursor = end
    pieces.append(data[cursor - node.start_byte:])
    return b"".join(pieces).decode("utf-8", errors="replace")


def grid_axis_nodes(grid: Node, folder: Folder) -> list[Node | None]:
    components = folder.dim3_components(grid)
    return components if components is not None else [grid, None, None]


def describe_grid(grid: Node, block: Node, block_folded: FoldedDim3,
                  folder: Folder) -> tuple[GridAxis, GridAxis, GridAxis]:
    axes: list[GridAxis] = []
    for axis, node in enumerate(grid_axis_nodes(grid, folder)):
        axes.append(_describe_axis(node, axis, block, block_folded, folder))
    return (axes[0], axes[1], axes[2])


def _describe_axis(node: Node | None, axis: int, block: Node, block_folded: FoldedDim3,
                   folder: Folder) -> GridAxis:
    if node is None:
        return GridAxis("fixed", 1, "1")
    folded = folder.scalar(node)
    expression = substituted_text(_through_variable(strip_parentheses(node), folder), folder)
    coverage = match_coverage(node, folder)
    if coverage is not None and divisor_matches_block(coverage, block, axis,
                                                      block_folded, folder):
        threads_text = " ".join(
            substituted_text(t.node, folder) if i == 0 and t.sign > 0 else
            f"{'+' if t.sign > 0 else '-'} {substituted_text(t.node, folder)}"
            for i, t in enumerate(coverage.numerator)
        )
        threads = _fold_terms(coverage.numerator, folder)
        return GridAxis("covers", folded.value, expression, threads, threads_text,
                        coverage.rounding, folded.unresolved)
    if _mentions_block(node, block, folder):
        return GridAxis("unknown", folded.value, expression, unresolved=folded.unresolved)
    tied = not _names_behind(node, folder).isdisjoint(_block_names_behind(block, folder))
    return GridAxis("fixed", folded.value, expression, unresolved=folded.unresolved,
                    tied_to_block=tied)


def _mentions_block(axis: Node, block: Node, folder: Folder) -> bool:
    """Whether the axis is written in terms of the block: its variable, or a name that does not
    fold and that the block's extents use too (`(rows + by - 1) / by` with `dim3(32, by)`)."""
    block_names = {compact(text_of(block))} if block.type == "identifier" else set()
    components = folder.dim3_components(block)
    for part in components if components is not None else [block]:
        if part is not None:
            block_names |= {text_of(n) for n in _identifiers(part)
                            if folder.scalar(n).value is None}
    return any(compact(text_of(n)) in block_names for n in _identifiers(axis)
               if folder.scalar(n).value is None)


def _block_names_behind(block: Node, folder: Folder) -> set[str]:
    components = folder.dim3_components(block)
    names: set[str] = set()
    for part in components if components is not None else [block]:
        if part is not None:
            names |= _names_behind(part, folder)
    return names


def _names_behind(node: Node, folder: Folder, depth: int = 0) -> set[str]:
    """The names an expression uses, and those its constants and variables are made of."""
    names: set[str] = set()
    # `dim3 block(THREADS);` parses as a declaration whose "parameter" is the type THREADS.
    for identifier in _identifiers(node, ("identifier", "type_identifier")):
        names.add(text_of(identifier))
        binding = folder.resolve(identifier)
        if depth < 4 and binding is not None and binding.value is not None \
                and binding.kind in ("constant", "variable", "macro"):
            names |= _names_behind(binding.value, folder, depth + 1)
    return names


def _identifiers(node: Node, kinds: tuple[str, ...] = ("identifier",)) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in kinds:
            found.append(current)
        stack.extend(current.named_children)
    return found


def _fold_terms(terms: tuple[Term, ...], folder: Folder) -> int | None:
    total = 0
    for term in terms:
        value = folder.scalar(term.node).value
        if value is None:
            return None
        total += term.sign * value
    return total


def fold_text(text: str, values: Mapping[str, int]) -> int | None:
    """Fold expression text where the only unknown names are given in `values`."""
    folder = Folder(FileSymbols({}, {name: str(v) for name, v in values.items()}, frozenset()))
    return folder.fold_text(text).value


def problem_size(site: LaunchSite, values: Mapping[str, int] | None = None) -> ProblemSize | None:
    """The launch's problem size for the model: a fixed grid, or threads to cover per axis.

    An annotation wins; `values` supplies names the source leaves open (kernel arguments such as
    `n`). None when the size stays unknown or mixes a covered axis with a fixed axis above 1.
    """
    values = values or {}
    annotation = site.annotation
    if annotation is not None and annotation.threads is not None:
        return ProblemSize(threads=annotation.threads)
    if annotation is not None and annotation.grid is not None:
        return ProblemSize(grid=annotation.grid)
    kinds = {axis.kind for axis in site.grid_axes}
    if "unknown" in kinds:
        return None
    if "covers" not in kinds:
        grid = tuple(axis.value for axis in site.grid_axes)
        if any(v is None for v in grid):
            resolved = [fold_text_axis(a, values) for a in site.grid_axes]
            if any(v is None for v in resolved):
                return None
            grid = tuple(resolved)
        return ProblemSize(grid=(int(grid[0] or 0), int(grid[1] or 0), int(grid[2] or 0)))
    threads: list[int] = []
    fixed: dict[int, int] = {}
    for index, axis in enumerate(site.grid_axes):
        if axis.kind == "fixed":
            count = fold_text_axis(axis, values)
            if count is None:
                return None
            if count != 1:
                fixed[index] = count
            threads.append(1)
            continue
        count = axis.threads if axis.threads is not None else fold_text(axis.threads_expression,
                                                                        values)
        if count is None:
            return None
        threads.append(count)
    if fixed:
        axes: list[tuple[AxisKind, int]] = [
            ("fixed", fixed[i]) if i in fixed else ("covers", threads[i]) for i in range(3)
        ]
        return ProblemSize(axes=(axes[0], axes[1], axes[2]))
    return ProblemSize(threads=(threads[0], threads[1], threads[2]))


def fold_text_axis(axis: GridAxis, values: Mapping[str, int]) -> int | None:
    if axis.value is not None:
        return axis.value
    return fold_text(axis.expression, values) if axis.expression else None
