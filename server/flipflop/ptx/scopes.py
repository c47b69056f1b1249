"""The braces open at each line of a PTX file, for the line scanner: who opened them, what they are,
and which registers inline asm declares in them without a '%'.

Inside a function body a `{` at the start of a statement opens a scope (inline asm, call
sequences); any other brace is part of a statement (a vector operand, an initializer). The
scanner reads most scopes itself, but the grammar must still see balanced braces: a scope the
scanner opened and a grammar line closes is handed over to the grammar after all, its opening
brace put back into the grammar's text at its own line and column.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Who opened a brace.
SCANNED = 0  # a scope read by the line scanner
GRAMMAR = 1  # a function body or scope on a line left to the grammar
PART_OF_STATEMENT = 2  # a vector operand or an initializer on a grammar line

# Code characters after which a statement is complete, so a `{` opens a scope.
_STATEMENT_END = frozenset(";{}:")
_BRACE_OR_CODE = re.compile(r"[{}]|[^{}\s]+")


class ScopeSpan(NamedTuple):
    """Lines `first_line`..`last_line` of a scope inside a function body, the bare register
    names and the labels declared in it."""

    first_line: int
    last_line: int
    names: frozenset[str]  # `.reg .pred p;` declares p
    ranges: tuple[tuple[str, int], ...]  # `.reg .b32 t<4>;` declares t0 .. t3
    labels: frozenset[str] = frozenset()  # `WAIT: ... bra WAIT;` inside inline asm


class _Open:
    """One open brace; a scope collects the bare names declared in it."""

    __slots__ = ("column", "kind", "labels", "line", "names", "ranges")

    def __init__(self, kind: int, line: int, column: int) -> None:
        self.kind = kind
        self.line = line
        self.column = column
        self.names: set[str] | None = None
        self.ranges: list[tuple[str, int]] | None = None
        self.labels: set[str] | None = None


class ScopeStack:
    """The open braces, innermost last, and the scopes already closed."""

    __slots__ = ("handed_over", "in_body", "in_statement_part", "last_char", "open", "spans")

    def __init__(self) -> None:
        self.open: list[_Open] = []
        self.spans: list[ScopeSpan] = []
        # line -> columns of scanned opening braces the grammar has to see after all
        self.handed_over: dict[int, list[int]] = {}
        self.last_char = ";"  # the last code character of the grammar's lines
        self.in_statement_part = False  # innermost brace is a vector or initializer
        self.in_body = False  # inside a function body or scope, not inside a statement

    @property
    def depth(self) -> int:
        return len(self.open)

    def kind_below(self, popped: int) -> int | None:
        """Kind of the brace `popped` levels under the innermost; None when there is none."""
        index = len(self.open) - 1 - popped
        return self.open[index].kind if index >= 0 else None

    # ----------------------------------------------------------------- lines the grammar reads

    def follow_grammar(self, code: str, line: int, statement_done: bool) -> None:
        """Track the braces of a grammar line (`code`: without strings and comments).

        `statement_done`: the lines before it ended a statement, so a leading `{` opens a scope.
        """
        if statement_done:
            self.last_char = ";"
        for token in _BRACE_OR_CODE.findall(code):
            if token == "{":
                kind = self._kind_of_new_brace()
                self.open.append(_Open(kind, line, 0))
                self._innermost_changed()
            elif token == "}" and self.open:
                closed = self.open.pop()
                if closed.kind == SCANNED:
                    self.handed_over.setdefault(closed.line, []).append(closed.column)
                self._closed(closed, line)
                self._innermost_changed()
            self.last_char = token[-1]

    def _kind_of_new_brace(self) -> int:
        if self.in_statement_part:
            return PART_OF_STATEMENT
        if not self.open:  # module level: a function body, unless it follows '=' or ','
            return PART_OF_STATEMENT if self.last_char in "=," else GRAMMAR
        return GRAMMAR if self.last_char in _STATEMENT_END else PART_OF_STATEMENT

    # ----------------------------------------------------------------- lines the scanner reads

    def open_scanned(self, line: int, column: int) -> None:
        self.open.append(_Open(SCANNED, line, column))
        self.in_statement_part = False
        self.in_body = True

    def close_scanned(self, line: int) -> None:
        self._closed(self.open.pop(), line)
        self._innermost_changed()

    def declare(self, names: tuple[str, ...], ranges: tuple[tuple[str, int], ...]) -> None:
        """Bare names declared by a scanned `.reg` in the innermost scope."""
        innermost = self.open[-1]
        if names:
            if innermost.names is None:
                innermost.names = set()
            innermost.names.update(names)
        if ranges:
            if innermost.ranges is None:
                innermost.ranges = []
            innermost.ranges.extend(ranges)

    def declare_label(self, name: str) -> None:
        """A label read by the scanner; only those of scopes inside a body are kept."""
        if len(self.open) > 1:
            innermost = self.open[-1]
            if innermost.labels is None:
                innermost.labels = set()
            innermost.labels.add(name)

    def finish(self) -> None:
        """At the end of the text: scopes still open are the grammar's to report."""
        while self.open:
            closed = self.open.pop()
            if closed.kind == SCANNED:
                self.handed_over.setdefault(closed.line, []).append(closed.column)
        self._innermost_changed()

    def _innermost_changed(self) -> None:
        self.in_statement_part = bool(self.open) and self.open[-1].kind == PART_OF_STATEMENT
        self.in_body = bool(self.open) and not self.in_statement_part

    def _closed(self, closed: _Open, line: int) -> None:
        if closed.names or closed.ranges or closed.labels:
            self.spans.append(
                ScopeSpan(
                    closed.line,
                    line,
                    frozenset(closed.names or ()),
                    tuple(closed.ranges or ()),
                    frozenset(closed.labels or ()),
                )
            )


def declares(span: ScopeSpan, name: str) -> bool:
    """Whether `name` is a register declared in the scope `span`."""
    if name in span.names:
        return True
    for prefix, count in span.ranges:
        if name.startswith(prefix):
            suffix = name[len(prefix) :]
            if (
                suffix.isascii()
                and suffix.isdigit()
                and (suffix == "0" or suffix[0] != "0")
                and len(suffix) <= len(str(count))
                and int(suffix) < count
            ):
                return True
    return False
