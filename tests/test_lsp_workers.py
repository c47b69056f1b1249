"""The server's analysis workers, driven directly: real analyses in real worker processes."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from flipflop.lsp.session import Outcome
from flipflop.lsp.settings import Settings
from flipflop.lsp.workers import AnalysisWorkers
from lsp_fixtures.harness import HEADS, descendants

pytestmark = pytest.mark.usefixtures("cuda_toolchain")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    """No such process, or only its zombie is left."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].split()[0] == "Z"


def _in_background(
    workers: AnalysisWorkers, path: Path, cancel: threading.Event, text: str | None = None
) -> list[Outcome]:
    source = HEADS.read_text() if text is None else text
    outcomes: list[Outcome] = []
    thread = threading.Thread(
        target=lambda: outcomes.append(workers.run("file:///a", path, source, Settings(), cancel))
    )
    thread.start()
    return outcomes


def _run(workers: AnalysisWorkers, directory: Path) -> Outcome:
    return workers.run(
        "file:///a", directory / "a.cu", HEADS.read_text(), Settings(), threading.Event()
    )


def _wait(condition: Callable[[], object], what: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _first_tool(worker_pid: int) -> int:
    """The first tool the worker starts. Caught in the act: an analysis runs its tools one after
    another, so a second look may fall between two of them."""
    seen: list[int] = []
    _wait(lambda: seen.extend(_children(worker_pid)) or seen, "a tool to start")
    return seen[0]


def test_a_worker_serves_runs_in_turn_and_keeps_its_caches(tmp_path: Path) -> None:
    workers = AnalysisWorkers()
    try:
        first = _run(workers, tmp_path)
        assert first.result is not None and first.failure is None and first.log is None
        assert first.result.module is None  # the IR stays in the worker
        assert "FF001" in [f.code for f in first.findings]
        (worker,) = workers._idle
        again = _run(workers, tmp_path)
        assert workers._idle == [worker]  # the same process, warm
        assert [f.code for f in again.findings] == [f.code for f in first.findings]
    finally:
        workers.close()


def test_a_worker_that_dies_mid_run_becomes_a_finding_and_is_replaced(tmp_path: Path) -> None:
    workers = AnalysisWorkers(spare=1)
    workers.warm_up()
    (worker,) = workers._idle
    try:
        outcomes = _in_background(workers, tmp_path / "a.cu", threading.Event())
        _first_tool(worker.process.pid)
        os.kill(worker.process.pid, signal.SIGKILL)  # what the kernel's OOM killer does
        _wait(lambda: outcomes, "the outcome")
        (outcome,) = outcomes
        assert outcome.result is None and outcome.log is not None
        assert [f.code for f in outcome.findings] == ["FF010"]
        assert "ended unexpectedly (signal 9)" in outcome.findings[0].message
        after = _run(workers, tmp_path)
        assert after.result is not None
        assert not worker.scratch.exists()
    finally:
        workers.close()


def test_a_run_that_does_not_stop_by_itself_is_killed(tmp_path: Path) -> None:
    workers = AnalysisWorkers(grace_s=0.0)
    workers.warm_up()
    (worker,) = workers._idle
    cancel = threading.Event()
    try:
        outcomes = _in_background(workers, tmp_path / "a.cu", cancel)
        tool = _first_tool(worker.process.pid)
        assert worker.scratch.is_dir()
        cancel.set()
        _wait(lambda: outcomes, "the outcome")
        assert outcomes[0].cancelled
        assert not worker.process.is_alive() and worker not in workers._idle
        assert workers.stopped_runs == 1
        # the tools it ran and the files it wrote went with it
        _wait(lambda: _gone(tool), "the tool to be stopped", timeout_s=10.0)
        assert not worker.scratch.exists()
    finally:
        workers.close()


def _pool_processes(pid: int) -> list[int]:
    """Processes below `pid` that are not the leaders of a group of their own: the worker's
    variant pool (its tools run in sessions of their own)."""
    found = []
    for child, _ in descendants(pid):
        try:
            if os.getpgid(child) != child:
                found.append(child)
        except OSError:
            continue
    return found


def test_a_stopped_worker_takes_its_variant_pool_along(tmp_path: Path) -> None:
    source = (Path(__file__).parent / "tunable" / "tunable_scale.cu").read_text()
    workers = AnalysisWorkers(grace_s=0.0)
    workers.warm_up()
    (worker,) = workers._idle
    cancel = threading.Event()
    try:
        outcomes = _in_background(workers, tmp_path / "tunable_scale.cu", cancel, source)
        _wait(lambda: _pool_processes(worker.process.pid), "the variant pool to start")
        below = [child for child, _ in descendants(worker.process.pid)]
        cancel.set()
        _wait(lambda: outcomes, "the outcome")
        assert outcomes[0].cancelled
        _wait(lambda: all(_gone(child) for child in below), "the pool to be stopped", 10.0)
    finally:
        workers.close()
