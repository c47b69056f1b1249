"""Thread indices divided by or taken modulo a constant (`tid % 32`, `tid / 32`, as a reshaped
tile load writes them) followed lane by lane, and shared-memory requests costed at their
wavefronts, a wide access's phases included. Real nvcc output throughout."""

from __future__ import annotations

from pathlib import Path

import pytest

from flipflop.analysis.lanes import decode, function_atom, function_value
from flipflop.analysis.memory import (
    bank_conflicts,
    conflict_free_wavefronts,
    describe_address,
    lane_functions,
    warp_sectors,
)
from flipflop.analysis.poly import Poly
from flipflop.launch import LaunchShape
from model_ptx import GEMM, GEMM_SIZES, KERNELS, compile_ptx, features_of, xgemm_features


@pytest.fixture(scope="module")
def tiles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reshaped") / "reshaped_tiles.ptx"
    return compile_ptx(KERNELS / "reshaped_tiles.cu", out)


def test_a_function_value_is_the_floor_division_or_remainder() -> None:
    # 3 · ((16·y + x) / 8) and 3 · ((16·y + x) % 8) for thread (5, 2): 37 / 8 = 4, 37 % 8 = 5.
    assert function_value((3, False, 8, 1, 16, 0, 0, 0), 5, 2, 0, 0) == 12
    assert function_value((3, True, 8, 1, 16, 0, 0, 0), 5, 2, 0, 0) == 15


@pytest.mark.parametrize("block", [(32, 8, 1), (16, 16, 1), (64, 4, 1), (256, 1, 1)])
def test_a_transposed_store_through_a_reshaped_index_finds_its_bank_conflicts(
    tiles: Path, block: tuple[int, int, int]
) -> None:
    # column = tid % 32 and row = tid / 32 of tid = tid.y·ntid.x + tid.x: a warp is one row
    # of 32 columns whatever the block's shape. Stored transposed into tile[column][row], the
    # 32 lanes write 32 words one row of the tile (32 or 33 words) apart.
    shape = LaunchShape(block, (4, 4, 1))
    for kernel, degree in (("transpose_unpadded", 32.0), ("transpose_padded", 1.0)):
        work = features_of(tiles, kernel, ("in", "out", "n")).work(shape, {"n": 128})
        (store,) = [s for s in work.sites if s.space == "shared" and s.is_store]
        assert store.bank_conflict_degree == degree
        assert store.wavefronts_per_request == degree
        # The global reads: one row of 32 floats per warp request, 4 sectors.
        loads = [s for s in work.sites if s.space == "global" and not s.is_store]
        assert len(loads) == 4
        assert all(s.pattern == "coalesced" and s.sectors == pytest.approx(4 / 32) for s in loads)


def test_the_reshaped_index_becomes_lane_functions(tiles: Path) -> None:
    features = features_of(tiles, "transpose_unpadded", ("in", "out", "n"))
    (store,) = [s for s in features.sites if s.space == "shared" and s.is_store]
    assert store.kind == "affine"
    kinds = sorted((f.remainder, f.divisor, str(f.scale)) for f in store.lane_functions)
    # &tile[column · 32 + row]: 128 bytes per column, 4 per row.
    assert kinds == [(False, 32, "4"), (True, 32, "128")]
    (function,) = [f for f in store.lane_functions if f.remainder]
    assert [str(c) for c in function.base] == ["1", "ntid.x", "0", "0"]


def test_atoms_that_are_not_lane_functions_decode_to_nothing() -> None:
    assert decode("tid.x") is None
    assert decode("opq:13:r5@0.3") is None


def test_wide_shared_accesses_take_a_wavefront_per_phase() -> None:
    # Consecutive lanes, 4-, 8- and 16-byte words: conflict-free, 1, 2 and 4 wavefronts.
    for width, wavefronts in ((4, 1.0), (8, 2.0), (16, 4.0)):
        degree, stride, taken = bank_conflicts(width, 0, 0, 0, 0, width, 32, 1, 1)
        assert (degree, stride, taken) == (1.0, width, wavefronts)
        assert conflict_free_wavefronts(width, 32) == wavefronts
    # Every lane at one float4 (a broadcast): no conflict, and still four registers to return.
    assert bank_conflicts(0, 0, 0, 0, 0, 16, 32, 1, 1) == (1.0, 0, 4.0)
    # 48 threads: a full warp in 4 phases and 16 lanes in 2.
    assert conflict_free_wavefronts(16, 48) == 3.0


def test_a_float4_row_in_shared_memory_costs_four_wavefronts_a_request(tiles: Path) -> None:
    work = features_of(tiles, "vector_row", ("in", "out")).work(LaunchShape((256, 1, 1), (8, 1, 1)),
                                                              {})  # fmt: skip
    shared = [s for s in work.sites if s.space == "shared"]
    assert len(shared) == 2 and all(s.wavefronts_per_request == 4.0 for s in shared)
    assert work.shared_wavefronts == pytest.approx(8.0)  # a store and a load per thread


