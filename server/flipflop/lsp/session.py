"""Running one analysis for the server: blocking, in a worker thread, never raising."""

from __future__ import annotations

import hashlib
import threading
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from flipflop.findings import Finding, findings
from flipflop.gpu.profiles import UnknownGpuError
from flipflop.lsp.settings import Settings
from flipflop.pipeline import AnalysisResult, analyze
from flipflop.toolchain import ToolCancelled, ToolchainError


@dataclass(frozen=True)
class Outcome:
    """What one run produced: a result and its findings, or a failure to show the user."""

    result: AnalysisResult | None
    findings: tuple[Finding, ...]
    failure: str | None = None  # toolchain problem, shown once as a message too
    log: str | None = None  # detail for the output channel (tracebacks of internal errors)
    cancelled: bool = False


def content_key(path: Path, text: str, settings: Settings) -> tuple[object, ...]:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return (str(path), digest, settings.cache_key())


def run_analysis(
    path: Path, text: str, settings: Settings, cancel: threading.Event | None = None
) -> Outcome:
    """Analyse one document; every failure becomes a finding or a log line."""
    try:
        result = analyze(path, text, settings.analysis_options(), cancel=cancel)
    except ToolCancelled:
        return Outcome(None, (), cancelled=True)
    except ToolchainError as error:
        message = str(error)
        return Outcome(None, (_failure_finding(message),), failure=message)
    except UnknownGpuError as error:
        return Outcome(None, (_failure_finding(str(error)),), failure=str(error))
    except Exception as error:  # the server must outlive any bug in one analysis
        detail = traceback.format_exc()
        message = f"FlipFlop could not analyse this file: {type(error).__name__}: {error}"
        return Outcome(None, (_failure_finding(message, "information"),), log=detail)
    return Outcome(result, findings(result, settings.minSaving))


def _failure_finding(message: str, severity: str = "error") -> Finding:
    return Finding(
        code="FF010",
        severity="error" if severity == "error" else "information",
        message=message,
        line=1,
    )


class OutcomeCache:
    """The last few outcomes by content hash and settings; re-saving unchanged text is free."""

    def __init__(self, capacity: int = 32) -> None:
        self._entries: OrderedDict[tuple[object, ...], Outcome] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> Outcome | None:
        with self._lock:
            outcome = self._entries.get(key)
            if outcome is not None:
                self._entries.move_to_end(key)
            return outcome

    def put(self, key: tuple[object, ...], outcome: Outcome) -> None:
        if outcome.cancelled or outcome.failure is not None or outcome.log is not None:
            return  # only results that would come out the same next time
        with self._lock:
            self._entries[key] = outcome
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
