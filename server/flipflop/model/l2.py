"""Reuse between blocks a grid row apart, through L2: whether it hits depends on L2's size.

The features stage counts, per thread, the load sectors that miss L1 and that the block before
along x did not read (`ThreadWork.global_load_new_sectors`), and of those the ones the block one
grid row earlier read (`global_load_row_reuse_sectors`): a stencil's halo above the tile, the
rows of B a GEMM block shares with the block above it. Between those two reads the rest of a
grid row of blocks streams its data through L2; the reuse hits when that fits in L2 and, past
that, in proportion to the share of it L2 holds (a capacity argument, as in stack-distance
models, Mattson et al. 1970; smooth rather than LRU's cliff: L2 is hashed over slices, not LRU
over the whole). Capacity comes from the GPU profile (`l2_bytes`, from the datasheets).
"""

from __future__ import annotations

from flipflop.analysis.work import ThreadWork
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import LaunchShape
from flipflop.model.constants import SECTOR_BYTES


def row_reuse_hit_rate(profile: GpuProfile, work: ThreadWork, shape: LaunchShape) -> float:
    """Share of the grid-row reuse L2 serves: 1 while a grid row's new data fits in L2."""
    if work.global_load_row_reuse_sectors <= 0.0:
        return 0.0
    row_bytes = shape.grid[0] * shape.threads_per_block * work.dram_bytes
    if row_bytes <= profile.l2_bytes:
        return 1.0
    return profile.l2_bytes / row_bytes


def dram_bytes_per_thread(profile: GpuProfile, work: ThreadWork, shape: LaunchShape) -> float:
    """DRAM bytes per launched thread: `ThreadWork.dram_bytes` less the reuse from a grid row
    earlier that L2 serves on this GPU."""
    hit = row_reuse_hit_rate(profile, work, shape)
    return work.dram_bytes - hit * SECTOR_BYTES * work.global_load_row_reuse_sectors
