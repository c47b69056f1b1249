"""Time the advisor over every candidate of one kernel against nvcc compiling the same file.

    .venv/bin/python benchmarks/model.py [--cu FILE.cu] [--kernel NAME] [--gpu ID]

Evaluates 80 block shapes × 10 power limits, then every 1-D/2-D/3-D candidate × 10 power limits,
with `flipflop.advice.advise`, and prints each time as a fraction of `nvcc -ptx` on the same
source, all measured in this run, in turns (target: < 5%). Uses the
real PTX parser and feature extractor when they are installed; otherwise the per-thread work of
the built-in SAXPY kernel, counted by hand from its source, stands in for them.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flipflop.advice import advise
from flipflop.analysis.work import SiteWork, ThreadWork
from flipflop.gpu.profiles import load_profile
from flipflop.launch import Dim3, LaunchShape, ProblemSize
from flipflop.model import candidate_blocks
from flipflop.resources import Resources

SAXPY = """\
__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
"""
PROBLEM_THREADS = 1 << 24
TARGET = 0.05
REPEATS = 5  # rounds; each times nvcc once (a quarter of a second) and the advisor
# ADVISE_REPEATS / REPEATS times: it takes milliseconds, so one stray pause from another process
# on a shared machine is a large share of a run, and the fastest of more runs is the
# undisturbed time.
ADVISE_REPEATS = 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cu", type=Path, help="CUDA source (default: a built-in SAXPY)")
    parser.add_argument("--kernel", default="saxpy", help="kernel name (substring of the symbol)")
    parser.add_argument("--gpu", default="rtx3070")
    args = parser.parse_args(argv)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("error: nvcc not found on PATH", file=sys.stderr)
        return 3
    profile = load_profile(args.gpu)
    with tempfile.TemporaryDirectory() as scratch:
        source = args.cu or Path(scratch) / "saxpy.cu"
        if args.cu is None:
            source.write_text(SAXPY, encoding="utf-8")
        ptx_path = Path(scratch) / "kernel.ptx"
        compile_command = [
            nvcc,
            "-ptx",
            "-lineinfo",
            f"-arch={profile.arch}",
            str(source),
            "-o",
            str(ptx_path),
        ]
        _run(compile_command)
        ptx = ptx_path.read_text(encoding="utf-8")
        resources = _ptxas_resources(ptx_path, profile.arch, args.kernel)
        work_for, origin = _work_source(ptx, args.kernel)
        problem = ProblemSize(threads=(PROBLEM_THREADS, 1, 1))
        every_shape = candidate_blocks(profile, two_d=True, three_d=True)
        # The minimum sweep: every 1-D candidate plus the smallest 2-D/3-D shapes, 80.
        one_d = [shape for shape in every_shape if shape[1] == shape[2] == 1]
        minimum = one_d + [shape for shape in every_shape if shape not in one_d][: 80 - len(one_d)]
        sweeps = {"80 shapes": minimum, "every 3-D candidate": list(every_shape)}

        def evaluator(shapes: list[Dim3]) -> Callable[[], int]:
            def evaluate() -> int:
                advice = advise(profile, resources, work_for, problem, blocks=shapes,
                                power_limits=True)  # fmt: skip
                return len(advice.predictions)

            return evaluate

        evaluators = {label: evaluator(shapes) for label, shapes in sweeps.items()}
        configs = {label: evaluate() for label, evaluate in evaluators.items()}
        # nvcc and the advisor take turns, so a change in the machine's load between them
        # moves both, not their ratio.
        compile_s = float("inf")
        advise_s = dict.fromkeys(sweeps, float("inf"))
        for _ in range(REPEATS):
            compile_s = min(compile_s, _best_seconds(lambda: _run(compile_command), 1))
            for label, evaluate in evaluators.items():
                fastest = _best_seconds(evaluate, ADVISE_REPEATS // REPEATS)
                advise_s[label] = min(advise_s[label], fastest)
    print(f"kernel {args.kernel} on {profile.name}; work from {origin}")
    print(f"registers/thread {resources.registers}, static smem {resources.static_smem_bytes} B")
    print(f"nvcc -ptx: {compile_s * 1e3:.1f} ms (best of {REPEATS})")
    for label, shapes in sweeps.items():
        ratio = advise_s[label] / compile_s
        verdict = "meets" if ratio < TARGET else "misses"
        print(
            f"{label}: {configs[label]} configurations ({len(shapes)} shapes x 10 power limits) "
            f"in {advise_s[label] * 1e3:.1f} ms = {ratio:.2%} of the compile time "
            f"({verdict} the {TARGET:.0%} target)"
        )
    return 0


def _run(command: list[str]) -> None:
    subprocess.run(command, check=True, capture_output=True)


def _best_seconds(action: Callable[[], object], repeats: int = REPEATS) -> float:
    """Fastest of `repeats` runs: the least disturbed by other load on the machine."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _ptxas_resources(ptx_path: Path, arch: str, kernel: str) -> Resources:
    """Registers and static shared memory of `kernel` as `ptxas -v` reports them."""
    out = subprocess.run(
        ["ptxas", "-v", f"-arch={arch}", str(ptx_path), "-o", str(ptx_path.with_suffix(".cubin"))],
        check=True,
        capture_output=True,
        text=True,
    )
    current = ""
    registers, smem = 0, 0
    for line in out.stderr.splitlines():
        function = re.search(r"Compiling entry function '([^']+)'", line)
        if function:
            current = function.group(1)
        if kernel not in current:
            continue
        used = re.search(r"Used (\d+) registers", line)
        if used:
            registers = int(used.group(1))
        shared = re.search(r"(\d+) bytes smem", line)
        if shared:
            smem = int(shared.group(1))
    return Resources(registers=registers, static_smem_bytes=smem)


