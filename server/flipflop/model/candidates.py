"""The configurations the advisor evaluates: block shapes and power limits (docs/model.md, §5
"Candidates" and §4)."""

from __future__ import annotations

from collections.abc import Iterable

from flipflop.gpu.profile import GpuProfile
from flipflop.launch import Dim3, volume
from flipflop.model.constants import MAX_BLOCK_DIMS, WARP_SIZE

# Fewer threads than a warp waste lanes on every instruction; candidate shapes start at 32.
_MIN_THREADS = WARP_SIZE


def candidate_blocks(
    profile: GpuProfile, *, two_d: bool, three_d: bool, include: Iterable[Dim3] = ()
) -> tuple[Dim3, ...]:
    """1-D multiples of 32 up to the GPU's limit, plus power-of-two 2-D/3-D shapes when asked."""
    most = profile.limits.max_threads_per_block
    shapes: list[Dim3] = [(x, 1, 1) for x in range(WARP_SIZE, most + 1, WARP_SIZE)]
    powers = _powers_of_two(most)
    if two_d:
        shapes += [(x, y, 1) for y in powers[1:] for x in powers if _fits((x, y, 1), most)]
    if three_d:
        shapes += [
            (x, y, z) for z in powers[1:] for y in powers for x in powers if _fits((x, y, z), most)
        ]
    shapes += list(include)
    return tuple(sorted(set(shapes), key=lambda shape: (volume(shape), shape[::-1])))


def power_limit_candidates(profile: GpuProfile, count: int = 10) -> tuple[float, ...]:
    """`count` evenly spaced power limits over the settable range, highest first, whole watts."""
    if count < 1:
        raise ValueError(f"need at least one power limit, got {count}")
    high, low = profile.power_limit_max_w, profile.power_limit_min_w
    if count == 1 or high <= low:
        return (float(round(high)),)
    step = (high - low) / (count - 1)
    return tuple(dict.fromkeys(float(round(high - i * step)) for i in range(count)))


def _powers_of_two(most: int) -> list[int]:
    return [1 << k for k in range(most.bit_length()) if 1 << k <= most]


def _fits(shape: Dim3, most_threads: int) -> bool:
    within_dims = all(extent <= limit for extent, limit in zip(shape, MAX_BLOCK_DIMS, strict=True))
    return within_dims and _MIN_THREADS <= volume(shape) <= most_threads
