"""The one error the PTX parser raises: malformed input, with its position."""

from __future__ import annotations


class PtxSyntaxError(Exception):
    """Malformed PTX at `line`:`column` (both 1-based); `source_line` is that line's text."""

    def __init__(
        self, message: str, line: int, column: int, source_line: str, filename: str = "<ptx>"
    ) -> None:
        super().__init__(f"{filename}:{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column
        self.source_line = source_line
        self.filename = filename
