"""How many distinct 32-byte sectors an affine access touches over a box of indices.

An access `base + Σ c_j · i_j` (bytes) with each index `i_j` over `0 … n_j − 1` — thread
indices, loop counters, block indices — touches at most `Π n_j` addresses, fewer when strides
overlap. The count is built the way the addresses nest: taking the dimensions by increasing
stride, a dimension whose stride is no larger than the run covered so far extends the run (rows
of a tile, consecutive lanes), a larger one repeats it `n_j` times apart (tile rows far apart in
memory). Exact for row-major boxes and their sub-boxes, an upper bound otherwise. This is the
footprint of an array reference over an iteration box (the quantity cache models such as
GPUMech, Huang et al., MICRO 2014, and MDM, Wang et al., ISCA 2020, start from).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

SECTOR_BYTES = 32


def distinct_sectors(dimensions: Iterable[tuple[float, int]], width: int) -> float:
    """Sectors touched by `width`-byte accesses at `Σ c_j · i_j`, `i_j` in `[0, n_j)`.

    `dimensions` are (stride in bytes, extent) pairs; strides may be negative, extents ≤ 1 and
    zero strides add nothing (every index value gives the same address).
    """
    run = max(width, 1)  # bytes covered contiguously
    repeats: list[tuple[int, int]] = []  # (stride, extent) of the disjoint repetitions
    merged: dict[int, int] = {}
    for stride, extent in dimensions:
        if extent > 1 and stride != 0:
            key = abs(int(stride))
            merged[key] = merged.get(key, 1) + int(extent) - 1  # equal strides add up
    for stride, extent in sorted(merged.items()):
        if stride <= max(run, SECTOR_BYTES):
            run += stride * (extent - 1)  # copies that touch or share sectors make one run
        else:
            repeats.append((stride, extent))
    copies = _distinct_offsets(repeats)
    alignment = SECTOR_BYTES  # the copies start at multiples of this within a sector
    for stride, _ in repeats:
        alignment = math.gcd(alignment, stride)
    # The first copy starts on a sector (cudaMalloc's bases are 256-byte aligned, as the
    # coalescing model assumes); the others at every multiple of `alignment` alike.
    offsets = range(0, SECTOR_BYTES, alignment) if copies > 1 else range(1)
    per_run = sum((offset + run - 1) // SECTOR_BYTES + 1 for offset in offsets) / len(offsets)
    return copies * per_run


def _distinct_offsets(repeats: list[tuple[int, int]]) -> int:
    """How many distinct `Σ s_j · i_j` the repetitions give: their product, or fewer when a
    stride is a multiple of a smaller one within its range (100·i + 400·j repeats itself)."""
    families: list[list[int]] = []  # [unit stride, largest offset in units, distinct offsets]
    for stride, extent in sorted(repeats):
        for family in families:
            unit, largest, _ = family
            if stride % unit == 0 and stride // unit <= largest:
                family[1] = largest + stride // unit * (extent - 1)
                family[2] = min(family[2] * extent, family[1] + 1)
                break
        else:
            families.append([stride, extent - 1, extent])
    return math.prod(family[2] for family in families)
