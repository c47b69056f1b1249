"""Running one analysis for the server: blocking, in a worker thread, never raising."""

from __future__ import annotations

import hashlib
import re
import threading
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flipflop.findings import Finding, findings
from flipflop.gpu.profiles import UnknownGpuError
from flipflop.lsp.settings import Settings
from flipflop.pipeline import analyze
from flipflop.results import AnalysisResult
from flipflop.toolchain import (
    AssemblyResult,
    ToolCancelled,
    Toolchain,
    ToolchainError,
    ToolTimeout,
    assemble,
    find_toolchain,
)


@dataclass(frozen=True)
class Outcome:
    """What one run produced: a result and its findings, or a failure to show the user."""

    result: AnalysisResult | None
    findings: tuple[Finding, ...]
    failure: str | None = None  # toolchain problem, shown once as a message too
    log: str | None = None  # detail for the output channel (tracebacks of internal errors)
    cancelled: bool = False


@dataclass(frozen=True)
class Focus:
    """Where the person is looking (a 0-based line: the cursor, the visible range, the last
    edit), and who hears how the analysis goes: kernels done of all, the first batch early."""

    line: int | None = None
    progress: Callable[[int, int], None] | None = None
    early: Callable[[Outcome], None] | None = None


NO_FOCUS = Focus()


def content_key(path: Path, text: str, settings: Settings) -> tuple[object, ...]:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return (str(path), digest, settings.cache_key())


def run_analysis(
    path: Path,
    text: str,
    settings: Settings,
    cancel: threading.Event | None = None,
    tools: ToolchainCache | None = None,
    assemblies: AssemblyCache | None = None,
    focus: Focus = NO_FOCUS,
) -> Outcome:
    """Analyse one document; every failure becomes a finding or a log line. `focus` says
    which kernels go first and hears how far the analysis is."""
    early = focus.early

    def first_batch(result: AnalysisResult) -> None:
        if early is not None:
            early(Outcome(result, findings(result, settings.minSaving)))

    try:
        toolchain = (tools or ToolchainCache()).find(settings.nvccPath, settings.compileTimeout)
        result = analyze(
            path,
            text,
            settings.analysis_options(),
            toolchain=toolchain,
            cancel=cancel,
            assembler=assemblies or assemble,
            kernel_progress=focus.progress,
            focus_line=focus.line,
            early=first_batch if early is not None else None,
        )
    except ToolCancelled:
        return Outcome(None, (), cancelled=True)
    except ToolchainError as error:
        if tools is not None:
            tools.forget(settings.nvccPath)  # it may have moved; look again next time
        message = str(error)
        return Outcome(None, (_failure_finding(message),), failure=message)
    except UnknownGpuError as error:
        return Outcome(None, (_failure_finding(str(error)),), failure=str(error))
    except Exception as error:  # the server must outlive any bug in one analysis
        return failure_outcome(
            f"FlipFlop could not analyse this file: {type(error).__name__}: {error}",
            log=traceback.format_exc(),
        )
    return Outcome(result, findings(result, settings.minSaving))


def failure_outcome(message: str, log: str) -> Outcome:
    """An internal failure: shown as information on the file, detailed in the log."""
    return Outcome(None, (_failure_finding(message, "information"),), log=log)


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


class ToolchainCache:
    """nvcc found once per `nvccPath` setting instead of once per save.

    Discovery asks `nvcc --version`; an nvcc that never answers must not hold the analysis
    longer than the compile timeout the user chose, so the wait is bounded here.
    """

    def __init__(self) -> None:
        self._found: dict[str | None, Toolchain] = {}
        self._lock = threading.Lock()

    def find(self, nvcc_path: str | None, timeout_s: float) -> Toolchain:
        with self._lock:
            known = self._found.get(nvcc_path)
        if known is not None:
            return known
        answer: list[Toolchain | ToolchainError] = []

        def discover() -> None:
            try:
                answer.append(find_toolchain(nvcc_path))
            except ToolchainError as error:
                answer.append(error)

        worker = threading.Thread(target=discover, name="flipflop-find-nvcc", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if not answer:
            raise ToolTimeout(
                f"{nvcc_path or 'nvcc'} --version did not answer within {timeout_s:g} s; check"
                " the CUDA installation or the flipflop.nvccPath setting, or raise"
                " flipflop.compileTimeout"
            )
        found = answer[0]
        if isinstance(found, ToolchainError):
            raise found
        with self._lock:
            self._found[nvcc_path] = found
        return found

    def forget(self, nvcc_path: str | None) -> None:
        with self._lock:
            self._found.pop(nvcc_path, None)


# PTX lines that only say where code came from; ptxas's resource usage does not depend on them.
_LINE_INFO = re.compile(r"^\s*(?:\.loc|\.file|//).*$", re.MULTILINE)


class AssemblyCache:
    """`ptxas -v` results by PTX with its line information removed.

    An edit of host code or comments moves `.loc` lines but leaves the kernels' instructions
    alone; ptxas would report the same registers and shared memory, so it is not run again.
    Only clean runs are kept: messages carry line numbers that may have moved.
    """

    def __init__(self, capacity: int = 32) -> None:
        self._entries: OrderedDict[tuple[str, str, str], AssemblyResult] = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def __call__(
        self,
        ptx: str,
        arch: str,
        toolchain: Toolchain,
        timeout_s: float,
        cancel: threading.Event | None = None,
    ) -> AssemblyResult:
        code = hashlib.sha256(_LINE_INFO.sub("", ptx).encode()).hexdigest()
        key = (str(toolchain.ptxas), arch, code)
        with self._lock:
            known = self._entries.get(key)
            if known is not None:
                self._entries.move_to_end(key)
                return known
        result = assemble(ptx, arch, toolchain, timeout_s, cancel)
        if result.ok and not result.diagnostics:
            with self._lock:
                self._entries[key] = result
                while len(self._entries) > self._capacity:
                    self._entries.popitem(last=False)
        return result
