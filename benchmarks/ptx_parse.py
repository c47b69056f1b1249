"""PTX parse-to-IR throughput beside a plain regex tokenizer, on the same large PTX, in one run.

    .venv/bin/python benchmarks/ptx_parse.py [--min-mb 20] [--repeat 3] [--ptx FILE]

Without --ptx it builds a PTX file of at least --min-mb megabytes by compiling a heavily unrolled
templated kernel for many template values (cached under benchmarks/.cache/). The goal is a
parse throughput of at least half the tokenizer's (issue 2, item 8).
"""

from __future__ import annotations

import argparse
import gc
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from flipflop.ptx import parse_ptx
from flipflop.ptx.grammar import ptx_parser
from flipflop.toolchain.discovery import find_toolchain

CACHE = Path(__file__).resolve().parent / ".cache"

# Every step of the unrolled loop loads a vector, does address arithmetic, a shuffle under a
# guard, shared-memory traffic and a chain of FMAs: the statement mix of real tiled kernels.
KERNEL_SOURCE = r"""
#include <cuda_fp16.h>
template <int STEPS, int WIDTH>
__global__ void __launch_bounds__(256) unrolled(const float4* __restrict__ in, float* out,
                                                __half* halves, int n, float scale) {
  __shared__ float tile[256 + WIDTH];
  float acc[WIDTH];
  int base = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) acc[j] = 0.0f;
#pragma unroll
  for (int i = 0; i < STEPS; ++i) {
    int idx = (base + i * 97) % n;
    float4 v = in[idx];
    float s = v.x * scale + v.y;
    if (idx & 1) s = __shfl_xor_sync(0xffffffff, s, i & 31);
    tile[(threadIdx.x + i) & 255] = s;
    __syncthreads();
    s += tile[(threadIdx.x + 3 * i) & 255];
    halves[(idx + i) % n] = __float2half(s * v.w);
#pragma unroll
    for (int j = 0; j < WIDTH; ++j) acc[j] = fmaf(acc[j], s, v.z + j) - v.w * acc[(j + 1) % WIDTH];
  }
  float total = 0.0f;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) total += acc[j];
  if (base < n) out[base] = total;
}
"""

# A plain tokenizer: one regular expression over every token, as a lexer would read PTX.
TOKEN = re.compile(
    r"""(?P<space>\s+)|(?P<comment>//[^\n]*)|(?P<string>"[^"\n]*")
    |(?P<register>%[A-Za-z_$][\w$]*(?:\.[xyz])?)|(?P<directive>\.[A-Za-z_][\w:]*)
    |(?P<number>0[fFdD][0-9a-fA-F]+|0[xX][0-9a-fA-F]+U?|\d+(?:\.\d+)?U?)
    |(?P<word>[A-Za-z_$][\w$]*(?:\.[\w:]+)*)|(?P<punct>[{}\[\]();,:+\-|!@<>=_])""",
    re.VERBOSE,
)
_SKIPPED = ("space", "comment")


def tokenize(text: str) -> list[tuple[str | None, str]]:
    return [(m.lastgroup, m.group()) for m in TOKEN.finditer(text) if m.lastgroup not in _SKIPPED]


def build_large_ptx(min_mb: float, steps: int = 256) -> Path:
    """Compile instantiations of the unrolled kernel until the PTX is at least `min_mb` MB."""
    CACHE.mkdir(parents=True, exist_ok=True)
    for existing in sorted(CACHE.glob(f"unrolled_{steps}x*.ptx")):
        if existing.stat().st_size >= min_mb * 1e6:
            return existing
    one_kernel_mb = _compile(steps, 1).stat().st_size / 1e6
    instances = math.ceil(min_mb * 1.05 / one_kernel_mb)
    print(f"compiling {instances} kernels of ~{one_kernel_mb:.2f} MB PTX each...", flush=True)
    return _compile(steps, instances)


def _compile(steps: int, instances: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    source = CACHE / f"unrolled_{steps}x{instances}.cu"
    target = source.with_suffix(".ptx")
    if target.exists():
        return target
    explicit = [
        f"template __global__ void unrolled<{steps + index}, {4 + index % 5}>"
        "(const float4*, float*, __half*, int, float);"
        for index in range(instances)
    ]
    source.write_text(KERNEL_SOURCE + "\n".join(explicit) + "\n", encoding="utf-8")
    nvcc = find_toolchain().nvcc
    partial = target.with_suffix(".partial")
    subprocess.run(
        [str(nvcc), "-ptx", "-lineinfo", "-arch=sm_80", str(source), "-o", str(partial)],
        check=True,
    )
    partial.replace(target)
    return target


def best_seconds(action: Callable[[], object], repeat: int) -> float:
    """Best wall time of `repeat` runs, with the garbage collector paused for both contenders
    (parse_ptx pauses it itself; a tokenizer building millions of tuples would otherwise pay
    for collections that parse_ptx does not)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            action()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-mb", type=float, default=20.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ptx", type=Path, help="measure this PTX file instead")
    args = parser.parse_args(argv)
    path = args.ptx or build_large_ptx(args.min_mb)
    text = path.read_text(encoding="utf-8")
    megabytes = len(text.encode("utf-8")) / 1e6
    ptx_parser()  # grammar construction is a one-time cost, not throughput

    tokenizer_s = best_seconds(lambda: tokenize(text), args.repeat)
    parser_s = best_seconds(lambda: parse_ptx(text, str(path)), args.repeat)
    module = parse_ptx(text, str(path))
    instructions = sum(f.instruction_count for f in module.functions)
    tokenizer_rate, parser_rate = megabytes / tokenizer_s, megabytes / parser_s
    print(
        f"file        {path.name}: {megabytes:.1f} MB, {len(module.functions)} functions, "
        f"{instructions} instructions"
    )
    print(f"tokenizer   {tokenizer_rate:6.2f} MB/s  ({tokenizer_s:.2f} s, best of {args.repeat})")
    print(f"parse_ptx   {parser_rate:6.2f} MB/s  ({parser_s:.2f} s, best of {args.repeat})")
    ratio = parser_rate / tokenizer_rate
    print(f"ratio       {ratio:6.2f}  (goal >= 0.50: {'met' if ratio >= 0.5 else 'NOT met'})")
    return 0 if ratio >= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
