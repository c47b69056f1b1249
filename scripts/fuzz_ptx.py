#!/usr/bin/env python3
"""Fuzz the PTX front end: seeded mutations of the corpus PTX through `flipflop ptx` in-process.

    .venv/bin/python scripts/fuzz_ptx.py --count 100000 --seed 14 [--compare-paths] [--keep DIR]

Seeds are every tests/corpus/*.cu compiled by nvcc for its architectures (cached like the test
suite's corpus) and the hand-written tests/ptx_samples/*.ptx. Each input must end in IR or in an
error with a line and column; anything else (an exception, a missing position, more than 2 s)
is a failure: it is printed, saved under --keep, and makes the exit status 1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from corpus_ptx import CorpusCompiler, corpus_cases  # noqa: E402
from flipflop.toolchain import find_toolchain  # noqa: E402
from ptx_fuzz import Summary, fuzz  # noqa: E402


def seeds() -> list[tuple[str, str]]:
    toolchain = find_toolchain()
    cache = Path(tempfile.gettempdir()) / "flipflop-corpus-ptx"
    cache.mkdir(parents=True, exist_ok=True)
    compiler = CorpusCompiler(toolchain.nvcc, toolchain.version, cache)
    cases = corpus_cases()
    compiler.compile_all(cases)
    found = [(f"{path.stem}.{arch}", compiler.ptx(path, arch)) for path, arch in cases]
    for sample in sorted((REPO / "tests" / "ptx_samples").glob("*.ptx")):
        found.append((sample.name, sample.read_text(encoding="utf-8")))
    return found


def report(summary: Summary, started: float) -> None:
    outcomes = ", ".join(f"{name} {count}" for name, count in summary.outcomes.most_common())
    print(
        f"{summary.count} inputs in {time.perf_counter() - started:.0f} s: {outcomes}; "
        f"slowest {summary.slowest_s:.2f} s; failures {len(summary.failures)}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--compare-paths",
        action="store_true",
        help="also check that inputs that parse give the same IR through the grammar alone",
    )
    parser.add_argument("--keep", type=Path, help="save failing inputs in this folder")
    args = parser.parse_args(argv)
    corpus = seeds()
    print(f"{len(corpus)} seed files; {args.count} inputs from seed {args.seed}", flush=True)
    started = time.perf_counter()
    shown = 0

    def progress(partial: Summary) -> None:
        nonlocal shown
        report(partial, started)
        for index, name, applied, verdict, text in partial.failures[shown:]:
            print(f"\n#{index} from {name} after {', '.join(applied)}: {verdict.outcome}")
            print(verdict.detail.rstrip()[-3000:], flush=True)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"fuzz-{args.seed}-{index}.ptx").write_text(text, encoding="utf-8")
        shown = len(partial.failures)

    with tempfile.TemporaryDirectory(prefix="flipflop-fuzz-") as scratch:
        summary = fuzz(
            corpus,
            args.count,
            args.seed,
            Path(scratch),
            compare_paths=args.compare_paths,
            progress=progress,
        )
    if summary.count % 10000:
        progress(summary)
    print("mutations: " + ", ".join(f"{n} {c}" for n, c in summary.mutations.most_common()))
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
