"""GPU profiles: every number the occupancy, performance and power models need for one GPU.

Profiles live in `calibration/profiles/<id>.json` (shipped in the wheel as `flipflop/profiles`).
In the JSON each number is `{"value": V, "source": "...", "kind": "spec"|"derived"|"measured"}`;
`GpuProfile` holds only the values, `sources` keeps the provenance by field name.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OccupancyLimits:
    """Per-architecture limits as NVIDIA's cuda_occupancy.h uses them."""

    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    max_threads_per_block: int
    registers_per_sm: int
    max_registers_per_thread: int
    register_allocation_unit: int  # 256 registers per warp allocation
    warp_allocation_granularity: int  # warps are allocated to 4 sub-partitions
    max_registers_per_block: int
    smem_per_sm_bytes: int  # largest carveout
    smem_per_block_optin_bytes: int
    smem_allocation_unit_bytes: int
    reserved_smem_per_block_bytes: int
    smem_carveouts_kb: tuple[int, ...]  # supported shared-memory carveout sizes
    max_barriers_per_sm: int | None = None  # None: the header applies no barrier limit (cc < 9)
    smem_per_block_bytes: int = 48 * 1024  # default per-block limit without the opt-in attribute


@dataclass(frozen=True)
class PeakRates:
    """Per-SM per-clock throughputs (operations per cycle per SM)."""

    fp32_flops: float  # FMA = 2 FLOPs
    fp64_flops: float
    fp16_flops: float
    int_ops: float
    sfu_ops: float
    tensor_flops: float  # dense fp16/bf16 tensor-core FLOPs
    shared_bytes: float  # shared-memory bytes per cycle per SM
    issue_per_cycle: float  # warp instructions issued per cycle per SM (sub-partitions)
    # Cycles one warp request holds the L1/shared data array at least (a shared access, or a
    # global one through L1): without bank conflicts this many, otherwise the larger of this
    # and its wavefronts.
    l1_request_cycles: float = 1.0


@dataclass(frozen=True)
class PowerCoefficients:
    """Coefficients of the power model (see docs/model.md)."""

    idle_w: float  # board power with the GPU idle at the default clock
    static_per_sm_w: float  # leakage + clock tree of an SM with resident warps, at base voltage
    constant_active_w: float  # uncore power whenever a kernel runs (L2, crossbar, memory ctrl)
    pj_per_fp32_flop: float
    pj_per_fp64_flop: float
    pj_per_fp16_flop: float
    pj_per_int_op: float
    pj_per_sfu_op: float
    pj_per_tensor_flop: float
    pj_per_instruction: float  # fetch/decode/issue/register-file overhead per warp-lane instruction
    pj_per_shared_byte: float
    pj_per_l2_byte: float
    pj_per_dram_byte: float
    voltage_exponent: float  # dynamic power ∝ f · V(f)^2, V(f) from `dvfs_points`


@dataclass(frozen=True)
class GpuProfile:
    id: str
    name: str
    arch: str  # "sm_86"
    compute_capability: tuple[int, int]
    sms: int
    limits: OccupancyLimits
    base_clock_mhz: float
    boost_clock_mhz: float
    memory_bandwidth_gbs: float  # achievable DRAM bandwidth used by the model
    l2_bytes: int
    rates: PeakRates
    power: PowerCoefficients
    tdp_w: float
    power_limit_min_w: float
    power_limit_max_w: float
    # (clock MHz, relative voltage) points; voltage relative to the boost clock's = 1.0.
    dvfs_points: tuple[tuple[float, float], ...]
    launch_overhead_s: float
    dram_latency_cycles: float
    # Published peak DRAM bandwidth; `memory_bandwidth_gbs` is the achievable part of it.
    dram_peak_bandwidth_gbs: float = 0.0
    # The memory clock NVML reports at that peak (half the per-pin data rate of GDDR and HBM);
    # 0: not given, and a locked memory clock cannot be modelled.
    memory_clock_mhz: float = 0.0
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    # "spec" | "derived" | "measured" by dotted field name, like `sources`.
    kinds: dict[str, str] = field(default_factory=dict, compare=False)
