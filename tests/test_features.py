"""Static features on hand-written kernels whose answers follow on paper (tests/feature_kernels).

Each kernel is compiled with the real nvcc (`-ptx -lineinfo -arch=sm_80`) and parsed with our
parser; the numbers asserted are derived in the kernels' comments and below.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cuda_toolchain import nvcc_for_tests
from flipflop.analysis import FeatureError, KernelFeatures, extract_features
from flipflop.analysis.report import features_json
from flipflop.ir import Module
from flipflop.launch import LaunchShape
from flipflop.ptx import parse_ptx

KERNELS = Path(__file__).parent / "feature_kernels"
NVCC = nvcc_for_tests()
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")


def compile_ptx(source: Path, out_dir: Path, arch: str = "sm_80") -> Module:
    assert NVCC is not None
    ptx = out_dir / f"{source.stem}.{arch}.ptx"
    if not ptx.exists():
        subprocess.run(
            [NVCC, "-ptx", "-lineinfo", f"-arch={arch}", str(source), "-o", str(ptx)],
            check=True,
            capture_output=True,
        )
    return parse_ptx(ptx.read_text(), str(ptx))


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Module]:
    out = tmp_path_factory.mktemp("feature_ptx")
    return {path.stem: compile_ptx(path, out) for path in sorted(KERNELS.glob("*.cu"))}


def kernel(modules: dict[str, Module], file: str, name: str) -> KernelFeatures:
    module = modules[file]
    matches = [k.name for k in module.kernels if name in k.name]
    assert len(matches) == 1, matches
    return extract_features(module, matches[0])


def launch(block: tuple[int, int, int], grid: tuple[int, int, int]) -> LaunchShape:
    return LaunchShape(block=block, grid=grid)


def param(features: KernelFeatures, index: int) -> str:
    return features.parameter_names[index]


# --------------------------------------------------------------------------- saxpy


def test_saxpy_two_coalesced_loads_one_store_two_flops(modules: dict[str, Module]) -> None:
    features = kernel(modules, "saxpy", "saxpy")
    shape = launch((256, 1, 1), (4, 1, 1))
    work = features.work(shape, {param(features, 0): 1024})  # n = every launched thread
    assert work.fp32_flops == pytest.approx(2.0)
    assert work.global_load_bytes == pytest.approx(8.0)
    assert work.global_store_bytes == pytest.approx(4.0)
    # Coalesced 4-byte accesses: 4 sectors per 32-lane request, 1/8 sector per thread each.
    assert work.global_load_sectors == pytest.approx(2 * 4 / 32)
    assert work.global_store_sectors == pytest.approx(4 / 32)
    global_sites = [s for s in work.sites if s.space == "global"]
    assert {s.pattern for s in global_sites} == {"coalesced"}
    assert all(s.lines == (6,) for s in global_sites)
    assert work.active_fraction == pytest.approx(1.0)


def test_saxpy_guard_idles_threads_past_n(modules: dict[str, Module]) -> None:
    features = kernel(modules, "saxpy", "saxpy")
    work = features.work(launch((256, 1, 1), (4, 1, 1)), {param(features, 0): 512})
    assert work.active_fraction == pytest.approx(0.5)
    assert work.fp32_flops == pytest.approx(1.0)  # averaged over every launched thread
    assert 5 in work.idle_lines
    assert features.uses_tid_y is False
    assert features.work_depends_on_block is True


# --------------------------------------------------------------------------- coalescing


def test_stride_32_loads_take_32_sectors_per_request(modules: dict[str, Module]) -> None:
    features = kernel(modules, "strided", "strided_read")
    work = features.work(launch((256, 1, 1), (8, 1, 1)), {})
    (load,) = [s for s in work.sites if not s.is_store]
    assert load.pattern == "strided"
    assert load.stride_bytes == 128
    assert load.sectors == pytest.approx(1.0)  # 32 sectors per request / 32 lanes
    (store,) = [s for s in work.sites if s.is_store]
    assert store.pattern == "coalesced"


def test_naive_transpose_reads_coalesced_writes_strided(modules: dict[str, Module]) -> None:
    features = kernel(modules, "transpose", "transpose_naive")
    assert features.uses_tid_y is True
    params = {param(features, 2): 1024, param(features, 3): 1024}
    work = features.work(launch((32, 8, 1), (32, 128, 1)), params)
    (read,) = [s for s in work.sites if not s.is_store]
    (write,) = [s for s in work.sites if s.is_store]
    assert read.pattern == "coalesced"
    assert read.sectors == pytest.approx(4 / 32)
    assert write.pattern == "strided"
    assert write.stride_bytes == 4 * 1024
    assert write.sectors == pytest.approx(1.0)


def test_narrow_blocks_split_a_warp_over_rows(modules: dict[str, Module]) -> None:
    """With 16-wide blocks a warp covers two rows: the coalesced read needs 2 segments."""
    features = kernel(modules, "transpose", "transpose_naive")
    params = {param(features, 2): 1024, param(features, 3): 1024}
    work = features.work(launch((16, 16, 1), (64, 64, 1)), params)
    (read,) = [s for s in work.sites if not s.is_store]
    assert read.sectors == pytest.approx(4 / 32)  # 2 rows x 64 bytes = 4 sectors, not 2


def test_padded_tile_has_no_bank_conflicts(modules: dict[str, Module]) -> None:
    features = kernel(modules, "transpose", "transpose_padded")
    work = features.work(launch((32, 8, 1), (32, 32, 1)), {})
    shared = [s for s in work.sites if s.space == "shared"]
    assert shared and all(s.bank_conflict_degree == pytest.approx(1.0) for s in shared)
    assert work.shared_wavefronts == pytest.approx(work.shared_accesses)
    assert work.shared_accesses == pytest.approx(8.0)  # 4 stores + 4 loads per thread


def test_unpadded_tile_read_is_32_way_conflicted(modules: dict[str, Module]) -> None:
    features = kernel(modules, "transpose", "transpose_unpadded")
    work = features.work(launch((32, 8, 1), (32, 32, 1)), {})
    loads = [s for s in work.sites if s.space == "shared" and not s.is_store]
    stores = [s for s in work.sites if s.space == "shared" and s.is_store]
    assert loads and all(s.bank_conflict_degree == pytest.approx(32.0) for s in loads)
    assert all(s.lines == (40,) for s in loads)
    assert stores and all(s.bank_conflict_degree == pytest.approx(1.0) for s in stores)
    assert work.shared_wavefronts == pytest.approx(4 * 1 + 4 * 32)


# --------------------------------------------------------------------------- loops


def test_grid_stride_loop_runs_n_over_grid_times_block(modules: dict[str, Module]) -> None:
    features = kernel(modules, "loops", "scale_grid_stride")
    n = param(features, 0)
    shape = launch((256, 1, 1), (64, 1, 1))
    work = features.work(shape, {n: 1 << 20})
    assert work.fp32_flops == pytest.approx((1 << 20) / (256 * 64))  # one mul per element
    assert work.global_load_bytes == pytest.approx(4 * (1 << 20) / (256 * 64))
    small = features.work(shape, {n: 1000})  # fewer elements than threads
    assert small.fp32_flops == pytest.approx(1000 / (256 * 64))
    assert small.active_fraction == pytest.approx(1000 / (256 * 64))
    # More threads only split the same elements: a block's work does not grow with its size.
    assert features.work_depends_on_block is False
    (loop,) = features_json(features, shape, {n: 1 << 20})["loops"]
    assert loop["trip_count"] == pytest.approx(64.0)
    assert loop["assumed"] is False
    assert loop["lines"] == [4]


def test_loop_bounded_by_a_parameter(modules: dict[str, Module]) -> None:
    features = kernel(modules, "loops", "poly_steps")
    shape = launch((128, 1, 1), (10, 1, 1))
    work = features.work(shape, {param(features, 2): 37})
    assert work.fp32_flops == pytest.approx(2 * 37)
    named = features.with_source_names(["in", "out", "steps"])
    assert named.work(shape, {"steps": 37}).fp32_flops == pytest.approx(2 * 37)
    assert named.work(shape, {"steps": 0}).fp32_flops == pytest.approx(0.0)
    assert named.unknown_parameters({"steps": 1, "bogus": 2}) == ("bogus",)


def test_missing_parameter_is_reported_as_assumed(modules: dict[str, Module]) -> None:
    features = kernel(modules, "loops", "poly_steps")
    report = features_json(features, launch((128, 1, 1), (10, 1, 1)), {})
    (loop,) = report["loops"]
    assert loop["assumed"] is True
    assert loop["missing_parameters"] == [param(features, 2)]
    assert loop["lines"] == [15]
    json.dumps(report)


def test_constant_loop_and_call_in_loop(modules: dict[str, Module]) -> None:
    shape = launch((128, 1, 1), (10, 1, 1))
    sixteen = kernel(modules, "loops", "sixteen_steps")
    assert sixteen.work(shape, {}).fp32_flops == pytest.approx(2 * 16)
    assert sixteen.assumptions == ()
    calls = kernel(modules, "loops", "call_in_loop")
    work = calls.work(shape, {})
    assert work.fp32_flops == pytest.approx(2 * 10)  # smooth(): one fma, called 10 times
    assert [c.callee for c in calls.calls] == ["_Z6smoothf"]
    assert features_json(calls, shape, {})["calls"][0]["lines"] == [50]


def test_guard_tid_below_128_in_256_thread_block_is_half_active(
    modules: dict[str, Module],
) -> None:
    features = kernel(modules, "loops", "first_128")
    grid = (40, 1, 1)
    assert features.work(launch((256, 1, 1), grid), {}).active_fraction == pytest.approx(0.5)
    assert features.work(launch((128, 1, 1), grid), {}).active_fraction == pytest.approx(1.0)
    assert features.work(launch((512, 1, 1), grid), {}).active_fraction == pytest.approx(0.25)
    work = features.work(launch((256, 1, 1), grid), {})
    assert work.fp32_flops == pytest.approx(0.5)
    assert work.idle_lines == (34,)
    assert 34 in work.divergence_lines


def test_mma_sync_loop_flops(modules: dict[str, Module]) -> None:
    features = kernel(modules, "mma", "mma_loop")
    work = features.work(launch((32, 1, 1), (1, 1, 1)), {param(features, 3): 10})
    assert work.tensor_flops == pytest.approx(10 * 2 * 16 * 8 * 16 / 32)


def test_unknown_kernel_is_a_clear_error(modules: dict[str, Module]) -> None:
    with pytest.raises(FeatureError, match="no kernel named 'nope'"):
        extract_features(modules["saxpy"], "nope")


def test_json_has_lines_everywhere(modules: dict[str, Module]) -> None:
    features = kernel(modules, "transpose", "transpose_naive")
    report = features_json(features, launch((32, 8, 1), (32, 128, 1)), {})
    assert report["uses_tid_y"] is True
    assert all(site["lines"] for site in report["access_sites"])
    assert all(guard["lines"] == [9] for guard in report["divergence"]["guards"])
    assert report["totals"]["per_block"]["dram_bytes"] > 0
    json.dumps(report)
