"""Occupancy exactly as NVIDIA's `cuda_occupancy.h` computes it, and its block-size heuristic.

The header (CUDA 13, `cudaOccMaxActiveBlocksPerMultiprocessor` and
`cudaOccMaxPotentialOccupancyBlockSize`) is the specification; `tests/test_occupancy_oracle.py`
compiles it and compares every point of a dense grid. The architecture tables the header
hard-codes (blocks per SM, carveout sizes, allocation units, barriers) come from the profile,
whose values that same test checks against the header.

The function attributes are those `cudaFuncGetAttributes` yields through the header's
converting constructor: opt-in shared-memory limit, one block barrier, no partitioned global
caching, no virtual resources. The maximum dynamic shared memory defaults to everything the
block may opt in to, i.e. we assume the program raised `cudaFuncAttributeMaxDynamicSharedMemorySize`
as far as its launch needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.fast_init import fast_init
from flipflop.gpu.profile import GpuProfile, OccupancyLimits

WARP_SIZE = 32  # every architecture since Tesla (CUDA C++ Programming Guide, "Warp")

# The header's INT_MAX: "this resource imposes no limit".
UNLIMITED = 2**31 - 1

# In the header's bit order (OCC_LIMIT_WARPS = 1 ... OCC_LIMIT_BARRIERS = 0x10); the first
# one that binds is reported as `limiter`.
LIMITERS = ("warps", "registers", "shared_memory", "blocks", "barriers")

# The header checks registers per thread against 256 on cc >= 7 (cudaOccRegAllocationMaxPerThread);
# ptxas never assigns more than 255, so anything above the profile's limit is rejected here.


class OccupancyInputError(ValueError):
    """The launch or resource numbers cannot describe a kernel on this GPU."""


@fast_init
@dataclass(frozen=True)
class Occupancy:
    active_blocks_per_sm: int
    occupancy: float  # active warps / maximum warps per SM, 0..1
    limiter: str  # first of LIMITERS that binds
    active_warps_per_sm: int
    limiting_factors: tuple[str, ...]  # every resource whose limit equals the result
    # Blocks per SM each resource alone allows (UNLIMITED when it imposes none).
    block_limit_warps: int
    block_limit_registers: int
    block_limit_shared_memory: int
    block_limit_blocks: int
    block_limit_barriers: int
    allocated_registers_per_block: int
    allocated_smem_per_block_bytes: int  # includes the driver's reserved bytes
    smem_carveout_bytes: int  # shared memory per SM under the carveout the driver would pick


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def aligned_carveout_bytes(limits: OccupancyLimits, requested_bytes: int) -> int:
    """Smallest carveout holding `requested_bytes` (cudaOccAlignUpShmemSizeVoltaPlus)."""
    for size_kb in sorted(limits.smem_carveouts_kb):
        if requested_bytes <= size_kb * 1024 and (size_kb > 0 or requested_bytes == 0):
            return size_kb * 1024
    raise OccupancyInputError(
        f"{requested_bytes} bytes of shared memory per SM exceed the largest carveout "
        f"({max(limits.smem_carveouts_kb)} KB)"
    )


def preferred_carveout_bytes(limits: OccupancyLimits, carveout_percent: int | None) -> int:
    """Carveout for a cudaFuncAttributePreferredSharedMemoryCarveout percentage; None: default."""
    if carveout_percent is None:
        return aligned_carveout_bytes(limits, limits.smem_per_sm_bytes)
    if not 0 <= carveout_percent <= 100:
        raise OccupancyInputError(f"carveout preference {carveout_percent}% is not in 0..100")
    return aligned_carveout_bytes(limits, carveout_percent * limits.smem_per_sm_bytes // 100)


def _warps_limit(limits: OccupancyLimits, threads_per_block: int) -> int:
    if threads_per_block > limits.max_threads_per_block:
        return 0
    warps_per_block = -(-threads_per_block // WARP_SIZE)
    return (limits.max_threads_per_sm // WARP_SIZE) // warps_per_block


def _registers_limit(
    limits: OccupancyLimits, threads_per_block: int, registers: int
) -> tuple[int, int]:
    """(blocks per SM, registers allocated per block); cudaOccMaxBlocksPerSMRegsLimit."""
    sub_partitions = limits.warp_allocation_granularity
    warps_per_block = -(-threads_per_block // WARP_SIZE)
    registers_per_warp = _round_up(registers * WARP_SIZE, limits.register_allocation_unit)
    registers_per_block = registers_per_warp * warps_per_block
    # The hardware's per-block check assumes a block's warps fill all sub-partitions evenly.
    registers_assumed = registers_per_warp * _round_up(warps_per_block, sub_partitions)
    if (
        limits.max_registers_per_block < registers_assumed
        or limits.max_registers_per_block < registers_per_block
    ):
        return 0, registers_per_block
    if registers_per_warp == 0:
        return UNLIMITED, registers_per_block
    warps_per_sub_partition = (limits.registers_per_sm // sub_partitions) // registers_per_warp
    return warps_per_sub_partition * sub_partitions // warps_per_block, registers_per_block


def _shared_memory_limit(
    limits: OccupancyLimits,
    cc_major: int,
    static_smem_bytes: int,
    dynamic_smem_bytes: int,
    max_dynamic_smem_bytes: int,
    carveout_percent: int | None,
) -> tuple[int, int, int]:
    """(blocks per SM, bytes per block, carveout bytes); cudaOccMaxBlocksPerSMSmemLimit."""
    preference = preferred_carveout_bytes(limits, carveout_percent)
    static_bytes = static_smem_bytes + limits.reserved_smem_per_block_bytes
    allocated = _round_up(static_bytes + dynamic_smem_bytes, limits.smem_allocation_unit_bytes)
    most_per_block = static_bytes + max_dynamic_smem_bytes
    block_limit = (
        limits.smem_per_block_optin_bytes
        if most_per_block > limits.smem_per_block_bytes
        else limits.smem_per_block_bytes
    )
    if cc_major >= 8:
        block_limit += limits.reserved_smem_per_block_bytes
    if dynamic_smem_bytes > max_dynamic_smem_bytes or allocated > block_limit:
        return 0, allocated, preference
    # A preference too small for even one block is overridden by the smallest carveout that fits.
    carveout = preference if preference >= allocated else aligned_carveout_bytes(limits, allocated)
    if allocated == 0:
        return UNLIMITED, allocated, carveout
    return carveout // allocated, allocated, carveout


def occupancy(
    profile: GpuProfile,
    *,
    threads_per_block: int,
    registers: int,
    static_smem_bytes: int,
    dynamic_smem_bytes: int = 0,
    max_dynamic_smem_bytes: int | None = None,
    carveout_percent: int | None = None,
    barriers: int = 1,
) -> Occupancy:
    """Resident blocks and warps per SM for one block (cudaOccMaxActiveBlocksPerMultiprocessor)."""
    limits = profile.limits
    _check_inputs(limits, threads_per_block, registers, static_smem_bytes, dynamic_smem_bytes)
    if max_dynamic_smem_bytes is None:
        max_dynamic_smem_bytes = max(limits.smem_per_block_optin_bytes - static_smem_bytes, 0)

    by_registers, registers_allocated = _registers_limit(limits, threads_per_block, registers)
    by_warps = _warps_limit(limits, threads_per_block)
    by_blocks = limits.max_blocks_per_sm
    by_smem, smem_allocated, carveout = _shared_memory_limit(
        limits,
        profile.compute_capability[0],
        static_smem_bytes,
        dynamic_smem_bytes,
        max_dynamic_smem_bytes,
        carveout_percent,
    )
    by_barriers = UNLIMITED
    if limits.max_barriers_per_sm is not None and barriers > 0:
        # The header counts barriers per block slot from cc 9.0 on.
        by_barriers = limits.max_barriers_per_sm // barriers

    per_resource = (by_warps, by_registers, by_smem, by_blocks, by_barriers)
    active_blocks = min(per_resource)
    factors = tuple(
        name
        for name, limit in zip(LIMITERS, per_resource, strict=True)
        if limit == active_blocks
    )
    active_warps = active_blocks * -(-threads_per_block // WARP_SIZE)
    return Occupancy(
        active_blocks_per_sm=active_blocks,
        occupancy=active_warps / limits.max_warps_per_sm,
        limiter=factors[0],
        active_warps_per_sm=active_warps,
        limiting_factors=factors,
        block_limit_warps=by_warps,
        block_limit_registers=by_registers,
        block_limit_shared_memory=by_smem,
        block_limit_blocks=by_blocks,
        block_limit_barriers=by_barriers,
        allocated_registers_per_block=registers_allocated,
        allocated_smem_per_block_bytes=smem_allocated,
        smem_carveout_bytes=carveout,
    )


def max_potential_block_size(
    profile: GpuProfile,
    *,
    registers: int,
    static_smem_bytes: int,
    dynamic_smem_bytes: int = 0,
    block_size_limit: int = 0,
) -> tuple[int, int]:
    """(block size, minimum grid size) as cudaOccupancyMaxPotentialBlockSize picks them.

    Block sizes from the limit down in steps of a warp; the most resident threads per SM wins
    and, because only a strictly better one replaces it, ties go to the larger block. The
    minimum grid size fills every SM once at that occupancy. (0, 0) when nothing fits.
    """
    limits = profile.limits
    if block_size_limit < 0:
        raise OccupancyInputError(f"block size limit {block_size_limit} is negative")
    limit = limits.max_threads_per_block
    if block_size_limit:
        limit = min(limit, block_size_limit)
    best_block, best_blocks, best_threads = 0, 0, 0
    for aligned in range(_round_up(limit, WARP_SIZE), 0, -WARP_SIZE):
        block = min(limit, aligned)
        blocks = occupancy(
            profile,
            threads_per_block=block,
            registers=registers,
            static_smem_bytes=static_smem_bytes,
            dynamic_smem_bytes=dynamic_smem_bytes,
        ).active_blocks_per_sm
        if block * blocks > best_threads:
            best_block, best_blocks, best_threads = block, blocks, block * blocks
        if best_threads == limits.max_threads_per_sm:
            break
    return best_block, best_blocks * profile.sms


def _check_inputs(
    limits: OccupancyLimits,
    threads_per_block: int,
    registers: int,
    static_smem_bytes: int,
    dynamic_smem_bytes: int,
) -> None:
    if threads_per_block <= 0:
        raise OccupancyInputError(f"a block needs at least one thread, got {threads_per_block}")
    if not 0 <= registers <= limits.max_registers_per_thread:
        raise OccupancyInputError(
            f"{registers} registers per thread is outside 0..{limits.max_registers_per_thread}"
        )
    if static_smem_bytes < 0 or dynamic_smem_bytes < 0:
        raise OccupancyInputError("shared memory sizes cannot be negative")
