"""Static features on the shared corpus of real kernels (tests/corpus), compiled by nvcc."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cuda_toolchain import nvcc_for_tests
from flipflop.analysis import KernelFeatures, extract_features
from flipflop.analysis.report import features_json
from flipflop.launch import LaunchShape
from flipflop.ptx import parse_ptx

CORPUS = Path(__file__).parent / "corpus"
NVCC = nvcc_for_tests()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")


@pytest.fixture(scope="module")
def ptx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("corpus_ptx")


def features_of(ptx_dir: Path, file: str, name: str = "", arch: str = "sm_80") -> KernelFeatures:
    assert NVCC is not None
    ptx = ptx_dir / f"{file}.{arch}.ptx"
    if not ptx.exists():
        subprocess.run(
            [
                NVCC,
                "-ptx",
                "-lineinfo",
                f"-arch={arch}",
                str(CORPUS / f"{file}.cu"),
                "-o",
                str(ptx),
            ],
            check=True,
            capture_output=True,
        )
    module = parse_ptx(ptx.read_text(), str(ptx))
    matches = [k.name for k in module.kernels if name in k.name]
    assert len(matches) == 1, matches
    return extract_features(module, matches[0])


def by_position(features: KernelFeatures, values: dict[int, float]) -> dict[str, float]:
    return {features.parameter_names[index]: value for index, value in values.items()}


SHAPE = LaunchShape(block=(256, 1, 1), grid=(64, 1, 1))
THREADS = 256 * 64


def test_saxpy_grid_stride(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "saxpy")
    work = features.work(SHAPE, by_position(features, {0: 1 << 20}))
    elements = (1 << 20) / THREADS
    assert work.fp32_flops == pytest.approx(2 * elements)
    assert work.global_load_sectors == pytest.approx(elements * 2 * 4 / 32)
    assert features.work_depends_on_block is False
    assert features.assumptions == ()


def test_vector_add(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "vector_add")
    work = features.work(SHAPE, by_position(features, {3: THREADS}))
    assert work.fp32_flops == pytest.approx(1.0)
    assert work.global_load_bytes == pytest.approx(8.0)
    assert {s.pattern for s in work.sites} == {"coalesced"}


def test_guard_idle_threads(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "guard_idle_threads")
    work = features.work(SHAPE, by_position(features, {3: 64}))
    assert work.active_fraction == pytest.approx(0.25)
    report = features_json(features, SHAPE, by_position(features, {3: 64}))
    assert report["divergence"]["guards"][0]["lines"] == [7]
    (loop,) = report["loops"]
    assert loop["assumed"] is False
    assert loop["lines"] == [12]


def test_transpose_tiled_padding(ptx_dir: Path) -> None:
    shape = LaunchShape(block=(32, 8, 1), grid=(32, 32, 1))
    params = {2: 1024, 3: 1024}
    plain = features_of(ptx_dir, "transpose_tiled", "ILi0E")
    padded = features_of(ptx_dir, "transpose_tiled", "ILi1E")
    plain_loads = [
        s for s in plain.work(shape, by_position(plain, params)).sites
        if s.space == "shared" and not s.is_store
    ]  # fmt: skip
    padded_loads = [
        s for s in padded.work(shape, by_position(padded, params)).sites
        if s.space == "shared" and not s.is_store
    ]  # fmt: skip
    assert plain_loads and {s.bank_conflict_degree for s in plain_loads} == {32.0}
    assert padded_loads and {s.bank_conflict_degree for s in padded_loads} == {1.0}
    assert plain.uses_tid_y and padded.uses_tid_y


def test_sgemm_tiled_loop_over_k(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "sgemm_tiled")
    shape = LaunchShape(block=(32, 32, 1), grid=(32, 32, 1))
    work = features.work(shape, by_position(features, {0: 1024, 1: 1024, 2: 1024}))
    assert features.uses_tid_y
    assert work.barriers == pytest.approx(2 * 1024 / 32)  # two __syncthreads per tile
    assert work.fp32_flops == pytest.approx(2 * 1024)  # one fma per k
    # Per 32-wide tile a thread stores one element of each tile and reads Bs[k][tx] 32 times
    # (one conflict-free wavefront each) and As[ty][k..k+3] as eight LDS.128, as ptxas merges
    # them (`flipflop.analysis.vectorize`): 4 wavefronts each, one register of 32 lanes a cycle.
    tiles = 1024 / 32
    assert work.shared_accesses == pytest.approx(tiles * (2 + 32 + 8))
    assert work.shared_wavefronts == pytest.approx(tiles * (2 + 32 + 8 * 4))


def test_histogram_shared_atomics(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "histogram_shared")
    work = features.work(SHAPE, by_position(features, {1: 4 * THREADS}))
    assert work.atomics == pytest.approx(4 + 1)  # one shared atomic per byte, one flush
    shared_atomics = [s for s in work.sites if s.space == "shared" and s.is_store is False]
    assert any(s.pattern == "indirect" for s in shared_atomics)
    assert any("loaded data" in text for text in features.assumptions)


def test_softmax_block_stride_rows(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "softmax")
    report = features_json(features, SHAPE, by_position(features, {2: 4096}))
    row_loops = [loop for loop in report["loops"] if loop["lines"] in ([47], [53], [59])]
    assert len(row_loops) == 3
    assert all(loop["trip_count"] == pytest.approx(4096 / 256) for loop in row_loops)
    assert features.work_depends_on_block is False
    assert report["instruction_mix"]["shuffles"] > 0
    json.dumps(report)


def test_mma_sync_gemm_tensor_flops(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "mma_sync_m16n8k16")
    work = features.work(SHAPE, by_position(features, {3: 4096, 4: 4096, 5: 4096}))
    per_mma = 2 * 16 * 8 * 16 / 32
    assert work.tensor_flops == pytest.approx(4096 / 16 * per_mma, rel=0.01)


def test_wgmma_tma_tensor_flops_and_bulk_bytes(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "wgmma_tma", arch="sm_90a")
    shape = LaunchShape(block=(128, 1, 1), grid=(64, 1, 1))
    work = features.work(shape, by_position(features, {4: 4096}))
    steps = 4096 / 64
    assert work.tensor_flops == pytest.approx(steps * 4 * 2 * 64 * 64 * 16 / 128)
    # Thread 0 expects two 64x64 half tiles per step: spread over the block's 128 threads.
    assert work.async_copy_bytes == pytest.approx(steps * 2 * 64 * 64 * 2 / 128)


def test_local_array_is_local_traffic(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "local_array_runtime_index")
    work = features.work(SHAPE, by_position(features, {2: THREADS}))
    assert work.local_bytes > 0
    assert work.dram_bytes >= work.local_bytes


def test_noinline_calls_are_folded(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "noinline_calls")
    callees = {call.callee for call in features.calls}
    assert {"_Z10polynomialPKfif", "_Z13collatz_stepsji", "_Z14median_of_ninePKf"} <= callees
    work = features.work(SHAPE, by_position(features, {1: 8, 5: THREADS}))
    assert work.fp32_flops > 0
    assert any("collatz" in text for text in features.assumptions)


def test_warp_shuffle_reduction(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "reduce_warp_shuffle")
    work = features.work(SHAPE, by_position(features, {2: THREADS}))
    # Two warp reductions of five steps: every thread runs the first, only warp 0 (32 of the
    # block's 256 threads, `if (warp == 0)`, found by interpreting the branch) the second.
    assert work.shuffles == pytest.approx(5 + 5 * 32 / 256)


def test_templated_block_sizes(ptx_dir: Path) -> None:
    for name, block, items in (("ILi128ELi1E", 128, 1), ("ILi256ELi4E", 256, 4),
                               ("ILi512ELi8E", 512, 8)):  # fmt: skip
        features = features_of(ptx_dir, "templated_block_size", name)
        shape = LaunchShape(block=(block, 1, 1), grid=(64, 1, 1))
        n = block * items * 64
        work = features.work(shape, by_position(features, {2: n}))
        assert work.fp32_flops == pytest.approx(items, rel=0.03)


def test_cp_async_pipeline_bytes(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "cp_async_pipeline")
    work = features.work(SHAPE, by_position(features, {2: THREADS}))
    assert work.async_copy_bytes > 0
    assert not any(s.operation.startswith("cp.async.commit") for s in features.sites)


def test_extern_c_names(ptx_dir: Path) -> None:
    features = features_of(ptx_dir, "extern_c_relu", "relu_inplace")
    assert features.name == "relu_inplace"
    assert features.work(SHAPE, {}).global_load_bytes > 0
