"""Analyses run in worker processes, so that a long one neither blocks the server nor outlives
the save that superseded it.

A document's analysis (nvcc, ptxas, parsing tens of megabytes of PTX, the model for hundreds of
kernels) is mostly Python; in a thread it would share the interpreter lock with the request
handlers, and it could only stop where it checks for cancellation. In its own process it shares
nothing: the server keeps answering hovers and code lenses, and a newer save stops the older
run: the worker is asked to cancel (which stops nvcc and ptxas at once) and, if it is inside
Python code that does not look, it is killed after a short grace period.

Workers are kept warm between runs, each with its own toolchain and ptxas caches; a run goes to
an idle worker, preferably the one that last analysed the same document.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from dataclasses import replace
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from flipflop.lsp.session import (
    NO_FOCUS,
    AssemblyCache,
    Focus,
    Outcome,
    ToolchainCache,
    failure_outcome,
    run_analysis,
)
from flipflop.lsp.settings import Settings

_CANCEL = "cancel"
_PROGRESS = "progress"  # ("progress", kernels done, kernels in all)
_EARLY = "early"  # ("early", the outcome of the kernels nearest the focus)
_POLL_S = 0.05


class AnalysisWorkers:
    """A small pool of warm worker processes; `run` is called from executor threads."""

    def __init__(self, grace_s: float = 1.0, spare: int = 1, most_idle: int = 2) -> None:
        self._grace_s = grace_s  # how long a cancelled run may take to stop by itself
        self._spare = spare  # workers kept started ahead of the first run
        self._most_idle = most_idle
        self._idle: list[_Worker] = []
        self._started: set[_Worker] = set()  # idle or busy, until stopped
        self._lock = threading.Lock()
        self._closed = False
        self.stopped_runs = 0  # runs stopped before they finished (for logs and tests)
        atexit.register(self.close)  # also when the editor goes away without a shutdown

    def warm_up(self) -> None:
        """Start the spare workers now, so the first analysis does not wait for imports."""
        with self._lock:
            while len(self._idle) < self._spare and not self._closed:
                self._idle.append(self._new_worker())

    def run(
        self,
        uri: str,
        path: Path,
        text: str,
        settings: Settings,
        cancel: threading.Event,
        focus: Focus = NO_FOCUS,
    ) -> Outcome:
        """Analyse in a worker; blocks until the outcome, or until `cancel` stops the run.
        `focus`'s callbacks are called here, in the caller's thread, as the worker reports."""
        if self._closed:
            return Outcome(None, (), cancelled=True)
        worker = self._take(uri)
        outcome, reusable = worker.analyse(path, text, settings, cancel, self._grace_s, focus)
        if outcome.cancelled:
            with self._lock:
                self.stopped_runs += 1
        if reusable:
            self._give_back(worker)
        else:
            self._stop(worker)
        return outcome

    def close(self) -> None:
        """Stop every worker, busy ones included (their runs end as failures)."""
        with self._lock:
            self._closed = True
            started, self._started, self._idle = list(self._started), set(), []
        for worker in started:
            worker.stop()

    def _new_worker(self) -> _Worker:
        worker = _Worker.start()
        self._started.add(worker)
        return worker

    def _stop(self, worker: _Worker) -> None:
        with self._lock:
            self._started.discard(worker)
        worker.stop()

    def _take(self, uri: str) -> _Worker:
        with self._lock:
            for gone in [worker for worker in self._idle if not worker.alive]:
                self._idle.remove(gone)
                self._started.discard(gone)
                gone.stop()
            for index, worker in enumerate(self._idle):
                if worker.last_uri == uri:
                    chosen = self._idle.pop(index)
                    break
            else:
                chosen = self._idle.pop(0) if self._idle else self._new_worker()
            chosen.last_uri = uri
            return chosen

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                surplus = [worker]
            else:
                self._idle.append(worker)
                surplus = self._idle[: max(0, len(self._idle) - self._most_idle)]
                del self._idle[: len(surplus)]
        for extra in surplus:
            self._stop(extra)


class _Worker:
    """One worker process and the pipes to it."""

    def __init__(
        self, process: BaseProcess, requests: Connection, results: Connection, scratch: Path
    ) -> None:
        self.process = process
        self.requests = requests
        self.results = results
        self.scratch = scratch  # the worker's temporary files, removed with it
        self.last_uri: str | None = None

    @classmethod
    def start(cls) -> _Worker:
        # spawn, not fork: the server has threads, and a forked child would inherit their locks
        context = multiprocessing.get_context("spawn")
        receiving, requests = context.Pipe(duplex=False)
        results, sending = context.Pipe(duplex=False)
        scratch = Path(tempfile.mkdtemp(prefix="flipflop-worker-"))
        process = context.Process(
            target=_serve,
            args=(receiving, sending, scratch),
            name="flipflop-analysis",
            # not a daemon: an analysis may start processes of its own (a search space's
            # variants compile in a pool); `stop` and the worker itself end them
            daemon=False,
        )
        process.start()
        receiving.close()
        sending.close()
        return cls(process, requests, results, scratch)

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def analyse(
        self,
        path: Path,
        text: str,
        settings: Settings,
        cancel: threading.Event,
        grace_s: float,
        focus: Focus = NO_FOCUS,
    ) -> tuple[Outcome, bool]:
        """The outcome, and whether the worker can take another run."""
        try:
            self.requests.send((path, text, settings, focus.line))
        except (OSError, ValueError):
            return self._ended(), False
        while not cancel.is_set():
            try:
                ready = self.results.poll(_POLL_S)
            except (OSError, ValueError):
                return self._ended(), False
            if ready:
                answer = self._answer(focus)
                if answer is not None:
                    return answer
                continue
            if not self.process.is_alive():
                return self._ended(), False
        # asked to stop: the worker has `grace_s` to answer by itself, else the caller stops it
        try:
            self.requests.send(_CANCEL)
            stopped_by_itself = self.results.poll(grace_s) if grace_s > 0 else False
        except (OSError, ValueError):
            stopped_by_itself = False
        while stopped_by_itself:
            answer = self._answer()
            if answer is not None:
                return answer
            try:  # a report sent before the worker saw the cancel: wait on for the outcome
                stopped_by_itself = self.results.poll(grace_s)
            except (OSError, ValueError):
                break
        return Outcome(None, (), cancelled=True), False

    def _answer(self, focus: Focus = NO_FOCUS) -> tuple[Outcome, bool] | None:
        """The outcome the worker has sent (a worker that sent one can take another run), or
        None for a report on the way (progress, the first batch), handed to `focus`."""
        try:
            message: Outcome | tuple[Any, ...] = self.results.recv()
        except (EOFError, OSError):
            return self._ended(), False
        except Exception:  # the whole message was read; what it holds does not unpickle (a bug)
            return failure_outcome(
                "FlipFlop could not read back this file's analysis",
                log=traceback.format_exc(),
            ), True
        if isinstance(message, Outcome):
            return message, True
        if message[0] == _PROGRESS and focus.progress is not None:
            focus.progress(message[1], message[2])
        elif message[0] == _EARLY and focus.early is not None:
            focus.early(message[1])
        return None

    def _ended(self) -> Outcome:
        self.process.join(timeout=1.0)
        code = self.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return failure_outcome(
            f"the analysis process ended unexpectedly ({how}); the next save tries again",
            log=f"flipflop analysis worker {self.process.pid} ended with {how}",
        )

    def stop(self) -> None:
        """End the worker, every process below it (tools, variant pools) and its files."""
        for connection in (self.requests, self.results):
            connection.close()
        pid = self.process.pid
        if self.process.is_alive() and pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)  # starts nothing more while its tree is read
            _kill_descendants(pid)
            self.process.kill()
        self.process.join(timeout=5.0)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _children(pid: int) -> list[int]:
    """Process ids of `pid`'s children (Linux; elsewhere none are known)."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError, ValueError):
            found += [int(child) for child in children.read_text().split()]
    return found


