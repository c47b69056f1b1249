"""Fixtures shared across the test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_toolchain import required_toolchain
from flipflop.toolchain import Toolchain
from machine_code import ToolsMissing, ptxas_and_nvdisasm


@pytest.fixture(scope="session")
def cuda_toolchain() -> Toolchain:
    """nvcc/ptxas as FlipFlop finds them; a missing toolchain fails the test."""
    return required_toolchain()


@pytest.fixture(scope="session")
def ptxas_nvdisasm() -> tuple[Path, Path]:
    """ptxas and nvdisasm, for the tests that read the machine code (`machine_code`)."""
    try:
        return ptxas_and_nvdisasm()
    except ToolsMissing as error:
        pytest.fail(str(error))
