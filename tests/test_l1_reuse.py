"""What a block's threads and unrolled copies share through L1, and neighbouring blocks through
L2: exact footprints, and a stencil read straight from global memory costed at its distinct
sectors, not its requests, and at what its neighbours did not already bring into L2."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from cuda_toolchain import nvcc_for_tests
from flipflop.analysis import extract_features
from flipflop.analysis.features import KernelFeatures
from flipflop.analysis.memory import block_footprint_sectors
from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape
from flipflop.model.l2 import dram_bytes_per_thread, row_reuse_hit_rate
from flipflop.model.performance import global_wavefronts_per_warp
from flipflop.ptx import parse_ptx

NVCC = nvcc_for_tests()
KERNELS = Path(__file__).parent / "model_kernels"


def _brute(cx: int, cy: int, cz: int, offsets: tuple[int, ...], width: int,
           block: tuple[int, int, int]) -> int:  # fmt: skip
    bx, by, bz = block
    sectors: set[int] = set()
    for offset in offsets:
        for z in range(bz):
            for y in range(by):
                for x in range(bx):
                    address = offset + cx * x + cy * y + cz * z
                    sectors.update(range(address // 32, (address + width - 1) // 32 + 1))
    return len(sectors)


@pytest.mark.parametrize(
    ("cx", "cy", "offsets", "width", "block", "sectors"),
    [
        (4, 0, (0,), 4, (32, 1, 1), 4),  # a warp of consecutive floats
        (4, 4112, tuple(4 * j for j in range(5)), 4, (32, 8, 1), 40),  # 5 taps: 36 floats/row
        (0, 0, tuple(4 * k for k in range(25)), 4, (256, 1, 1), 4),  # uniform weights: 100 B
        (128, 0, (0,), 4, (32, 1, 1), 32),  # a sector per thread
        (-4, 0, (124,), 4, (32, 1, 1), 4),  # descending lanes
    ],
)
def test_known_footprints(cx: int, cy: int, offsets: tuple[int, ...], width: int,
                          block: tuple[int, int, int], sectors: int) -> None:  # fmt: skip
    assert block_footprint_sectors(cx, cy, 0, 0, offsets, width, *block) == sectors
    assert _brute(cx, cy, 0, offsets, width, block) == sectors


def test_footprints_match_enumeration() -> None:
    generator = random.Random(7)
    for _ in range(300):
        cx = generator.choice((0, 1, 2, 4, 8, 12, 16, 32, 36, 64, -4, -8))
        cy = generator.choice((0, 4, 64, 132, 4096, 4112, -512))
        cz = generator.choice((0, 256, 65536))
        width = generator.choice((1, 2, 4, 8, 16))
        offsets = tuple(generator.sample(range(0, 2048, generator.choice((1, 4, 16))),
                                         generator.randint(1, 12)))  # fmt: skip
        block = (generator.choice((1, 3, 16, 32, 48)), generator.choice((1, 2, 5)),
                 generator.choice((1, 2)))  # fmt: skip
        expected = _brute(cx, cy, cz, offsets, width, block)
        assert block_footprint_sectors(cx, cy, cz, 0, offsets, width, *block) == expected


def test_lane_patterns_it_cannot_enumerate_say_so() -> None:
    assert block_footprint_sectors(4, 0, 0, 4, (0,), 4, 32, 1, 1) is None  # by lane id
    assert block_footprint_sectors(4, 0, 0, 0, (), 4, 32, 1, 1) is None


def _direct_stencil(tmp_path: Path) -> KernelFeatures:
    assert NVCC is not None
    ptx = tmp_path / "direct_stencil.ptx"
    subprocess.run([NVCC, "-ptx", "-arch=sm_86", str(KERNELS / "direct_stencil.cu"), "-o",
                    str(ptx)], check=True, capture_output=True)  # fmt: skip
    module = parse_ptx(ptx.read_text(), str(ptx))
    (kernel,) = module.kernels
    return extract_features(module, kernel.name)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_a_direct_stencil_costs_its_distinct_sectors(tmp_path: Path) -> None:
    features = _direct_stencil(tmp_path)
    work = features.work(LaunchShape((32, 8, 1), (32, 128, 1)), {})
    # Requested per warp: 25 input taps at 4 or 5 sectors each (5 where a tap is not
    # sector-aligned), 25 weights at one sector each: 125–150 sectors, ~4.5 per thread.
    assert 125 <= 32 * work.global_load_sectors <= 150
    # Distinct per block: 12 rows of 36 floats (5 or 6 sectors each, by alignment) and the
    # 100 B of weights (4 sectors): 64–76 sectors over 256 threads, plus the 4-byte store.
    assert work.global_load_l1_misses is not None
    assert 64 / 256 - 1e-9 <= work.global_load_l1_misses <= 76 / 256 + 1e-9
    # The block before along x (128 B to the left) read 4 of each row's 36 floats: its 12 rows
    # of 68 floats are 108 sectors, 2 × 60 − 108 = 12 shared, a fifth of the input's 60; 31 of
    # 32 blocks have such a neighbour. The weights are the same for every block.
    new_input = 60 * (1 - 31 / 32 * 12 / 60)
    new_weights = 4 * (1 - 31 / 32)
    assert work.global_load_new_sectors == pytest.approx((new_input + new_weights) / 256)
    assert work.dram_bytes == pytest.approx(32 * (new_input + new_weights) / 256 + 4.0)
    # The block a grid row earlier (8 rows up) read 4 of the 12 rows: a third of what is new,
    # for 127 of 128 rows; a grid row of blocks brings in ~80 KB, far less than L2.
    row_reuse = (new_input + new_weights) * 127 / 128 / 3
    assert work.global_load_row_reuse_sectors == pytest.approx(row_reuse / 256, rel=0.02)
    shape = LaunchShape((32, 8, 1), (32, 128, 1))
    profile = load_profile("rtx3090")
    assert row_reuse_hit_rate(profile, work, shape) == 1.0
    # What is left is about each block's own 8 rows of 32 floats (32 sectors) and its store.
    dram = dram_bytes_per_thread(profile, work, shape)
    assert dram == pytest.approx(32 * 32 / 256 + 4.0, rel=0.02)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_reuse_a_grid_row_apart_needs_the_row_to_fit_in_l2(tmp_path: Path) -> None:
    features = _direct_stencil(tmp_path)
    profile = load_profile("rtx3090")  # 6 MB of L2
    narrow = LaunchShape((32, 8, 1), (32, 128, 1))
    wide = LaunchShape((32, 8, 1), (4096, 1, 1))  # one grid row: no row before to reuse
    tall = LaunchShape((32, 8, 1), (4096, 4, 1))  # a grid row brings in ~10 MB
    for shape, expected in ((narrow, 1.0), (wide, 0.0)):
        work = features.work(shape, {})
        assert row_reuse_hit_rate(profile, work, shape) == expected
    work = features.work(tall, {})
    row_bytes = 4096 * 256 * work.dram_bytes
    assert row_bytes > profile.l2_bytes
    assert row_reuse_hit_rate(profile, work, tall) == pytest.approx(profile.l2_bytes / row_bytes)
    kept = dram_bytes_per_thread(profile, work, tall)
    assert work.dram_bytes - 32 * work.global_load_row_reuse_sectors < kept < work.dram_bytes


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_a_broadcast_load_takes_a_whole_l1_cycle(tmp_path: Path) -> None:
    features = _direct_stencil(tmp_path)
    work = features.work(LaunchShape((32, 8, 1), (32, 128, 1)), {})
    weights = [s for s in work.sites if s.space == "global" and s.pattern == "uniform"]
    taps = [s for s in work.sites if s.space == "global" and s.pattern != "uniform"]
    # 25 weights, one word for the whole warp each: a quarter of a wavefront's data, a whole
    # cycle of the L1 pipeline all the same.
    assert sum(s.accesses for s in weights) == pytest.approx(25.0)
    assert sum(32 * s.sectors / 4 for s in weights) == pytest.approx(25 / 4)
    # The input taps and the store move 4-5 sectors per request: their sectors set the cycles.
    moved = sum(32 * s.sectors / 4 for s in taps)
    assert moved >= sum(s.accesses for s in taps)
    assert global_wavefronts_per_warp(work) == pytest.approx(25.0 + moved)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_the_memory_driver_says_what_the_caches_serve(tmp_path: Path) -> None:
    from flipflop.advice.drivers import energy_drivers
    from flipflop.model import predict
    from flipflop.resources import Resources

    features = _direct_stencil(tmp_path)
    shape = LaunchShape((32, 8, 1), (32, 128, 1))
    work = features.work(shape, {})
    profile = load_profile("rtx3090")
    prediction = predict(profile, Resources(registers=32), work, shape)
    (memory,) = [d for d in energy_drivers(profile, Resources(registers=32), work, prediction)
                 if d.kind == "memory_traffic"]  # fmt: skip
    # 125-150 requested sectors per warp, 64-76 distinct per 256-thread block: L1 serves ~94%;
    # of the 64 that miss, about 32 come from DRAM, the rest from the neighbours' data in L2.
    in_l1 = 1 - work.global_load_l1_misses / work.global_load_sectors
    assert f"L1 serves {in_l1:.0%} of the load sectors" in memory.message
    assert 0.9 < in_l1 < 0.97
    # 64 sectors miss L1 per block, ~32.4 come from DRAM (the test above): L2 serves 49%.
    assert "L2 serves 49% of the rest" in memory.message


def _loaded_offsets(tmp_path: Path, kernel: str) -> KernelFeatures:
    assert NVCC is not None
    ptx = tmp_path / "loaded_offsets.ptx"
    if not ptx.exists():
        subprocess.run([NVCC, "-ptx", "-arch=sm_86", str(KERNELS / "loaded_offsets.cu"), "-o",
                        str(ptx)], check=True, capture_output=True)  # fmt: skip
    return extract_features(parse_ptx(ptx.read_text(), str(ptx)), kernel)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_loads_at_loaded_offsets_are_served_by_l1_within_the_block(tmp_path: Path) -> None:
    """Blocks of 8 x 16 threads read a byte each of a channel at a shift loaded from memory:
    a warp is four rows of 8 lanes. The block's footprint is that of the address without the
    shift (every row at the same offset: one sector a channel), whatever a request costs."""
    shape = LaunchShape((8, 16, 1), (64, 1, 1))
    shared = _loaded_offsets(tmp_path, "shared_shift").work(shape, {})
    rows = _loaded_offsets(tmp_path, "row_shift").work(shape, {})
    for work, sectors_per_warp in ((shared, 1), (rows, 4)):
        (site,) = [s for s in work.sites if s.space == "global" and not s.is_store
                   and s.stride_bytes == 1]  # fmt: skip
        # A warp's request: the shared shift puts its four rows on one sector; rows at their
        # own loaded offsets are costed as lying apart, a sector each.
        assert site.sectors == pytest.approx(64 * sectors_per_warp / 32)
        # The block: 64 channels of one sector, over 128 threads.
        assert site.l1_miss_sectors == pytest.approx(64 / 128)
        # Another block's shifts may differ: nothing is taken as shared with neighbours.
        assert site.new_sectors == pytest.approx(site.l1_miss_sectors)
        assert site.row_reuse_sectors == 0.0
