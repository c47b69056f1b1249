"""The CUDA toolchain the tests compile with: the one FlipFlop itself finds.

`scripts/setup.sh` installs nvcc from PyPI (`flipflop[nvcc]`) when the machine has no CUDA
toolkit, so a missing toolchain means a broken setup. Tests then fail with that message rather
than skip, so a green run always means the real compiler ran.
"""

from __future__ import annotations

from functools import cache

from flipflop.toolchain import Toolchain, ToolchainError, find_toolchain


class MissingToolchain(RuntimeError):
    pass


@cache
def required_toolchain() -> Toolchain:
    try:
        return find_toolchain()
    except ToolchainError as error:
        raise MissingToolchain(
            f"the tests need nvcc; run scripts/setup.sh (it installs flipflop[nvcc]): {error}"
        ) from error


def nvcc_for_tests() -> str:
    return str(required_toolchain().nvcc)