def _work_source(ptx: str, kernel: str) -> tuple[Callable[[LaunchShape], ThreadWork], str]:
    try:
        parse_ptx = importlib.import_module("flipflop.ptx").parse_ptx
        extract_features = importlib.import_module("flipflop.analysis").extract_features
    except (ImportError, AttributeError):
        return _saxpy_work, "hand-counted SAXPY work (PTX parser/feature extractor not installed)"
    module = parse_ptx(ptx)
    name = next(k.name for k in module.kernels if kernel in k.name)
    features = extract_features(module, name)
    params = {"n": float(PROBLEM_THREADS)}

    def work_for(shape: LaunchShape) -> ThreadWork:
        work: ThreadWork = features.work(shape, params)
        return work

    return work_for, "flipflop.ptx.parse_ptx + flipflop.analysis.extract_features"


def _saxpy_work(shape: LaunchShape) -> ThreadWork:
    """SAXPY per launched thread: threads past n only run the guard."""
    active = min(1.0, PROBLEM_THREADS / shape.threads)
    loads = SiteWork("global", False, "coalesced", (5,), 2 * active, 8 * active, active / 4, 1.0)
    store = SiteWork("global", True, "coalesced", (5,), active, 4 * active, active / 8, 1.0)
    return ThreadWork(
        instructions=6 + 7 * active,
        fp32_flops=2 * active,
        fp64_flops=0.0,
        fp16_flops=0.0,
        int_ops=4 + 3 * active,
        conversions=0.0,
        sfu_ops=0.0,
        tensor_flops=0.0,
        global_load_bytes=8 * active,
        global_store_bytes=4 * active,
        global_load_sectors=active / 4,
        global_store_sectors=active / 8,
        local_bytes=0.0,
        shared_accesses=0.0,
        shared_wavefronts=0.0,
        atomics=0.0,
        barriers=0.0,
        shuffles=0.0,
        branches=1.0,
        divergent_branches=0.0,
        active_fraction=active,
        sites=(loads, store),
        idle_lines=(4,) if active < 1.0 else (),
    )


if __name__ == "__main__":
    sys.exit(main())
