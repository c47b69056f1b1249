"""A progress bar on the terminal for long searches; silent when output is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flipflop.variants.pool import Progress


@contextmanager
def progress_bar(description: str, unit: str = "variant") -> Iterator[Progress]:
    """A `(done, total)` callback drawing a tqdm bar on stderr, shown only when both stdout and
    stderr are terminals and there is more than one item to do."""
    bar: list[Any] = []

    def update(done: int, total: int) -> None:
        if not bar:
            if total <= 1 or not (sys.stdout.isatty() and sys.stderr.isatty()):
                bar.append(None)
                return
            from tqdm import tqdm

            # Every step is drawn (`mininterval=0`): kernels are few, and a bar that skips
            # its last steps would end short of its total.
            bar.append(tqdm(total=total, desc=description, unit=unit, leave=False,
                            mininterval=0.0))
        current = bar[0]
        if current is not None:
            current.update(done - current.n)

    try:
        yield update
    finally:
        if bar and bar[0] is not None:
            bar[0].close()