def test_lane_functions_move_sectors_as_the_lanes_do() -> None:
    # 4 · (tid % 8) + 4096 · (tid / 8): 8 floats of 4 rows per warp: 4 sectors.
    functions = ((4, True, 8, 1, 0, 0, 0, 0), (4096, False, 8, 1, 0, 0, 0, 0))
    assert warp_sectors(0, 0, 0, 0, 0, 4, 32, 1, 1, functions) == (4 / 32, 4)
    # 4 · (tid % 4): four words shared by eight lanes each, one sector.
    assert warp_sectors(0, 0, 0, 0, 0, 4, 32, 1, 1, ((4, True, 4, 1, 0, 0, 0, 0),))[0] == 1 / 32


@pytest.mark.skipif(not GEMM.is_dir(), reason="the shared measured data is missing")
def test_a_gemm_reads_the_same_tiles_through_shared_memory_as_directly(tmp_path: Path) -> None:
    """CLBlast's Xgemm (the measured GEMM) with its tiles loaded into shared memory through
    `tid % MDIMA`, `tid / MDIMA` (SA = SB = 1) or read straight from global memory (0): the
    same block reads the same bytes either way, and DRAM/L2 see the same misses."""
    defines = ("-DMWG=64", "-DNWG=64", "-DKWG=32", "-DMDIMC=16", "-DNDIMC=16", "-DMDIMA=16",
               "-DNDIMB=16", "-DKWI=2", "-DVWM=2", "-DVWN=2", "-DSTRM=0", "-DSTRN=0",
               "-DPRECISION=32")  # fmt: skip
    shape = LaunchShape((16, 16, 1), (64, 64, 1))
    sizes = GEMM_SIZES
    works = []
    for cached in (0, 1):
        features = xgemm_features(tmp_path / f"xgemm{cached}.ptx", *defines,
                                  f"-DSA={cached}", f"-DSB={cached}")  # fmt: skip
        works.append(features.work(shape, sizes))
    direct, tiled = works
    assert direct.shared_wavefronts == 0.0 < tiled.shared_wavefronts
    # A block's tiles: 64 rows of A and 64 columns of B, 4096 deep, in 32-byte sectors over
    # 256 threads, and its 64 × 64 floats of C (read for beta): 128 + 128 + 2 sectors a thread.
    for work in works:
        assert work.global_load_l1_misses == pytest.approx(258.0)
        # The block before along x (the next 64 rows of M) read the same B: 63 of 64 blocks
        # of a grid row have one. The block a grid row earlier read the same A.
        assert work.global_load_new_sectors == pytest.approx(128 + 128 / 64 + 2)
        assert work.global_load_row_reuse_sectors == pytest.approx(128 * 63 / 64)


@pytest.mark.skipif(not GEMM.is_dir(), reason="the shared measured data is missing")
def test_an_unrolled_pointer_walk_is_an_induction_variable(tmp_path: Path) -> None:
    """Xgemm reading its tiles straight from global memory with 2-wide vectors: nvcc walks the
    pointers of the unrolled inner loop as `t1 = p + s; t2 = t1 + s; t3 = t2 + s; p = t3 + s`.
    Followed as `p + 4s` per iteration, every load is affine and L1 serves what the block's
    threads share."""
    defines = ("-DMWG=32", "-DNWG=64", "-DKWG=32", "-DMDIMC=16", "-DNDIMC=16", "-DMDIMA=8",
               "-DNDIMB=8", "-DKWI=2", "-DVWM=2", "-DVWN=2", "-DSTRM=0", "-DSTRN=0", "-DSA=0",
               "-DSB=0", "-DPRECISION=32")  # fmt: skip
    features = xgemm_features(tmp_path / "xgemm.ptx", *defines)
    assert {site.kind for site in features.sites if site.space == "global"} == {"affine"}
    work = features.work(LaunchShape((16, 16, 1), (128, 64, 1)),
                         GEMM_SIZES)  # fmt: skip
    # 32 rows of A and 64 columns of B, 4096 deep, and 32 × 64 floats of C, over 256 threads.
    assert work.global_load_l1_misses == pytest.approx(64 + 128 + 1)
    # The block before along x read the same B (127 of 128 blocks of a grid row have one).
    assert work.global_load_new_sectors == pytest.approx(64 + 128 / 128 + 1)


def test_a_lane_function_scaled_by_a_loop_counter_is_not_affine() -> None:
    column = function_atom(Poly.atom("tid.x"), 16, True)
    assert column is not None
    # 4 · (tid % 16): affine; 4 · (tid % 16) · k of a loop's counter k: no fixed lane stride.
    assert describe_address(column.scale(4))[0] == "affine"
    assert lane_functions(column.scale(4)) is not None
    assert describe_address(column.scale(4) * Poly.atom("iter:0"))[0] == "unknown"
