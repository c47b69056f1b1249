"""What a block's caches serve of its global loads: L1 inside the block, L2 between neighbours.

Per site, the share of the requested sectors that miss L1 (the block's threads and the site's
unrolled copies touch the same sectors), of those the share the block before along x did not
read, and of those the share the block one grid row earlier read; `flipflop.model.l2` decides
from the GPU's L2 size how much of that last share hits. Footprints are exact
(`memory.block_footprint_sectors`); docs/model.md §Time describes the mechanism and its limits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from flipflop.analysis import expr as ex
from flipflop.analysis.lanes import EvaluatedFunction
from flipflop.analysis.memory import (
    SECTOR_BYTES,
    SiteShape,
    StaticSite,
    block_footprint_sectors,
    thread_address_range,
)
from flipflop.fast_init import fast_init
from flipflop.launch import LaunchShape


@fast_init
@dataclass(frozen=True)
class Reuse:
    """What of a site's requested sectors one block's caches serve (shares, 1 = none)."""

    l1_miss: float = 1.0  # of the requested sectors, the share that misses L1
    new: float = 1.0  # of those, the share the block before along x did not read
    row: float = 0.0  # of the new ones, the share the block one grid row earlier read


NO_REUSE = Reuse()


def reuse_shares(
    sites: Sequence[StaticSite],
    shapes: Sequence[SiteShape],
    groups: Sequence[AccessGroup],
    shape: LaunchShape,
    env: Mapping[str, float],
) -> list[Reuse]:
    """Per site, the share of its requested sectors that miss L1 and what of those neighbouring
    blocks read too. What the block's threads and the site's unrolled copies touch more than
    once is served by L1 (global loads are cached in L1 on compute capability 7.0 and newer,
    CUDA C++ Programming Guide, "Global Memory" of each compute capability). Sites of one
    source access (same line, address base and loop nest, whatever their offsets) share one
    footprint: the window of an unrolled stencil. A neighbouring block's footprint is the same
    one moved by the address's block stride; what the two share (a stencil's halo, a GEMM
    block's row of A) is read once from DRAM when L2 still holds it. `groups` are the sites'
    `access_groups`."""
    shares = [NO_REUSE] * len(sites)
    # Groups of one pattern whose sites all load get one answer: arrays indexed alike
    # (`x[i]` and `y[i]`) are common, and the footprints are most of the work.
    answered: dict[tuple[int, tuple[float, ...]], Reuse | None] = {}
    for group in groups:
        members = [i for i in group.members if shapes[i].sectors > 0.0]
        if not members:
            continue
        if len(members) < len(group.members):
            reuse = _group_reuse(sites, shapes, members, shape, env)
        else:
            key = (group.pattern, tuple(shapes[i].sectors for i in members))
            if key not in answered:
                answered[key] = _group_reuse(sites, shapes, members, shape, env)
            reuse = answered[key]
        if reuse is not None:
            for index in members:
                shares[index] = reuse
    return shares


def _group_reuse(
    sites: Sequence[StaticSite],
    shapes: Sequence[SiteShape],
    members: list[int],
    shape: LaunchShape,
    env: Mapping[str, float],
) -> Reuse | None:
    """What one block's caches serve of a group's loads; None when the lanes cannot be
    followed (a missing parameter, a footprint too fragmented to count)."""
    first = sites[members[0]]
    if len(members) == 1:
        offsets = first.copy_offsets or ()
    else:
        offsets = tuple(sorted({o for i in members for o in sites[i].copy_offsets or ()}))
    try:
        cx, cy, cz, cl = (
            first.lane_strides(env)
            if first.lane_coefficients is not None
            else (0, 0, 0, 0)  # uniform: every thread at the same address
        )
        functions = tuple(function.evaluate(env) for function in first.lane_functions)
    except ex.MissingSymbol:
        return None
    block = shape.block
    footprint = _footprint_of((cx, cy, cz, cl), functions, first.width_bytes, block)
    touched = footprint(offsets)
    if touched is None:
        return None
    requested = sum(shapes[i].sectors * sites[i].accesses for i in members)
    requested *= shape.threads_per_block
    l1_miss = min(1.0, touched / requested) if requested > 0.0 else 1.0
    if first.kind in _LOADED_OFFSET_KINDS:
        return Reuse(l1_miss)  # another block's offsets may differ: no sharing assumed
    low, high = thread_address_range(cx, cy, cz, cl, *block, functions)
    span = min(offsets) + low, max(offsets) + high + first.width_bytes - 1
    before_x, row_before = _neighbour_shares(first, shape, env, offsets, touched, footprint,
                                             span)  # fmt: skip
    return Reuse(l1_miss, 1.0 - before_x, row_before)


# Addresses with an offset loaded from memory (`memory.describe_address`): the block's
# footprint is that of the address without the loaded part, as if every thread of the block
# loaded the same offset. Exact for a table entry the whole block shares (`uniform_data`); for
# one per row of the block (`row_data`) the rows are taken to coincide, where a request is
# costed as if they lay apart (`memory.evaluate_site`): the fewest bytes the block can bring in
# against the most sectors one request can touch. Dedispersion's rows, DMs whose shifts differ
# by a fraction of a sample, lie between and near the first (docs/validation.md).
_LOADED_OFFSET_KINDS = frozenset(("row_data", "uniform_data"))
_FOOTPRINT_KINDS = frozenset(("affine", "uniform")) | _LOADED_OFFSET_KINDS


@dataclass(frozen=True)
class AccessGroup:
    """The sites of one source access, sharing a footprint."""

    members: tuple[int, ...]  # site indices
    # Groups with one pattern (the same lanes, width, offsets, block strides and accesses,
    # another base) have the same reuse whenever all their sites load.
    pattern: int


def access_groups(sites: Sequence[StaticSite], kinds: Sequence[str]) -> tuple[AccessGroup, ...]:
    """The sites of one source access that share a footprint (`reuse_shares`); it depends on
    the code only, so callers that evaluate many launches compute it once."""
    groups: dict[tuple[object, ...], list[int]] = {}
    for index, site in enumerate(sites):
        cached_read = site.space in ("global", "tex") and not site.is_store
        if cached_read and site.kind in _FOOTPRINT_KINDS and site.copy_offsets is not None:
            # Copies behind their own bounds tests (a guarded stencil) are one access still:
            # the loop nest, not the guards, says which copies run together.
            loops = tuple(i for i in site.key if kinds[i] == "loop")
            group = (site.space, site.width_bytes, site.base, site.lines, loops)
            groups.setdefault(group, []).append(index)
    patterns: dict[tuple[object, ...], int] = {}
    found = []
    for members in groups.values():
        first = sites[members[0]]
        offsets = tuple(sorted({o for i in members for o in sites[i].copy_offsets or ()}))
        accesses = tuple(sites[i].accesses for i in members)
        pattern = (first.kind, first.space, first.width_bytes, first.lane_coefficients,
                   first.lane_functions, offsets, first.block_coefficients, accesses)  # fmt: skip
        found.append(AccessGroup(tuple(members), patterns.setdefault(pattern, len(patterns))))
    return tuple(found)


def _footprint_of(
    lanes: tuple[int, int, int, int], functions: tuple[EvaluatedFunction, ...], width: int,
    block: tuple[int, int, int],
) -> Callable[[tuple[int, ...]], int | None]:
    """`block_footprint_sectors` of one access pattern, as a function of the copies' offsets."""

    def footprint(copies: tuple[int, ...]) -> int | None:
        return block_footprint_sectors(*lanes, copies, width, *block, functions)

    return footprint


