"""Human-readable numbers for messages, tables and hovers."""

from __future__ import annotations

from flipflop.launch import Dim3


def format_shape(block: Dim3) -> str:
    """(256, 1, 1) → "256"; (32, 8, 1) → "32×8"; (8, 8, 4) → "8×8×4"."""
    x, y, z = block
    if z != 1:
        return f"{x}×{y}×{z}"
    if y != 1:
        return f"{x}×{y}"
    return str(x)


def _scaled(value: float, unit: str) -> str:
    magnitude = abs(value)
    for factor, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if magnitude >= factor or prefix == "n":
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_energy(joules: float) -> str:
    return _scaled(joules, "J")


def format_time(seconds: float) -> str:
    return _scaled(seconds, "s")


def format_power(watts: float) -> str:
    return f"{watts:.0f} W"
