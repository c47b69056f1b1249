"""Analyse many variants: cache hits in this process, misses in worker processes.

Workers are spawned processes, never threads of the caller: NVRTC runs inside the process that
calls it, and a compiler crash or hang must not take the language server with it. The pool is
torn down when the caller cancels; a variant that takes longer than the compile timeout (a hung
compiler) fails with the reason, and fresh workers carry on with the others.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.pool import AsyncResult, Pool

from flipflop.toolchain.diagnostics import ToolDiagnostic
from flipflop.toolchain.errors import ToolCancelled, ToolchainError
from flipflop.variants.analyze import VariantAnalysis, VariantJob, analyze_variant
from flipflop.variants.cache import DiskCache

Progress = Callable[[int, int], None]  # (variants done, variants in all)
_POLL_S = 0.05


@dataclass(frozen=True)
class PoolOptions:
    workers: int = 0  # 0: one per core
    timeout_s: float = 60.0  # longest wait for any one variant to finish
    in_process: bool = False  # compile misses here (a one-off command line run may)


def analyze_variants(
    jobs: Sequence[VariantJob],
    cache: DiskCache | None,
    options: PoolOptions = PoolOptions(),
    *,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> list[VariantAnalysis]:
    """One analysis per job, in order; identical jobs are analysed once.

    Raises `ToolCancelled` when `cancel` is set, `ToolchainError` when a tool is missing.
    """
    keys = [job.key() for job in jobs]
    unique: dict[str, VariantJob] = {}
    for key, job in zip(keys, jobs, strict=True):
        unique.setdefault(key, job)
    done: dict[str, VariantAnalysis] = {}
    for key in unique:
        hit = cache.get(key) if cache is not None else None
        if isinstance(hit, VariantAnalysis):
            done[key] = replace(hit, cached=True)
    total = len(unique)
    _report(progress, len(done), total)
    misses = [job for key, job in unique.items() if key not in done]
    if misses:
        run = _run_here if options.in_process else _run_in_workers
        for key, analysis in run(misses, cache, options, cancel,
                                 lambda n: _report(progress, len(done) + n, total)):
            done[key] = analysis
    return [done[key] for key in keys]


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


def _run_here(
    jobs: Sequence[VariantJob],
    cache: DiskCache | None,
    options: PoolOptions,
    cancel: threading.Event | None,
    finished: Callable[[int], None],
) -> list[tuple[str, VariantAnalysis]]:
    results: list[tuple[str, VariantAnalysis]] = []
    for job in jobs:
        if cancel is not None and cancel.is_set():
            raise ToolCancelled("the analysis was cancelled")
        analysis = analyze_variant(job, cache)
        results.append((analysis.key, analysis))
        finished(len(results))
    return results


def _work(job: VariantJob, cache: DiskCache | None) -> VariantAnalysis | str:
    """The worker's side: a result, or the toolchain error's message (exceptions do not pickle
    reliably across processes)."""
    try:
        return analyze_variant(job, cache)
    except ToolchainError as error:
        return f"toolchain: {error}"


def _run_in_workers(
    jobs: Sequence[VariantJob],
    cache: DiskCache | None,
    options: PoolOptions,
    cancel: threading.Event | None,
    finished: Callable[[int], None],
) -> list[tuple[str, VariantAnalysis]]:
    """Each worker holds one job at a time, so a job's time since it was handed out is its
    compile time; one that outlasts the timeout is taken as hung: the workers are replaced and
    the other jobs go on."""
    workers = min(len(jobs), options.workers or os.cpu_count() or 1)
    context = multiprocessing.get_context("spawn")
    waiting = list(reversed(jobs))
    results: list[tuple[str, VariantAnalysis]] = []
    while waiting:
        pool: Pool = context.Pool(processes=workers)
        try:
            hung = _drain(pool, workers, waiting, cache, options, cancel, results, finished)
        finally:
            pool.terminate()
            pool.join()
        if hung is not None:
            results.append((hung.key(), _timed_out(hung, options.timeout_s)))
            finished(len(results))
    return results


def _drain(
    pool: Pool,
    workers: int,
    waiting: list[VariantJob],
    cache: DiskCache | None,
    options: PoolOptions,
    cancel: threading.Event | None,
    results: list[tuple[str, VariantAnalysis]],
    finished: Callable[[int], None],
) -> VariantJob | None:
    """Run `waiting` (popped from the end) on `pool`; the job that hung, if one did."""
    running: list[tuple[VariantJob, float, AsyncResult[VariantAnalysis | str]]] = []
    while waiting or running:
        if cancel is not None and cancel.is_set():
            raise ToolCancelled("the analysis was cancelled")
        while waiting and len(running) < workers:
            job = waiting.pop()
            running.append((job, time.monotonic(), pool.apply_async(_work, (job, cache))))
        done = [entry for entry in running if entry[2].ready()]
        for entry in done:
            running.remove(entry)
            outcome = entry[2].get()
            if isinstance(outcome, str):
                raise ToolchainError(outcome.removeprefix("toolchain: "))
            results.append((outcome.key, outcome))
        if done:
            finished(len(results))
            continue
        now = time.monotonic()
        late = next((entry for entry in running if now - entry[1] > options.timeout_s), None)
        if late is not None:
            # A compiler that hangs in-process cannot be interrupted: give up on this job, put
            # the others back, and start fresh workers for them.
            for job, _, _ in running:
                if job is not late[0]:
                    waiting.append(job)
            return late[0]
        time.sleep(_POLL_S)
    return None


def _timed_out(job: VariantJob, timeout_s: float) -> VariantAnalysis:
    message = f"compiling this variant took longer than {timeout_s:.0f} s; it was stopped"
    diagnostic = ToolDiagnostic(None, None, None, "error", message, job.backend)
    return VariantAnalysis(job.key(), job.backend, False, (diagnostic,), (), "", 0, timeout_s, 0.0)
