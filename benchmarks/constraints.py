"""What the block-shape constraint stage adds to `flipflop analyze`, on the examples.

    .venv/bin/python benchmarks/constraints.py [--repeat 3] [FILE.cu ...]

For each file (default: `examples/attention.cu` and every `.cu` of `tests/corpus` and
`tests/corpus/constraints` that compiles for the default GPU), times the whole analysis
(`flipflop.pipeline.analyze`: nvcc, ptxas, parse, features, model, advice, the stage included)
and, in the same run, the stage alone on the same source and PTX (`read_source` plus
`instance_constraints` for every kernel analysed). Both are wall-clock times, best of --repeat,
measured alternately so that both see the same load. Prints the stage's share of the analysis
per file and over all files; the goal is under 5% (issue 32).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from flipflop.constraints import instance_constraints, read_source
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.results import AnalysisResult
from flipflop.toolchain import find_toolchain
from flipflop.toolchain.names import kernel_base_name

ROOT = Path(__file__).resolve().parents[1]


def wall_seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def stage(result: AnalysisResult) -> int:
    """The constraint stage of one analysis, run again on its source and PTX."""
    reading = read_source(result.source.text)
    for kernel in result.kernels:
        source_kernel = result.source.kernel(kernel_base_name(kernel.info.display_name))
        instance_constraints(reading, source_kernel, kernel.info.display_name, result.module,
                             kernel.info.name, source_path=str(result.path))
    return len(result.kernels)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    files = args.files or [
        ROOT / "examples" / "attention.cu",
        *sorted((ROOT / "tests" / "corpus").glob("*.cu")),
        *sorted((ROOT / "tests" / "corpus" / "constraints").glob("*.cu")),
    ]
    toolchain = find_toolchain()
    options = AnalysisOptions()
    total_analysis = total_stage = 0.0
    print(f"{'file':<36} {'kernels':>7} {'analyze s':>10} {'stage ms':>9} {'share':>7}")
    for path in files:
        try:
            result = analyze(path, None, options, toolchain=toolchain)
        except Exception as error:  # a file this GPU cannot compile: not an example here
            print(f"{path.name:<36} skipped: {error}", file=sys.stderr)
            continue
        if not result.kernels or result.module is None:
            continue
        analysis_best = stage_best = float("inf")
        for _ in range(args.repeat):
            analysis_best = min(analysis_best, wall_seconds(
                lambda path=path: analyze(path, None, options, toolchain=toolchain)))
            stage_best = min(stage_best, wall_seconds(lambda result=result: stage(result)))
        total_analysis += analysis_best
        total_stage += stage_best
        print(f"{path.name:<36} {len(result.kernels):>7} {analysis_best:>10.2f}"
              f" {stage_best * 1e3:>9.1f} {stage_best / analysis_best:>7.2%}")
    if total_analysis > 0:
        print(f"{'all files':<36} {'':>7} {total_analysis:>10.2f} {total_stage * 1e3:>9.1f}"
              f" {total_stage / total_analysis:>7.2%}  (goal: under 5%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
