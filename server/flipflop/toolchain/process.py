"""Running one external tool with a time limit, never through a shell.

Each tool starts in its own session so that a timeout or a cancellation can kill the whole
process group: nvcc forks cudafe++, cicc and ptxas, and killing only nvcc leaves them running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flipflop.toolchain.errors import ToolCancelled, ToolchainError, ToolTimeout

# How often a running tool is checked for cancellation.
_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class ToolRun:
    """What one tool invocation produced."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    elapsed_s: float


def run_tool(
    argv: Sequence[str | Path],
    timeout_s: float,
    cwd: Path | None = None,
    cancel: threading.Event | None = None,
) -> ToolRun:
    """Run `argv`; kill its process group on timeout or cancellation (and raise)."""
    args = tuple(str(a) for a in argv)
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as error:
        raise ToolchainError(f"cannot run {args[0]}: {error.strerror or error}") from error
    deadline = started + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _kill_group(process)
            raise ToolTimeout(
                f"{Path(args[0]).name} did not finish within {timeout_s:g} s and was stopped; "
                "raise the limit (flipflop.compileTimeout) or simplify the file"
            )
        if cancel is not None and cancel.is_set():
            _kill_group(process)
            raise ToolCancelled(f"{Path(args[0]).name} was cancelled")
        wait = remaining if cancel is None else min(remaining, _POLL_SECONDS)
        try:
            out, err = process.communicate(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    return ToolRun(
        argv=args,
        returncode=process.returncode,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        elapsed_s=time.monotonic() - started,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(process.pid, signal.SIGKILL)
    # Reap the child and close its pipes; grandchildren holding the pipes are dead too.
    process.communicate()
