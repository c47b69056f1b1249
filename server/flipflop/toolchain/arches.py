"""GPU architecture names as nvcc and ptxas spell them."""

from __future__ import annotations

import re

# The architectures FlipFlop is built and tested for (Turing to Blackwell).
SUPPORTED_ARCHES = (
    "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
    "sm_100", "sm_100a", "sm_103", "sm_120",
)  # fmt: skip

_ARCH_PATTERN = re.compile(r"^(?:sm_|compute_|sm)?(\d)\.?(\d+)([af]?)$")


class ArchError(ValueError):
    """An architecture name nvcc would not accept."""


def normalize_arch(text: str) -> str:
    """`sm_80`, `80`, `8.0`, `compute_90a` -> `sm_80`/`sm_90a`; raise `ArchError` otherwise."""
    match = _ARCH_PATTERN.match(text.strip().lower())
    if match is None:
        raise ArchError(
            f"unknown GPU architecture {text!r}; expected a name like sm_80 or sm_90a "
            f"(supported: {', '.join(SUPPORTED_ARCHES)})"
        )
    major, minor, suffix = match.groups()
    return f"sm_{major}{minor}{suffix}"


def compute_capability(arch: str) -> tuple[int, int]:
    """`sm_86` -> (8, 6); `sm_100a` -> (10, 0)."""
    digits = re.sub(r"\D", "", normalize_arch(arch))
    return int(digits[:-1]), int(digits[-1])
