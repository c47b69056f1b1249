"""Launch geometry shared by every stage: block and grid shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flipflop.fast_init import fast_init

Dim3 = tuple[int, int, int]


def dim3(x: int, y: int = 1, z: int = 1) -> Dim3:
    return (x, y, z)


def volume(shape: Dim3) -> int:
    return shape[0] * shape[1] * shape[2]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@fast_init
@dataclass(frozen=True)
class LaunchShape:
    """One concrete launch: block and grid shape plus dynamic shared memory."""

    block: Dim3
    grid: Dim3
    dynamic_smem_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return volume(self.block)

    @property
    def blocks(self) -> int:
        return volume(self.grid)

    @property
    def threads(self) -> int:
        return self.threads_per_block * self.blocks


AxisKind = Literal["fixed", "covers"]


@dataclass(frozen=True)
class ProblemSize:
    """How the grid follows from a block.

    `grid`: fixed whatever the block. `threads`: total threads to cover per dimension, the grid is
    ceil(threads / block). `axes`: a mix per dimension, e.g. `dim3 grid(ceil(n / b.x), heads)` is
    (("covers", n), ("fixed", heads), ("fixed", 1)).
    """

    grid: Dim3 | None = None
    threads: Dim3 | None = None
    axes: tuple[tuple[AxisKind, int], tuple[AxisKind, int], tuple[AxisKind, int]] | None = None

    @property
    def has_fixed_axis(self) -> bool:
        """Some grid dimension does not grow as the block shrinks (the block decides the work)."""
        if self.grid is not None:
            return True
        return self.axes is not None and any(
            kind == "fixed" and count > 1 for kind, count in self.axes
        )

    def grid_for(self, block: Dim3) -> Dim3:
        if self.grid is not None:
            return self.grid
        if self.threads is not None:
            t = self.threads
            return (ceil_div(t[0], block[0]), ceil_div(t[1], block[1]), ceil_div(t[2], block[2]))
        if self.axes is not None:
            x, y, z = (
                count if kind == "fixed" else ceil_div(count, extent)
                for (kind, count), extent in zip(self.axes, block, strict=True)
            )
            return (x, y, z)
        raise ValueError("problem size has neither a grid nor a thread count")

    def describe(self) -> str:
        """"grid 64", "1048576 threads" or "4096 threads × grid 16" for messages."""
        if self.grid is not None:
            return "grid " + "×".join(str(v) for v in _trimmed(self.grid))
        if self.threads is not None:
            return "×".join(str(v) for v in _trimmed(self.threads)) + " threads"
        if self.axes is not None:
            parts = [
                f"{count} threads" if kind == "covers" else f"grid {count}"
                for kind, count in self.axes
                if count != 1
            ]
            return " × ".join(parts)
        return "unknown"


def _trimmed(shape: Dim3) -> list[int]:
    extents = list(shape)
    while len(extents) > 1 and extents[-1] == 1:
        extents.pop()
    return extents
