"""A slice of the PTX fuzzer (scripts/fuzz_ptx.py runs any number): 2,000 seeded mutations of the
corpus PTX through `flipflop ptx` in-process, each ending in IR or a positioned error, quickly."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus_ptx import CorpusCompiler, corpus_cases, corpus_compiler
from ptx_fuzz import HANG_S, check, fuzz

__all__ = ["corpus_compiler"]  # the session fixture, used by name below

SAMPLES = Path(__file__).parent / "ptx_samples"


@pytest.mark.slow
def test_two_thousand_mutated_inputs(corpus_compiler: CorpusCompiler, tmp_path: Path) -> None:
    seeds = [(f"{p.stem}.{arch}", corpus_compiler.ptx(p, arch)) for p, arch in corpus_cases()]
    seeds += [(p.name, p.read_text(encoding="utf-8")) for p in sorted(SAMPLES.glob("*.ptx"))]
    summary = fuzz(seeds, 2000, seed=14, workdir=tmp_path, compare_paths=True, slow_s=HANG_S)
    report = [
        f"#{index} from {name} after {', '.join(applied)}: {verdict.outcome}\n{verdict.detail}"
        for index, name, applied, verdict, _ in summary.failures
    ]
    assert not report, "\n\n".join(report)
    # the mutations reach both ends: inputs that still parse and inputs that do not
    assert summary.outcomes["ir"] > 200 and summary.outcomes["syntax error"] > 200


def test_the_checker_tells_failures_apart(tmp_path: Path) -> None:
    good = (SAMPLES / "statement_forms.ptx").read_text(encoding="utf-8")
    assert check(good, tmp_path / "a.ptx").outcome == "ir"
    assert check(good.replace("ret;", "ret"), tmp_path / "a.ptx").outcome == "syntax error"
    assert check("\0\0", tmp_path / "a.ptx").outcome == "refused"
    assert check(good, tmp_path / "a.ptx", compare_paths=True).outcome == "ir"
