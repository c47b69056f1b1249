"""Occupancy and the block-size heuristic on cases worked out by hand from cuda_occupancy.h."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from flipflop.gpu.occupancy import OccupancyInputError, max_potential_block_size, occupancy
from flipflop.gpu.profiles import known_gpu_ids, load_profile

RTX3070 = load_profile("rtx3070")
A100 = load_profile("a100-sxm4-80gb")
H100 = load_profile("h100-sxm")
TURING = load_profile("quadro-rtx5000")


def test_registers_limit_64_per_thread_on_sm86() -> None:
    # 64 x 32 = 2048 registers per warp; 16384 per sub-partition hold 8 warps, 32 per SM.
    result = occupancy(RTX3070, threads_per_block=256, registers=64, static_smem_bytes=0)
    assert result.active_blocks_per_sm == 4
    assert result.active_warps_per_sm == 32
    assert result.occupancy == pytest.approx(32 / 48)
    assert result.limiter == "registers"


def test_register_allocation_rounds_each_warp_up_to_256() -> None:
    # 40 regs: 1280 per warp, 12 warps per sub-partition -> 48 warps = 12 blocks of 4 warps.
    # 41 regs: 1312 -> 1536 per warp, 10 warps per sub-partition -> 40 warps = 10 blocks.
    forty = occupancy(RTX3070, threads_per_block=128, registers=40, static_smem_bytes=0)
    forty_one = occupancy(RTX3070, threads_per_block=128, registers=41, static_smem_bytes=0)
    assert (forty.active_blocks_per_sm, forty_one.active_blocks_per_sm) == (12, 10)
    assert forty.limiting_factors == ("warps", "registers")
    assert forty_one.limiter == "registers"
    assert forty_one.allocated_registers_per_block == 4 * 1536


def test_per_block_register_check_assumes_all_four_sub_partitions() -> None:
    # 200 regs = 6400 per warp; 10 warps allocate 64000 <= 65536, but the hardware check
    # rounds to 12 warps (76800) and refuses the block.
    refused = occupancy(RTX3070, threads_per_block=320, registers=200, static_smem_bytes=0)
    assert refused.active_blocks_per_sm == 0
    assert refused.limiter == "registers"
    fits = occupancy(RTX3070, threads_per_block=256, registers=200, static_smem_bytes=0)
    assert fits.active_blocks_per_sm == 1


def test_full_occupancy_ties_warps_and_registers() -> None:
    result = occupancy(A100, threads_per_block=1024, registers=32, static_smem_bytes=0)
    assert result.active_blocks_per_sm == 2
    assert result.occupancy == 1.0
    assert result.limiting_factors == ("warps", "registers")
    assert result.limiter == "warps"


def test_shared_memory_adds_the_reserved_kilobyte_per_block() -> None:
    # (100 KB + 1 KB reserved) per block in the 228 KB carveout: 2 blocks.
    result = occupancy(H100, threads_per_block=128, registers=0, static_smem_bytes=100 * 1024)
    assert result.allocated_smem_per_block_bytes == 101 * 1024
    assert result.active_blocks_per_sm == 2
    assert result.limiter == "shared_memory"


def test_turing_allocates_shared_memory_in_256_byte_units_without_reserve() -> None:
    result = occupancy(TURING, threads_per_block=32, registers=0, static_smem_bytes=1)
    assert result.allocated_smem_per_block_bytes == 256
    assert result.active_blocks_per_sm == 16
    assert result.occupancy == 0.5
    assert result.limiter == "blocks"


def test_dynamic_shared_memory_beyond_the_opt_in_limit_fits_nowhere() -> None:
    too_much = occupancy(
        RTX3070, threads_per_block=128, registers=32, static_smem_bytes=0,
        dynamic_smem_bytes=99 * 1024 + 1,
    )
    assert too_much.active_blocks_per_sm == 0
    assert too_much.limiter == "shared_memory"
    not_raised = occupancy(
        RTX3070, threads_per_block=128, registers=32, static_smem_bytes=0,
        dynamic_smem_bytes=64 * 1024, max_dynamic_smem_bytes=48 * 1024,
    )
    assert not_raised.active_blocks_per_sm == 0


def test_carveout_preference_limits_shared_memory_per_sm() -> None:
    # 25% of 100 KB = 25 KB, rounded up to the 32 KB carveout; 9 KB blocks: 3 fit.
    small = occupancy(
        RTX3070, threads_per_block=256, registers=0, static_smem_bytes=8192, carveout_percent=25
    )
    assert small.smem_carveout_bytes == 32 * 1024
    assert small.active_blocks_per_sm == 3
    default = occupancy(RTX3070, threads_per_block=256, registers=0, static_smem_bytes=8192)
    assert default.active_blocks_per_sm == 6
    assert default.limiter == "warps"


def test_barriers_limit_blocks_from_hopper_on() -> None:
    hopper = occupancy(H100, threads_per_block=32, registers=0, static_smem_bytes=0, barriers=3)
    assert hopper.active_blocks_per_sm == 64 // 3
    assert hopper.limiter == "barriers"
    ampere = occupancy(A100, threads_per_block=32, registers=0, static_smem_bytes=0, barriers=3)
    assert ampere.active_blocks_per_sm == 32


def test_oversized_block_is_refused_by_the_warp_limit() -> None:
    result = occupancy(A100, threads_per_block=1056, registers=0, static_smem_bytes=0)
    assert result.active_blocks_per_sm == 0
    assert result.limiter == "warps"


@pytest.mark.parametrize(
    ("threads", "registers"), [(0, 32), (128, -1), (128, 256)], ids=["no-threads", "neg", "256"]
)
def test_impossible_inputs_are_refused(threads: int, registers: int) -> None:
    with pytest.raises(OccupancyInputError):
        occupancy(RTX3070, threads_per_block=threads, registers=registers, static_smem_bytes=0)


def test_max_potential_block_size_prefers_the_larger_block_on_ties() -> None:
    # 64 regs cap every block size at 1024 resident threads: 1024 is tried first and kept.
    assert max_potential_block_size(RTX3070, registers=64, static_smem_bytes=0) == (1024, 46)
    # 32 regs: 1024 leaves 512 thread slots idle; 768 x 2 fills all 1536.
    assert max_potential_block_size(RTX3070, registers=32, static_smem_bytes=0) == (768, 92)
    assert max_potential_block_size(A100, registers=32, static_smem_bytes=0) == (1024, 216)
    assert max_potential_block_size(
        RTX3070, registers=32, static_smem_bytes=0, block_size_limit=500
    ) == (384, 4 * 46)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", *args], capture_output=True, text=True
    )


def test_occupancy_command_json_covers_every_combination() -> None:
    done = run_cli(
        "occupancy", "--gpu", "rtx3070", "--regs", "32,64", "--smem", "0,20000", "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 2 * 2 * 32
    assert {row["block"] for row in rows} == set(range(32, 1025, 32))
    row = next(r for r in rows if (r["regs"], r["smem"], r["block"]) == (64, 0, 256))
    assert row == {
        "regs": 64, "smem": 0, "block": 256, "active_blocks_per_sm": 4,
        "occupancy": pytest.approx(2 / 3), "limiter": "registers",
    }


def test_occupancy_command_table_with_blocks() -> None:
    done = run_cli(
        "occupancy", "--gpu", "h100-sxm", "--regs", "32", "--smem", "0", "--block", "256"
    )
    assert done.returncode == 0, done.stderr
    assert "256" in done.stdout and "100.0%" in done.stdout


def test_occupancy_command_unknown_gpu_exits_1_listing_known_ones() -> None:
    done = run_cli("occupancy", "--gpu", "gtx480", "--regs", "32", "--smem", "0")
    assert done.returncode == 1
    known = ", ".join(known_gpu_ids())
    assert done.stderr.startswith(f"error: unknown GPU 'gtx480'; known: {known}")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [("--gpu", "l4", "--smem", "0"), ("--gpu", "l4", "--regs", "x", "--smem", "0"),
     ("--gpu", "l4", "--regs", "32", "--smem", "0", "--format", "xml")],
    ids=["missing-regs", "bad-regs", "bad-format"],
)
def test_occupancy_command_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    done = run_cli("occupancy", *args)
    assert done.returncode == 2
    assert "usage:" in done.stderr and "Traceback" not in done.stderr


def test_occupancy_command_impossible_registers_exit_1() -> None:
    done = run_cli("occupancy", "--gpu", "l4", "--regs", "300", "--smem", "0")
    assert done.returncode == 1
    assert "300 registers" in done.stderr and "Traceback" not in done.stderr
