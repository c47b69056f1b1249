"""A whole program through `flipflop analyze` against `nvcc -ptx` of the same file, in one run.

    .venv/bin/python benchmarks/whole_program.py [--cu FILE.cu] [--kernel NAME] [--gpu ID]
                                                 [--repeats N]

The default file is tests/corpus/programs/reduce_switch.cu: eight reduction kernels, six of
them templates over the block size instantiated from one `switch` for three element types,
210 kernel instances in the PTX, each with its own launch. Per turn, `nvcc -ptx -lineinfo` of
the file (the reference) and `flipflop analyze FILE --format json` as a separate process, once
for the whole file and once for one kernel's instances (`--kernel`, default reduce_halving):
the analysis should grow with what is asked for, not with the file. Printed: seconds (the best
of the turns, so that both see the same load on a shared machine), their ratio to nvcc, and the
peak resident memory of the analysing Python process and of the tools it ran. The goals
(issue 35): the whole file in under 60 s and 1 GB on a two-core machine; the exit status is 1
when one is missed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flipflop.gpu.profiles import load_profile
from flipflop.toolchain import find_toolchain

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO / "tests" / "corpus" / "programs" / "reduce_switch.cu"
SECONDS_GOAL = 60.0
MEMORY_GOAL_MB = 1024.0

# Runs in the child: the analysis as the command line runs it, then what it cost.
_DRIVER = """
import json, resource, sys, time
from flipflop.cli import main
started = time.perf_counter()
code = main(sys.argv[2:])
seconds = time.perf_counter() - started
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tools = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, "seconds": seconds, "own_kb": own, "tools_kb": tools}, out)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cu", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--kernel", default="reduce_halving",
                        help="the kernel whose instances alone are analysed in the second run")
    parser.add_argument("--gpu", default="rtx3070")
    parser.add_argument("--repeats", type=int, default=1, help="turns (each ~1 min)")
    args = parser.parse_args(argv)
    arch = load_profile(args.gpu).arch
    nvcc = find_toolchain().nvcc
    best: dict[str, dict[str, float]] = {}
    nvcc_s = float("inf")
    kernels: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        compile_command = [str(nvcc), "-ptx", "-lineinfo", f"-arch={arch}", str(args.cu),
                           "-o", str(Path(scratch) / "bare.ptx")]  # fmt: skip
        runs = {"whole file": [], f"--kernel {args.kernel}": ["--kernel", args.kernel]}
        for _ in range(args.repeats):
            nvcc_s = min(nvcc_s, _seconds(compile_command))
            for label, extra in runs.items():
                measured, count = _analyze(args.cu, args.gpu, extra, Path(scratch))
                kernels[label] = count
                if label not in best or measured["seconds"] < best[label]["seconds"]:
                    best[label] = measured
            nvcc_s = min(nvcc_s, _seconds(compile_command))
    print(f"{args.cu.name} on {args.gpu} ({arch})")
    print(f"nvcc -ptx: {nvcc_s:.2f} s (best of {2 * args.repeats})")
    missed = False
    for label, measured in best.items():
        seconds = measured["seconds"]
        own_mb, tools_mb = measured["own_kb"] / 1024, measured["tools_kb"] / 1024
        print(f"{label}: {kernels[label]} kernel instances in {seconds:.1f} s ="
              f" {seconds / nvcc_s:.1f}× nvcc -ptx; peak memory {own_mb:.0f} MB"
              f" (the tools it ran: {tools_mb:.0f} MB)")
    whole = best["whole file"]
    fast = whole["seconds"] < SECONDS_GOAL
    small = max(whole["own_kb"], whole["tools_kb"]) / 1024 < MEMORY_GOAL_MB
    print(f"whole file: {'meets' if fast else 'misses'} the {SECONDS_GOAL:.0f} s goal,"
          f" {'meets' if small else 'misses'} the {MEMORY_GOAL_MB:.0f} MB goal")
    missed = not (fast and small)
    return 1 if missed else 0


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def _analyze(source: Path, gpu: str, extra: list[str], scratch: Path) -> tuple[dict[str, float],
                                                                                  int]:
    """One `flipflop analyze` in its own process: its figures and how many kernels it reported."""
    figures = scratch / "figures.json"
    output = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(figures), "analyze", str(source), "--gpu", gpu,
         "--format", "json", *extra],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    measured: dict[str, float] = json.loads(figures.read_text())
    if measured["code"] != 0:
        raise SystemExit(f"flipflop analyze failed: {output.stderr}")
    return measured, len(json.loads(output.stdout)["kernels"])


if __name__ == "__main__":
    sys.exit(main())
