"""How the advice names a configuration in its sentences (reasons, held-back notes, errors)."""

from __future__ import annotations

from flipflop.launch import Dim3
from flipflop.model import Prediction


def shape_text(block: Dim3) -> str:
    """(256, 1, 1) → "256"; (32, 8, 1) → "32x8": ASCII, as the reasons have always read."""
    x, y, z = block
    return str(x) if y == z == 1 else (f"{x}x{y}" if z == 1 else f"{x}x{y}x{z}")


def describe_configuration(prediction: Prediction) -> str:
    """"block 128", "TILE=4, block_size_x=64" (its tunables when it has any) or "block 256 at
    200 W"."""
    tunables = ", ".join(f"{name}={value}" for name, value in prediction.params)
    described = tunables or f"block {shape_text(prediction.block)}"
    limit = "" if prediction.power_limit_w is None else f" at {prediction.power_limit_w:.0f} W"
    return f"{described}{limit}"
