"""Errors in the form editors and CI annotators parse: `FILE:LINE:COL: error: MESSAGE`."""

from __future__ import annotations

import sys
from pathlib import Path


def print_error(
    path: Path | str, line: int, column: int, message: str, severity: str = "error"
) -> None:
    print(f"{path}:{line}:{column}: {severity}: {message}", file=sys.stderr)


def print_file_error(path: Path | str, message: str) -> None:
    """`FILE: error: MESSAGE`, for a problem with the input as a whole (no line to point at)."""
    print(f"{path}: error: {message}", file=sys.stderr)
