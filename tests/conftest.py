"""Fixtures shared across the test modules."""

from __future__ import annotations

import pytest

from cuda_toolchain import required_toolchain
from flipflop.toolchain import Toolchain


@pytest.fixture(scope="session")
def cuda_toolchain() -> Toolchain:
    """nvcc/ptxas as FlipFlop finds them; a missing toolchain fails the test."""
    return required_toolchain()
