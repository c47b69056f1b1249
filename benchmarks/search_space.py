"""Configurations analysed per second over a search space, against sequential `nvcc -ptx`.

    .venv/bin/python benchmarks/search_space.py [--count 300] [--seed 1] [--compare 24]

Takes a seeded sample of `--count` configurations of the measured convolution space
(calibration/data/measured/convolution, the tune script's parameters), and times in this run:

1. the baseline: `nvcc -ptx` of each configuration's source (Kernel Tuner's `#define`s), one
   after the other — what a tuner that compiles everything pays before measuring anything;
2. FlipFlop cold: `flipflop analyze`'s search over the same configurations from an empty
   variant cache (compile, ptxas's resources, parse, features, model; worker processes);
3. FlipFlop warm: the same again, every variant from the cache.

It prints configurations per second and the ratios against the baseline (goals on 2 cores:
cold ≥ 3×, warm ≥ 50×), and, on `--compare` configurations compiled one at a time in this
process, the cost of one variant with NVRTC against nvcc + ptxas.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.space.kernel_tuner import kernel_tuner_launch
from flipflop.space.request import SpaceOptions
from flipflop.space.tunables import Configuration, choose_indices
from flipflop.toolchain import CompileOptions, find_toolchain
from flipflop.variants.analyze import Backend, VariantJob, analyze_variant

MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"
CONVOLUTION = MEASURED / "convolution"
LAUNCH = kernel_tuner_launch((4096, 4096), ("block_size_x", "tile_size_x"),
                             ("block_size_y", "tile_size_y"))
ARCH = "sm_86"
COLD_GOAL, WARM_GOAL = 3.0, 50.0


def sample(count: int, seed: int) -> list[Configuration]:
    measured = read_kernel_tuner_cache(CONVOLUTION / "RTX_3090.json.gz").succeeded
    return [measured[i].config for i in choose_indices(len(measured), count, seed)]


def nvcc_baseline(configurations: list[Configuration], nvcc: str) -> float:
    source = (CONVOLUTION / "convolution.cu").read_text()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for index, configuration in enumerate(configurations):
            path = Path(scratch) / f"c{index}.cu"
            path.write_text(LAUNCH.prepare_source(configuration, source))
            subprocess.run([nvcc, "-ptx", "-lineinfo", f"-arch={ARCH}", "-std=c++11",
                            "-o", str(path.with_suffix(".ptx")), str(path)], check=True)
    return time.perf_counter() - started


def flipflop_search(configurations: list[Configuration], cache: Path) -> float:
    measured = read_kernel_tuner_cache(CONVOLUTION / "RTX_3090.json.gz")
    options = AnalysisOptions(
        gpu="rtx3090", arch=ARCH, kernel="convolution_kernel", std="c++11",
        space=SpaceOptions(tunables=measured.tunables, configurations=tuple(configurations),
                           launch=LAUNCH, include_current=False),
    )
    os.environ["FLIPFLOP_CACHE_DIR"] = str(cache)
    started = time.perf_counter()
    result = analyze(CONVOLUTION / "convolution.cu", None, options)
    elapsed = time.perf_counter() - started
    report = result.kernels[0].primary.space
    assert report is not None and report.evaluated == len(configurations)
    return elapsed


def per_variant(configurations: list[Configuration], backend: Backend) -> float:
    source_path = CONVOLUTION / "convolution.cu"
    source = source_path.read_text()
    toolchain = find_toolchain()
    started = time.perf_counter()
    for configuration in configurations:
        job = VariantJob(source_path, LAUNCH.prepare_source(configuration, source), ARCH,
                         CompileOptions(std="c++11"), toolchain, backend, "convolution_kernel")
        assert analyze_variant(job, None).ok
    return (time.perf_counter() - started) / len(configurations)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare", type=int, default=24,
                        help="configurations for the NVRTC/nvcc comparison (0: skip)")
    args = parser.parse_args(argv)
    if not CONVOLUTION.is_dir():
        print(f"error: {CONVOLUTION} is not checked out", file=sys.stderr)
        return 1
    configurations = sample(args.count, args.seed)
    nvcc = str(find_toolchain().nvcc)
    print(f"{len(configurations)} configurations of the convolution space, {os.cpu_count()} cores")
    baseline = nvcc_baseline(configurations, nvcc)
    with tempfile.TemporaryDirectory() as cache:
        cold = flipflop_search(configurations, Path(cache))
        warm = flipflop_search(configurations, Path(cache))
    count = len(configurations)
    print(f"  sequential nvcc -ptx   {baseline:8.1f} s  {count / baseline:8.2f} configs/s")
    print(f"  flipflop, cold cache   {cold:8.1f} s  {count / cold:8.2f} configs/s  "
          f"{baseline / cold:6.1f}x the baseline (goal >= {COLD_GOAL:.0f}x)")
    print(f"  flipflop, warm cache   {warm:8.2f} s  {count / warm:8.1f} configs/s  "
          f"{baseline / warm:6.1f}x the baseline (goal >= {WARM_GOAL:.0f}x)")
    if args.compare:
        subset = configurations[: args.compare]
        with_nvrtc = per_variant(subset, "nvrtc")
        with_nvcc = per_variant(subset, "nvcc")
        print(f"  one variant, one process: NVRTC {with_nvrtc:.2f} s, nvcc + ptxas "
              f"{with_nvcc:.2f} s ({with_nvcc / with_nvrtc:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
