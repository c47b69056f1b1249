"""Following a launch's arguments across the host code: `case` labels, reassigned locals,
callers' constants, function-like macros, template instances; and loops bounded by the block.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flipflop.analysis import extract_features
from flipflop.ptx import parse_ptx
from flipflop.source import parse_source
from flipflop.source.instances import launches_of_instance, template_arguments
from flipflop.source.model import LaunchSite
from flipflop.toolchain import Toolchain, compile_to_ptx

KERNEL = "template <typename T, int B, bool P> __global__ void k(T* x, int n) {}\n"


def _site(body: str, before: str = "") -> LaunchSite:
    text = KERNEL + before + body
    (site,) = parse_source(text).launches
    return site


def test_a_case_label_gives_the_switched_variable_its_value() -> None:
    site = _site(
        "void f(int threads, float* x) {\n"
        "  dim3 block(threads, 1, 1);\n"
        "  switch (threads) {\n"
        "  case 64: break;\n"
        "  case 128: k<float, 128, true><<<4, block, threads * sizeof(float)>>>(x, threads);"
        " break;\n"
        "  }\n"
        "}\n"
    )
    assert site.block_folded.value == (128, 1, 1)
    assert site.shared_memory_folded.value == 512
    assert site.argument_values == (None, 128)


def test_a_case_reached_by_falling_through_says_nothing() -> None:
    site = _site(
        "void f(int threads, float* x) {\n"
        "  switch (threads) {\n"
        "  case 64:\n"
        "  case 128: k<float, 128, true><<<4, threads>>>(x, 1); break;\n"
        "  }\n"
        "}\n"
    )
    assert site.block_folded.value is None
    assert site.needs == ("threads",)


def test_an_equality_test_holds_in_its_then_branch() -> None:
    site = _site(
        "void f(int threads, int n, float* x) {\n"
        "  if (n > 0 && threads == 256) { k<float, 1, true><<<n / threads, threads>>>(x, n); }\n"
        "}\n"
    )
    assert site.block_folded.value == (256, 1, 1)


def test_the_assignment_that_reaches_a_launch_is_its_value() -> None:
    site = _site(
        "void f(float* x, bool big) {\n"
        "  int smem = 1024;\n"
        "  if (big) { smem = 4096; }\n"
        "  smem = 2048;\n"
        "  k<float, 1, true><<<4, 128, smem>>>(x, 1);\n"
        "}\n"
    )
    assert site.shared_memory_folded.value == 2048


def test_an_assignment_beside_the_launch_or_later_in_its_loop_stops_the_fold() -> None:
    beside = _site(
        "void f(float* x, bool big) {\n"
        "  int smem = 1024;\n"
        "  if (big) { smem = 4096; }\n"
        "  k<float, 1, true><<<4, 128, smem>>>(x, 1);\n"
        "}\n"
    )
    assert beside.shared_memory_folded.value is None
    looped = _site(
        "void f(float* x) {\n"
        "  int threads = 32;\n"
        "  for (int i = 0; i < 4; ++i) {\n"
        "    k<float, 1, true><<<4, threads>>>(x, 1);\n"
        "    threads *= 2;\n"
        "  }\n"
        "}\n"
    )
    assert looped.block_folded.value is None


def test_a_parameter_takes_the_constant_every_caller_passes() -> None:
    text = (
        KERNEL
        + "#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))\n"
        "void run(float* x, int n) {\n"
        "  dim3 grid(CEIL_DIV(n, 256));\n"
        "  k<float, 1, true><<<grid, 256>>>(x, n);\n"
        "}\n"
        "void dispatch(float* x, int which, int n) { if (which) run(x, n); else run(x, n); }\n"
        "int main() { const int size = 1 << 20; float* x = 0; dispatch(x, 1, size);"
        " return 0; }\n"
    )
    (site,) = parse_source(text).launches
    assert site.grid_folded.value == (4096, 1, 1)
    assert site.argument_values == (0, 1 << 20)  # `float* x = 0` folds too
    assert [axis.kind for axis in site.grid_axes] == ["covers", "fixed", "fixed"]


def test_callers_that_disagree_or_recurse_leave_the_parameter_open() -> None:
    text = (
        KERNEL
        + "void run(float* x, int n) { k<float, 1, true><<<n, 128>>>(x, n); }\n"
        "void again(float* x, int n) { if (n > 1) again(x, n - 1); run(x, n); }\n"
        "int main() { run(0, 64); run(0, 128); again(0, 8); return 0; }\n"
    )
    (site,) = parse_source(text).launches
    assert site.grid_folded.value is None
    assert site.needs == ("n",)


def test_a_value_read_at_run_time_is_asked_for_by_its_variable() -> None:
    site = _site(
        "int main(int argc, char** argv) {\n"
        "  const int n = argc > 1 ? atoi(argv[1]) : 1024;\n"
        "  float* x = 0;\n"
        "  k<float, 1, true><<<(n + 255) / 256, 256>>>(x, n);\n"
        "  return 0;\n"
        "}\n"
    )
    assert site.needs == ("n",)
    assert site.grid_axes[0].kind == "covers"


def test_a_grid_written_with_the_blocks_constants_follows_the_block() -> None:
    site = _site(
        "constexpr int THREADS = 256;\n"
        "void f(float* x, int rows) {\n"
        "  const int per_block = THREADS / 32;\n"
        "  dim3 block(THREADS);\n"
        "  k<float, 1, true><<<(rows + per_block - 1) / per_block, block>>>(x, rows);\n"
        "}\n"
    )
    assert site.grid_axes[0].kind == "fixed" and site.grid_axes[0].tied_to_block
    fixed = _site("void f(float* x, int B, int H) {\n"
                  "  k<float, 1, true><<<dim3(B, H), 256>>>(x, B);\n}\n")
    assert not any(axis.tied_to_block for axis in fixed.grid_axes)
    assert fixed.needs == ("B", "H")


def test_a_template_instance_gets_the_launches_that_write_its_arguments() -> None:
    text = (
        KERNEL
        + "template <typename T> void launch(T* x, int n) {\n"
        "  int smem = 256 * sizeof(T);\n"
        "  k<T, 256, true><<<n, 256, smem>>>(x, n);\n"
        "  k<T, 128, true><<<n, 128, smem>>>(x, n);\n"
        "  k<T, 256, false><<<n, 256, smem>>>(x, n);\n"
        "}\n"
        "template void launch<double>(double*, int);\n"
    )
    sites = parse_source(text).launches
    assert template_arguments("void k<double, 256u, true>(double*, int)") == (
        "double", "256u", "true")
    assert template_arguments("k<32>") == ("32",)
    [matched] = launches_of_instance(sites, "void k<double, 256u, true>(double*, int)")
    assert matched.line == sites[0].line
    # `sizeof(T)` with the instance's T.
    assert sites[0].shared_memory_folded.value is None
    assert matched.shared_memory_folded.value == 256 * 8
    assert [s.line for s in launches_of_instance(sites, "void k<double, 256u, false>(double*,"
                                                 " int)")] == [sites[2].line]
    assert launches_of_instance(sites, "void k<double, 64u, true>(double*, int)") == ()


def test_a_launch_inside_a_template_folds_with_the_instance_value() -> None:
    text = (
        KERNEL
        + "template <int BLOCK> void launch(float* x, int n) {\n"
        "  dim3 block(BLOCK);\n"
        "  k<float, BLOCK, true><<<(n + BLOCK - 1) / BLOCK, block>>>(x, n);\n"
        "}\n"
        "template void launch<512>(float*, int);\n"
    )
    (site,) = parse_source(text).launches
    assert site.block_folded.value is None
    [matched] = launches_of_instance((site,), "void k<float, 512, true>(float*, int)")
    assert matched.block_folded.value == (512, 1, 1)


@pytest.fixture(scope="module")
def reduction_loops(cuda_toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> str:
    source = tmp_path_factory.mktemp("loops") / "loops.cu"
    source.write_text(
        "__global__ void doubling(float* x) {\n"
        "  extern __shared__ float s[];\n"
        "  for (unsigned gap = 1; gap < blockDim.x; gap *= 2) {\n"
        "    if (threadIdx.x % (2 * gap) == 0) s[threadIdx.x] += s[threadIdx.x + gap];\n"
        "    __syncthreads();\n"
        "  }\n"
        "  x[blockIdx.x] = s[0];\n"
        "}\n"
        "__global__ void halving_to_a_warp(float* x) {\n"
        "  extern __shared__ float s[];\n"
        "  for (unsigned gap = blockDim.x / 2; gap > 32; gap >>= 1) {\n"
        "    if (threadIdx.x < gap) s[threadIdx.x] += s[threadIdx.x + gap];\n"
        "    __syncthreads();\n"
        "  }\n"
        "  x[blockIdx.x] = s[0];\n"
        "}\n"
    )
    compiled = compile_to_ptx(source, None, cuda_toolchain, "sm_86")
    assert compiled.ok, compiled.diagnostics
    return compiled.ptx


@pytest.mark.parametrize(
    ("kernel", "line", "trips"),
    [
        # 1, 2, 4, … below the block size
        ("doubling", 3, {32: 5, 96: 7, 256: 8, 1024: 10}),
        # blockDim.x / 2, / 4, … above 32
        ("halving_to_a_warp", 11, {32: 1, 96: 1, 256: 2, 1024: 4}),
    ],
)
def test_loops_bounded_by_the_block_size_have_trip_counts(
    reduction_loops: str, kernel: str, line: int, trips: dict[int, int]
) -> None:
    module = parse_ptx(reduction_loops, str(Path("loops.ptx")))
    [name] = [k.name for k in module.kernels if kernel in k.name]
    features = extract_features(module, name)
    [loop] = [f for f in features.factors if f.kind == "loop" and line in f.lines]
    assert not loop.assumed, loop.description
    for block, expected in trips.items():
        assert loop.expression.evaluate({"ntid.x": float(block)}) == expected, block


def test_instance_arguments_compare_as_the_demangler_spells_them() -> None:
    text = (
        "enum class Mode { fast, exact };\n"
        "template <typename T, Mode M> __global__ void k(T* x) {}\n"
        "void f(unsigned* u, float* x) {\n"
        "  k<unsigned, Mode::exact><<<1, 32>>>(u);\n"
        "  k<float, Mode::fast><<<1, 64>>>(x);\n"
        "}\n"
    )
    exact, fast = parse_source(text).launches
    assert launches_of_instance((exact, fast), "void k<unsigned int, (Mode)1>(unsigned int*)") \
        == (exact,)
    assert launches_of_instance((exact, fast), "void k<float, (Mode)0>(float*)") == (fast,)
