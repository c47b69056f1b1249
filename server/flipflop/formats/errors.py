"""The one error the format readers raise: a file that cannot be read, and why."""

from __future__ import annotations

from pathlib import Path


class FormatError(ValueError):
    """`path` cannot be read as the format asked for; `line` and `column` (1-based) where known.

    str() is `PATH: REASON` or `PATH:LINE:COL: REASON`."""

    def __init__(self, path: str | Path, reason: str, line: int | None = None,
                 column: int | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.line = line
        self.column = column
        location = self.path if line is None else f"{self.path}:{line}:{column or 1}"
        super().__init__(f"{location}: {reason}")