def _neighbour_shares(
    site: StaticSite,
    shape: LaunchShape,
    env: Mapping[str, float],
    offsets: tuple[int, ...],
    touched: int,
    footprint: Callable[[tuple[int, ...]], int | None],
    span: tuple[int, int],
) -> tuple[float, float]:
    """(share of a block's footprint the block before along x read, share of the rest the
    block one grid row earlier read), averaged over the grid: the first block of each row has
    no block before it, the first row no row before it. Each pair shares what their footprints
    overlap in; the two overlaps are taken as independent."""
    if site.block_coefficients is None or touched <= 0:
        return 0.0, 0.0
    try:
        step_x, step_y, _ = site.block_strides(env)
    except ex.MissingSymbol:
        return 0.0, 0.0

    first, last = span[0] // SECTOR_BYTES, span[1] // SECTOR_BYTES

    def shared_with(step: int, blocks_along: int) -> float:
        if blocks_along <= 1:
            return 0.0
        if step == 0:
            return 1.0 - 1.0 / blocks_along
        moved_first, moved_last = (span[0] + step) // SECTOR_BYTES, (span[1] + step) // SECTOR_BYTES
        if moved_first > last or moved_last < first:
            return 0.0  # the two blocks' sector ranges do not meet: the usual 1-D case
        both = footprint(tuple(sorted({*offsets, *(o + step for o in offsets)})))
        if both is None:
            return 0.0
        overlap = max(0, 2 * touched - both) / touched
        return min(1.0, overlap) * (1.0 - 1.0 / blocks_along)

    grid_x, grid_y, _ = shape.grid
    return shared_with(step_x, grid_x), shared_with(step_y, grid_y)