def _kill_descendants(pid: int) -> None:
    """Kill every process below `pid`. Each is stopped before its children are read, so none
    starts another meanwhile; one that leads a process group (a tool run in a session of its
    own) takes its group along."""
    stopped: list[int] = []
    waiting = _children(pid)
    while waiting:
        child = waiting.pop()
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGSTOP)
            stopped.append(child)
            waiting += _children(child)
    for child in stopped:
        with contextlib.suppress(OSError):
            if os.getpgid(child) == child:
                os.killpg(child, signal.SIGKILL)
            else:
                os.kill(child, signal.SIGKILL)


# --------------------------------------------------------------------------- in the worker


def _serve(requests: Connection, results: Connection, scratch: Path) -> None:
    """The worker's main loop: one analysis at a time; a listener thread takes cancellations."""
    # fd 1 is the server's channel to the editor: nothing in here may write to it
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    # temporary files (ours, nvcc's, ptxas's) go where the server removes them with the worker
    os.environ["TMPDIR"] = str(scratch)
    tempfile.tempdir = str(scratch)
    from flipflop.ptx.grammar import ptx_parser

    ptx_parser()  # built once per process, before the first run needs it
    tools = ToolchainCache()
    assemblies = AssemblyCache()
    pending: queue.Queue[tuple[Path, str, Settings, int | None] | None] = queue.Queue()
    current: list[threading.Event] = [threading.Event()]

    def listen() -> None:
        while True:
            try:
                message: Any = requests.recv()
            except (EOFError, OSError):
                _kill_descendants(os.getpid())  # the server is gone, and so is its work
                os._exit(0)
            if message == _CANCEL:
                current[0].set()
            else:
                pending.put(message)

    threading.Thread(target=listen, name="flipflop-requests", daemon=True).start()
    while True:
        request = pending.get()
        if request is None:
            return
        cancel = current[0] = threading.Event()
        path, text, settings, line = request

        def progress(done: int, total: int) -> None:
            results.send((_PROGRESS, done, total))

        def early(outcome: Outcome) -> None:
            if outcome.result is not None:
                outcome = replace(outcome, result=replace(outcome.result, module=None))
            with contextlib.suppress(Exception):  # a first batch that does not pickle: skip it
                results.send((_EARLY, outcome))

        focus = Focus(line, progress, early)
        outcome = run_analysis(path, text, settings, cancel, tools, assemblies, focus)
        if outcome.result is not None:
            # the server never reads the IR; it would only make the answer slow to send
            outcome = replace(outcome, result=replace(outcome.result, module=None))
        try:
            results.send(outcome)
        except Exception:  # an outcome that does not pickle is a bug: say so, keep serving
            results.send(
                failure_outcome(
                    "FlipFlop could not hand over this file's analysis",
                    log=traceback.format_exc(),
                )
            )
