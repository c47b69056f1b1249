"""Feature extraction time beside parse time, on the front-end benchmark's large PTX.

    .venv/bin/python benchmarks/features.py [--min-mb 20] [--repeat 5] [--ptx FILE] [--callgrind]

Prints parse time and feature time (every kernel of the module, callees folded), both as process
CPU time, best of --repeat, and the cost of one `work()` evaluation. The goal is features
adding at most 50% to parse (issue 3).

Parse and feature runs alternate, so that both see the same load on a shared machine; the ratio
is of the two bests, and beside it the median of the ratios of each alternating pair.
`extract_features` pauses the cyclic garbage collector itself, as `parse_ptx` does, so neither
pays for collections that rescan the other's objects.

Wall and CPU clocks on a shared machine move by tens of percent from run to run. `--callgrind`
adds a figure that does not: instructions executed, counted by valgrind's callgrind on the
one-kernel unrolled PTX (callgrind runs programs ~50x slower, hence the smaller file). Only the
parse and the feature extraction are counted: collection is switched on while
`sys.call_tracing` runs them, and a profile part is written after each. Instruction counts miss
cache misses, which weigh more on features (pointer chasing over the parsed module) than on
parse, so this ratio reads lower than the clock's; it is the figure to compare between changes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
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

# callgrind's client requests are C macros; `sys.call_tracing` is a C function that nothing
# else here calls, so toggling collection on it brackets exactly the measured Python call.
_CALLGRIND_TOGGLE = "sys_call_tracing"
_CALLGRIND_PTX_MB = 0.5  # the one-kernel unrolled PTX (~0.53 MB)


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
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ptx", type=Path, help="measure this PTX file instead")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="also count instructions under valgrind (slow: about a minute)",
    )
    parser.add_argument("--instructions-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.instructions_child is not None:
        return _instructions_child(args.instructions_child)
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
    pair_ratio = statistics.median(f / p for f, p in zip(features_times, parse_times, strict=True))
    kernels = [extract_features(module, kernel.name) for kernel in module.kernels]
    shape = LaunchShape(block=(256, 1, 1), grid=(1024, 1, 1))
    params = {name: 1 << 20 for name in kernels[0].parameter_names} if kernels else {}
    work_s = _per_call(lambda: [k.work(shape, params) for k in kernels], len(kernels))

    print(f"file        {path.name}: {megabytes:.1f} MB, {len(module.kernels)} kernels")
    print(f"parse       {parse_s:7.2f} s CPU  (best of {args.repeat})")
    print(
        f"features    {features_s:7.2f} s  (+{100 * features_s / parse_s:.0f}% of parse; "
        f"median of alternating pairs +{100 * pair_ratio:.0f}%)"
    )
    print(f"parse+feat  {parse_s + features_s:7.2f} s")
    print(f"work()      {1e3 * work_s:7.3f} ms per kernel and launch shape")
    if args.callgrind:
        _print_instruction_counts()
    met = features_s <= 0.5 * parse_s
    print(f"goal        features <= 50% of parse: {'met' if met else 'NOT met'}")
    return 0 if met else 1


def _per_call(action: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(5):
        action()
    return (time.process_time() - start) / (5 * max(1, calls))


def _print_instruction_counts() -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("callgrind   valgrind is not installed: no instruction counts")
        return
    path = build_large_ptx(_CALLGRIND_PTX_MB)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            valgrind, "--tool=callgrind", "--collect-atstart=no",
            f"--toggle-collect={_CALLGRIND_TOGGLE}", f"--dump-after={_CALLGRIND_TOGGLE}",
            f"--callgrind-out-file={out}", sys.executable, __file__,
            "--instructions-child", str(path),
        ]  # fmt: skip
        # A fixed hash seed makes dictionary layouts, and so the counts, repeat exactly.
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"callgrind   failed: {done.stderr.strip().splitlines()[-1:]}")
            return
        parse_ir, features_ir = (_callgrind_total(Path(f"{out}.{part}")) for part in (1, 2))
    print(
        f"callgrind   {path.name}: parse {parse_ir / 1e6:.0f} M instructions, features "
        f"{features_ir / 1e6:.0f} M (+{100 * features_ir / parse_ir:.0f}% of parse)"
    )


def _callgrind_total(profile: Path) -> int:
    found = re.search(r"^totals:\s*(\d+)", profile.read_text(encoding="utf-8"), re.MULTILINE)
    if found is None:
        raise SystemExit(f"{profile}: no totals line in the callgrind profile")
    return int(found.group(1))


def _instructions_child(path: Path) -> int:
    """Runs under callgrind: setup uncounted, then one parse and one feature extraction, each
    inside `sys.call_tracing` so that each is counted and dumped on its own."""
    text = path.read_text(encoding="utf-8")
    ptx_parser()
    module = parse_ptx(text, str(path))
    sys.call_tracing(lambda: parse_ptx(text, str(path)), ())
    sys.call_tracing(features_of_every_kernel, (module,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
