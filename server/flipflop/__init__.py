"""FlipFlop: static energy/time advice for CUDA launch configurations."""

__version__ = "0.1.0"
