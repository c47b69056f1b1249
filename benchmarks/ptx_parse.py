"""PTX parse-to-IR throughput beside a plain regex tokenizer, on the same large PTX, in one run.

    .venv/bin/python benchmarks/ptx_parse.py [--min-mb 20] [--attention-min-mb 30] [--repeat 3]
                                             [--ptx FILE]

Two inputs, both compiled by nvcc at benchmark time and cached under benchmarks/.cache/:
- `unrolled`: a heavily unrolled templated kernel for many template values, without inline asm
  (at least --min-mb megabytes);
- `attention`: tests/corpus/attention_kv_cache_half.cu, a fp16/bf16 decoding-attention kernel,
  instantiated for many head sizes, warp counts and unroll factors until the PTX has at least
  --attention-min-mb megabytes: the packed half intrinsics put tens of thousands of inline-asm
  scopes (`{.reg .f16 low,high; ...}`) into it, as in real attention benchmarks.
With --ptx, only that file is measured.

For each input: the best process CPU time of the tokenizer and of parse_ptx over --repeat
alternating runs (both see the same load on a shared machine), their ratio, and the peak
resident memory of a child process that reads and parses the file, as a multiple of the file's
size. The goals: parse throughput at least half the tokenizer's, peak memory at most 16 times
the PTX (issue 14); the exit status is 1 when one is missed.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import math
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from flipflop.ptx import parse_ptx
from flipflop.ptx.grammar import ptx_parser
from flipflop.toolchain.discovery import find_toolchain

CACHE = Path(__file__).resolve().parent / ".cache"
ATTENTION_SOURCE = (
    Path(__file__).resolve().parents[1] / "tests" / "corpus" / "attention_kv_cache_half.cu"
)
RATIO_GOAL = 0.5
MEMORY_GOAL = 16.0

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


# The attention kernel's configurations: element type, head size, warps per block, and how many
# cached positions each warp has in flight. All 256 give 32 MB of PTX for sm_80 (90,000 inline-asm
# statements, as many as the 45 MB multi-head attention benchmark of HeCBench has).
_ATTENTION_GRID = [
    (element, head_dim, warps, unroll)
    for unroll in (4, 8, 16, 24)
    for head_dim in (64, 128, 192, 256, 320, 384, 448, 512)
    for warps in (2, 4, 8, 16)
    for element in ("__half", "__nv_bfloat16")
]


def attention_instances() -> list[str]:
    """Explicit instantiations of the attention kernel, in an order whose every prefix mixes
    small and large configurations (so that a prefix's size per kernel predicts the rest)."""
    ordered = sorted(_ATTENTION_GRID, key=lambda c: hashlib.sha256(repr(c).encode()).digest())
    return [
        f"template __global__ void decode_attention<{element}, {head_dim}, {warps}, {unroll}>("
        f"const {element}*, const {element}*, const {element}*, const int*, {element}*, int, "
        "int, float);"
        for element, head_dim, warps, unroll in ordered
    ]


def build_attention_ptx(min_mb: float) -> Path:
    """Compile instantiations of the corpus attention kernel until the PTX has `min_mb` MB
    (or every configuration is in)."""
    source_text = ATTENTION_SOURCE.read_text(encoding="utf-8")
    key = hashlib.sha256(source_text.encode()).hexdigest()[:12]
    CACHE.mkdir(parents=True, exist_ok=True)
    for existing in sorted(CACHE.glob(f"attention_{key}x*.ptx")):
        if existing.stat().st_size >= min_mb * 1e6:
            return existing
    everything = len(_ATTENTION_GRID)
    sample = _compile_attention(source_text, key, 16)
    per_kernel_mb = sample.stat().st_size / 1e6 / 16
    instances = min(everything, math.ceil(min_mb * 1.05 / per_kernel_mb))
    while True:
        print(f"compiling {instances} attention kernels of ~{per_kernel_mb:.2f} MB PTX each...")
        target = _compile_attention(source_text, key, instances)
        megabytes = target.stat().st_size / 1e6
        if megabytes >= min_mb or instances == everything:
            return target
        per_kernel_mb = megabytes / instances
        instances = min(everything, math.ceil(min_mb * 1.05 / per_kernel_mb))


def _compile_attention(source_text: str, key: str, instances: int) -> Path:
    source = CACHE / f"attention_{key}x{instances}.cu"
    target = source.with_suffix(".ptx")
    if target.exists():
        return target
    chosen = attention_instances()[:instances]
    source.write_text(source_text + "\n" + "\n".join(chosen) + "\n", encoding="utf-8")
    partial = target.with_suffix(".partial")
    nvcc = find_toolchain().nvcc
    subprocess.run(
        [str(nvcc), "-ptx", "-lineinfo", "-arch=sm_80", str(source), "-o", str(partial)],
        check=True,
    )
    partial.replace(target)
    return target


def cpu_seconds(action: Callable[[], object]) -> float:
    """Process CPU time of one run, with the cyclic garbage collector paused (parse_ptx pauses
    it itself; a tokenizer building millions of tuples would otherwise pay for collections that
    parse_ptx does not). The result is freed after the clock stops."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        result = action()
        elapsed = time.process_time() - start
    finally:
        gc.enable()
    del result
    return elapsed


def peak_memory_ratio(path: Path) -> float:
    """Peak resident memory of a fresh process that reads and parses `path`, over its size."""
    child = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--peak-memory-of", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    peak_bytes = int(child.stdout.split()[-1])
    return peak_bytes / path.stat().st_size


def _report_peak_memory(path: Path) -> int:
    text = path.read_text(encoding="utf-8")
    parse_ptx(text, str(path))
    print(_peak_resident_bytes())
    return 0


def _peak_resident_bytes() -> int:
    """This process's peak resident memory. Linux's VmHWM belongs to the process image, while
    ru_maxrss carries over the high-water mark of the (v)forked parent across exec."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        status = ""
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def measure(name: str, path: Path, repeat: int) -> bool:
    """Print one input's figures; True when it meets both goals."""
    text = path.read_text(encoding="utf-8")
    megabytes = len(text.encode("utf-8")) / 1e6
    tokenizer_times, parser_times = [], []
    for _ in range(repeat):
        tokenizer_times.append(cpu_seconds(lambda: tokenize(text)))
        parser_times.append(cpu_seconds(lambda: parse_ptx(text, str(path))))
    tokenizer_s, parser_s = min(tokenizer_times), min(parser_times)
    module = parse_ptx(text, str(path))
    instructions = sum(f.instruction_count for f in module.functions)
    scopes = text.count("// begin inline asm")
    del module
    memory = peak_memory_ratio(path)
    tokenizer_rate, parser_rate = megabytes / tokenizer_s, megabytes / parser_s
    ratio = parser_rate / tokenizer_rate
    print(f"== {name}: {path.name}, {megabytes:.1f} MB, {instructions} instructions, "
          f"{scopes} inline-asm statements")
    print(f"tokenizer   {tokenizer_rate:6.2f} MB/s  ({tokenizer_s:.2f} s CPU, best of {repeat})")
    print(f"parse_ptx   {parser_rate:6.2f} MB/s  ({parser_s:.2f} s CPU, best of {repeat})")
    print(f"ratio       {ratio:6.2f}  (goal >= {RATIO_GOAL:.2f}: "
          f"{'met' if ratio >= RATIO_GOAL else 'NOT met'})")
    print(f"peak memory {memory:6.2f} x the PTX  (goal <= {MEMORY_GOAL:.0f}: "
          f"{'met' if memory <= MEMORY_GOAL else 'NOT met'})")
    return ratio >= RATIO_GOAL and memory <= MEMORY_GOAL


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-mb", type=float, default=20.0)
    parser.add_argument("--attention-min-mb", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ptx", type=Path, help="measure this PTX file instead")
    parser.add_argument("--peak-memory-of", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peak_memory_of is not None:
        return _report_peak_memory(args.peak_memory_of)
    if args.ptx is not None:
        inputs = [("given", args.ptx)]
    else:
        inputs = [
            ("unrolled", build_large_ptx(args.min_mb)),
            ("attention", build_attention_ptx(args.attention_min_mb)),
        ]
    ptx_parser()  # grammar construction is a one-time cost, not throughput
    met = [measure(name, path, args.repeat) for name, path in inputs]
    return 0 if all(met) else 1


if __name__ == "__main__":
    sys.exit(main())
