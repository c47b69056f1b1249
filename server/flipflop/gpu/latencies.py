"""Instruction latencies shared by Volta and newer SMs, in SM cycles, each with its source.

Both the static analysis (a warp's dependent chains, `flipflop.analysis.chains`) and the model
(`flipflop.model.performance`) read them, so they live beside the GPU descriptions.
"""

from __future__ import annotations

# Dependent-issue latency of an fp32/int arithmetic instruction. Jia et al., "Dissecting the
# NVIDIA Volta GPU Architecture via Microbenchmarking" (2018) and the Turing follow-up (2019)
# measure 4 cycles for FFMA/IADD3; Ampere keeps the same pipeline depth.
ALU_DEPENDENT_LATENCY_CYCLES = 4.0

# Shared-memory load latency: ~19 (Volta) to ~30 (Ampere) in the same microbenchmark studies;
# we take the middle of that range.
SHARED_LATENCY_CYCLES = 24.0
