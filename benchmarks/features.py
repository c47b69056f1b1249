"""Feature extraction time beside parse time, on the front-end benchmark's large PTX.

    .venv/bin/python benchmarks/features.py [--min-mb 20] [--repeat 3] [--ptx FILE]

Prints parse time and feature time (every kernel of the module, callees folded), both as process
CPU time, best of --repeat, and the cost of one `work()` evaluation. The goal is features
adding at most 50% to parse (issue 3).

Parse and feature runs alternate, so that both see the same load on a shared machine; the ratio
is of the two bests. `extract_features` pauses the cyclic garbage collector itself, as
`parse_ptx` does, so neither pays for collections that rescan the other's objects.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flipflop.analysis import extract_features
from flipflop.ir import Module
from flipflop.launch import LaunchShape
from flipflop.ptx import parse_ptx
from flipflop.ptx.grammar import ptx_parser
from ptx_parse import build_large_ptx


def cpu_seconds(action: Callable[[], object]) -> float:
    """Process CPU time of one run: steadier than wall time on a shared machine. The result
    lives until the clock has stopped, so freeing it (a whole module for parse_ptx) is not
    charged to the run."""
    start = time.process_time()
    result = action()
    elapsed = time.process_time() - start
    del result
    return elapsed


def features_of_every_kernel(module: Module) -> int:
    return len([extract_features(module, kernel.name) for kernel in module.kernels])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--min-mb", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ptx", type=Path, help="measure this PTX file instead")
    args = parser.parse_args(argv)
    path = args.ptx or build_large_ptx(args.min_mb)
    text = path.read_text(encoding="utf-8")
    megabytes = len(text.encode("utf-8")) / 1e6
    ptx_parser()  # grammar construction is a one-time cost

    module = parse_ptx(text, str(path))
    parse_times: list[float] = []
    features_times: list[float] = []
    for _ in range(args.repeat):
        parse_times.append(cpu_seconds(lambda: parse_ptx(text, str(path))))
        features_times.append(cpu_seconds(lambda: features_of_every_kernel(module)))
    parse_s, features_s = min(parse_times), min(features_times)
    kernels = [extract_features(module, kernel.name) for kernel in module.kernels]
    shape = LaunchShape(block=(256, 1, 1), grid=(1024, 1, 1))
    params = {name: 1 << 20 for name in kernels[0].parameter_names} if kernels else {}
    work_s = _per_call(lambda: [k.work(shape, params) for k in kernels], len(kernels))

    print(f"file        {path.name}: {megabytes:.1f} MB, {len(module.kernels)} kernels")
    print(f"parse       {parse_s:7.2f} s CPU  (best of {args.repeat})")
    print(f"features    {features_s:7.2f} s  (+{100 * features_s / parse_s:.0f}% of parse)")
    print(f"parse+feat  {parse_s + features_s:7.2f} s")
    print(f"work()      {1e3 * work_s:7.3f} ms per kernel and launch shape")
    met = features_s <= 0.5 * parse_s
    print(f"goal        features <= 50% of parse: {'met' if met else 'NOT met'}")
    return 0 if met else 1


def _per_call(action: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(5):
        action()
    return (time.process_time() - start) / (5 * max(1, calls))


if __name__ == "__main__":
    sys.exit(main())
