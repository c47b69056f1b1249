"""Model constants that are not per-GPU, each with where it comes from (docs/model.md §Constants).

Per-GPU numbers (clocks, bandwidth, rates, power coefficients) live in the GPU profile; these are
microarchitectural latencies and limits shared by Volta and newer parts.
"""

from __future__ import annotations

# The instruction latencies the analysis needs too (sources there), re-exported.
from flipflop.gpu.latencies import ALU_DEPENDENT_LATENCY_CYCLES as ALU_DEPENDENT_LATENCY_CYCLES
from flipflop.gpu.latencies import SHARED_LATENCY_CYCLES as SHARED_LATENCY_CYCLES

# One __syncthreads costs a few tens of cycles once all warps have arrived (Wong et al.,
# "Demystifying GPU Microarchitecture through Microbenchmarking", ISPASS 2010, ~20 cycles).
BARRIER_CYCLES = 20.0

# L1 hit latency, SM cycles: 28 on Volta (Jia et al., "Dissecting the NVIDIA Volta GPU
# Architecture via Microbenchmarking", 2018), 32 on Turing (Jia et al., "Dissecting the NVidia
# Turing T4 GPU via Microbenchmarking", 2019); Ampere keeps the same order.
L1_HIT_LATENCY_CYCLES = 32.0

# L2 hit latency, SM cycles: about 190 on Volta (Jia et al. 2018, V100) and Turing (Jia et al.
# 2019, T4) in the same pointer-chasing microbenchmarks; we take 200 for Volta and newer.
L2_HIT_LATENCY_CYCLES = 200.0

# One L1/shared wavefront is 128 bytes: four 32-byte sectors (see SHARED_WAVEFRONT_BYTES).
SECTORS_PER_WAVEFRONT = 4.0

# One shared-memory wavefront moves 32 banks × 4 bytes (CUDA C++ Programming Guide, "Shared
# Memory" for compute capability 5.x and newer).
SHARED_WAVEFRONT_BYTES = 128.0

# DRAM/L2 sector size (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory").
SECTOR_BYTES = 32.0

WARP_SIZE = 32

# Largest block extent per dimension (CUDA C++ Programming Guide, "Technical Specifications per
# Compute Capability": x and y up to 1024, z up to 64, for every compute capability ≥ 2.0).
MAX_BLOCK_DIMS = (1024, 1024, 64)
