"""Errors in the form editors and CI annotators parse: `FILE:LINE:COL: error: MESSAGE`."""

from __future__ import annotations

import sys
from pathlib import Path


def print_error(
    path: Path | str, line: int, column: int, message: str, severity: str = "error"
) -> None:
    print(f"{path}:{line}:{column}: {severity}: {message}", file=sys.stderr)
