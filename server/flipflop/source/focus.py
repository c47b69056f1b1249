"""Which kernels to analyse first: those around the place a person is looking at.

The distance of a kernel from a line is 0 when the line is inside its definition or on one of
its launches, otherwise the number of lines to the nearest of them. A kernel the file neither
defines nor launches comes last.
"""

from __future__ import annotations

from collections.abc import Sequence

from flipflop.source.model import SourceFile

_FAR = 1 << 30


def distance(source: SourceFile, name: str, line: int) -> int:
    """How many lines `line` (0-based) is from the kernel `name`'s definition or launches."""
    found: list[int] = []
    kernel = source.kernel(name)
    if kernel is not None:
        start, end = kernel.range.start.line, kernel.range.end.line
        found.append(0 if start <= line <= end else min(abs(line - start), abs(line - end)))
    for site in source.launches_of(name):
        start, end = site.range.start.line, site.range.end.line
        found.append(0 if start <= line <= end else min(abs(line - start), abs(line - end)))
    return min(found, default=_FAR)


def focus_order(
    source: SourceFile, names: Sequence[str], line: int | None
) -> tuple[list[int], int]:
    """Indices into `names` (kernels' source names) nearest `line` first, and how many lead at
    the smallest distance (the first batch worth showing on its own); `names` order when no
    line is given."""
    if line is None or not names:
        return list(range(len(names))), len(names)
    distances = [distance(source, name, line) for name in names]
    order = sorted(range(len(names)), key=lambda index: distances[index])
    nearest = distances[order[0]]
    return order, sum(1 for d in distances if d == nearest)
