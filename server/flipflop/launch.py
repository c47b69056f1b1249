"""Launch geometry shared by every stage: block and grid shapes."""

from __future__ import annotations

from dataclasses import dataclass

Dim3 = tuple[int, int, int]


def dim3(x: int, y: int = 1, z: int = 1) -> Dim3:
    return (x, y, z)


def volume(shape: Dim3) -> int:
    return shape[0] * shape[1] * shape[2]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


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


@dataclass(frozen=True)
class ProblemSize:
    """How the grid follows from a block: fixed grid, or total threads covered per dimension."""

    grid: Dim3 | None = None
    threads: Dim3 | None = None

    def grid_for(self, block: Dim3) -> Dim3:
        if self.grid is not None:
            return self.grid
        if self.threads is not None:
            t = self.threads
            return (ceil_div(t[0], block[0]), ceil_div(t[1], block[1]), ceil_div(t[2], block[2]))
        raise ValueError("problem size has neither a grid nor a thread count")
