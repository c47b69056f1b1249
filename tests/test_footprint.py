"""Footprints of affine accesses against brute-force enumeration of their addresses."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from flipflop.model.footprint import distinct_sectors


def _brute(dimensions: list[tuple[int, int]], width: int) -> int:
    sectors: set[int] = set()
    for point in itertools.product(*(range(n) for _, n in dimensions)):
        address = sum(stride * i for (stride, _), i in zip(dimensions, point, strict=True))
        sectors.update(range(address // 32, (address + width - 1) // 32 + 1))
    return len(sectors)


@pytest.mark.parametrize(
    ("dimensions", "width"),
    [
        ([(4, 32)], 4),  # a warp of consecutive floats: 4 sectors
        ([(4, 32), (4 * 4110, 8)], 4),  # a 32×8 tile of a 4110-wide image
        ([(4, 16), (4 * 16, 16)], 4),  # rows that abut: one 1 KB run
        ([(4, 78), (4 * 4110, 30)], 4),  # the convolution fill of a 64×16 block with halo
        ([(16, 32)], 16),  # float4 per lane
        ([(0, 32), (4, 8)], 4),  # every lane the same address, 8 iterations
        ([(128, 32)], 4),  # one float per 128 B: a sector per lane
        ([(4, 32), (4, 8)], 4),  # overlapping strides: a sliding window
    ],
)
def test_row_major_boxes_are_exact(dimensions: list[tuple[int, int]], width: int) -> None:
    assert distinct_sectors(dimensions, width) == _brute(dimensions, width)


def test_other_boxes_are_an_upper_bound_and_close() -> None:
    rng = random.Random(7)
    for _ in range(200):
        dimensions = [(rng.choice([4, 8, 12, 100, 400, 4096]), rng.randint(1, 12))
                      for _ in range(rng.randint(1, 3))]
        width = rng.choice([1, 4, 8, 16])
        exact = _brute(dimensions, width)
        estimate = distinct_sectors(dimensions, width)
        assert exact <= estimate <= max(exact * 2.0, exact + 2), (dimensions, width)


def test_no_dimensions_is_one_access() -> None:
    assert distinct_sectors([], 4) == 1
    assert distinct_sectors([(4, 1)], 64) == math.ceil(64 / 32)
