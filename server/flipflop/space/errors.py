"""The errors of the search-space layer: bad tunables, bad restrictions, bad launch semantics."""

from __future__ import annotations

_EXCERPT = 60


class SpaceError(ValueError):
    """A search space, tunable or Kernel Tuner launch description that cannot be used."""


class ExpressionError(SpaceError):
    """An expression that cannot be parsed or evaluated; `column` is 1-based within `text`."""

    def __init__(self, reason: str, text: str, column: int) -> None:
        self.reason = reason
        self.text = text
        self.column = column
        super().__init__(f"{reason} (column {column} of {excerpt(text)})")


class SourcePositionError(SpaceError):
    """A bad value in the source file itself (a `// flipflop:` annotation), at 1-based `line`
    and `column` of the file."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        self.reason = reason
        self.line = line
        self.column = column
        super().__init__(reason)


class ExpressionZeroDivision(ExpressionError):
    """Division or modulo by zero. Kernel Tuner's restriction check lets such a restriction pass
    (`kernel_tuner.util.check_restrictions` catches ZeroDivisionError), so callers tell it apart."""


def excerpt(text: str) -> str:
    """The text quoted for a message, shortened: hostile inputs can be megabytes long."""
    if len(text) <= _EXCERPT:
        return repr(text)
    return repr(text[: _EXCERPT - 3] + "...")
