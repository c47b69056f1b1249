"""Byte offsets ↔ LSP positions (UTF-16 code units), and applying edits to text."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from flipflop.source.model import Position, Range, TextEdit


@dataclass(frozen=True)
class LineIndex:
    """Line starts of a UTF-8 buffer; converts byte offsets to LSP positions and back."""

    data: bytes
    line_starts: tuple[int, ...]

    @classmethod
    def of(cls, data: bytes) -> LineIndex:
        lengths = (len(line) + 1 for line in data.split(b"\n"))
        return cls(data, (0, *itertools.accumulate(lengths))[:-1])

    def position(self, byte: int) -> Position:
        line = bisect.bisect_right(self.line_starts, byte) - 1
        start = self.line_starts[line]
        prefix = self.data[start:byte]
        if prefix.isascii():
            return Position(line, byte - start)
        return Position(line, utf16_length(prefix.decode("utf-8", errors="replace")))

    def range(self, start_byte: int, end_byte: int) -> Range:
        return Range(self.position(start_byte), self.position(end_byte), start_byte, end_byte)

    def byte(self, position: Position) -> int:
        """The byte offset of an LSP position; characters past the line end clamp to it."""
        line = min(position.line, len(self.line_starts) - 1)
        start = self.line_starts[line]
        end = self.line_starts[line + 1] - 1 if line + 1 < len(self.line_starts) else len(self.data)
        text = self.data[start:end].decode("utf-8", errors="replace")
        units = 0
        for index, char in enumerate(text):
            if units >= position.character:
                return start + len(text[:index].encode("utf-8"))
            units += 2 if ord(char) > 0xFFFF else 1
        return end


def utf16_length(text: str) -> int:
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits located by their LSP positions, as an editor does."""
    index = LineIndex.of(text.encode("utf-8"))
    spans = sorted(
        ((index.byte(e.range.start), index.byte(e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    data = index.data
    previous_start = len(data) + 1
    for start, end, new_text in spans:
        if end > previous_start:
            raise ValueError("overlapping edits")
        data = data[:start] + new_text.encode("utf-8") + data[end:]
        previous_start = start
    return data.decode("utf-8")
