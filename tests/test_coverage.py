"""Work conservation by output coverage, with a fixed grid, on real kernels through nvcc."""

from __future__ import annotations

from pathlib import Path

from flipflop.advice.coverage import coverage
from flipflop.findings import findings
from flipflop.launch import LaunchShape
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.source import apply_edits

CORPUS = Path(__file__).parent / "corpus"
HEADS = CORPUS / "head_scores.cu"


def test_one_block_per_head_covers_the_same_output_at_any_width() -> None:
    result = analyze(HEADS, None, AnalysisOptions(gpu="rtx3070"))
    features = result.kernels[0].features
    written = {}
    for threads in (64, 128, 512, 1024):
        shape = LaunchShape((threads, 1, 1), (1024, 1, 1))
        covered = coverage(features.work(shape, {}), shape)
        written[threads] = covered.written_bytes
        # Every block reads its head's 64 query and 64 key floats, whatever the width.
        assert covered.read_bytes == 1024 * 2 * 64 * 4
    # One score per head: thread 0 stores it, however many threads reduce.
    assert set(written.values()) == {1024 * 4}


def test_the_research_case_gets_a_quick_fix_that_shrinks_the_block() -> None:
    result = analyze(HEADS, None, AnalysisOptions(gpu="rtx3070"))
    advice = result.kernels[0].primary.advice
    excluded = {e.block[0]: e.reason for e in advice.excluded}
    # Narrower than the head, a block skips features: it reads less of the input.
    assert "read 50% of the input" in excluded[32]
    assert 64 not in excluded and 128 not in excluded
    recommended = advice.recommendation.block[0]
    assert recommended < 1024 and advice.recommendation.energy_saving_vs_current > 0.2
    (finding,) = [f for f in findings(result) if f.code == "FF001"]
    preferred = next(fix for fix in finding.fixes if fix.preferred)
    fixed = apply_edits(HEADS.read_text(), preferred.edits)
    assert f"head_scores<<<HEADS, {recommended}>>>" in fixed


def test_a_fixed_grid_over_elements_keeps_blocks_that_write_everything(tmp_path: Path) -> None:
    # Each thread writes its own element; a fixed grid of 256 blocks covers 256 * blockDim.x of
    # them, so a narrower block writes less and a wider one past the data (guarded: no more).
    source = tmp_path / "rows.cu"
    source.write_text(
        "__global__ void scale_rows(float* data, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) data[i] *= 2.0f;\n"
        "}\n"
        "void run(float* data) { scale_rows<<<256, 512>>>(data, 256 * 512); }\n"
    )
    advice = analyze(source, None, AnalysisOptions(gpu="rtx3070")).kernels[0].primary.advice
    excluded = {e.block[0]: e.reason for e in advice.excluded}
    assert "write 50% of the output" in excluded[256]
    assert all(p.block[0] >= 512 for p in advice.predictions)
