"""Errors raised when the CUDA toolchain is missing, hangs or cannot run."""

from __future__ import annotations


class ToolchainError(Exception):
    """nvcc/ptxas could not be found or run; the message tells the user what to do."""


class ToolTimeout(ToolchainError):
    """A tool ran past its time limit; its whole process group was killed."""


class ToolCancelled(ToolchainError):
    """The caller cancelled the run (a newer request superseded it)."""
