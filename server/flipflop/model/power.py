"""Energy of one launch, split the way the power model charges it (docs/model.md §Power).

Dynamic energy is charged per operation (pJ/op at the boost clock's voltage) and scales with
V(f)^k when DVFS lowers the clock; DRAM energy per byte does not, since the memory clock and
voltage stay put. Static and constant power are paid per second.
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.analysis.work import ThreadWork
from flipflop.fast_init import fast_init
from flipflop.gpu.profile import GpuProfile
from flipflop.launch import LaunchShape
from flipflop.model.constants import SECTOR_BYTES, SHARED_WAVEFRONT_BYTES, WARP_SIZE

_PICO = 1e-12


@fast_init
@dataclass(frozen=True)
class DynamicEnergy:
    """Per-launch dynamic energy at the boost clock's voltage, in joules."""

    core_by_unit: tuple[tuple[str, float], ...]  # scales with V(f)^k
    core_j: float  # the sum of `core_by_unit`
    dram_j: float  # does not scale with the SM clock


def dynamic_energy(
    profile: GpuProfile, work: ThreadWork, shape: LaunchShape, dram_bytes: float
) -> DynamicEnergy:
    """Σ_u e_u × ops_u over every launched thread, plus L2 traffic and the launch's
    `dram_bytes` (the time model's count, `LaunchCost.dram_bytes`, L2 reuse included)."""
    coeff = profile.power
    threads = shape.threads
    # A shared wavefront serves a warp: its bytes split evenly over the warp's lanes.
    shared_bytes = work.shared_wavefronts * SHARED_WAVEFRONT_BYTES / WARP_SIZE
    l2_bytes = SECTOR_BYTES * (work.global_load_sectors + work.global_store_sectors)
    l2_bytes += work.local_bytes + work.async_copy_bytes
    pipes = work.pipe_work()
    # The datapath energy of a pipe's lane-instruction is that of the FMA the per-FLOP
    # coefficient was derived from (2 FLOPs; 4 for a half2 FMA): an expanded division's six
    # FP32 instructions cost six FMAs' worth, though it counts one FLOP.
    per_thread_pj = (
        ("fp32", coeff.pj_per_fp32_flop * 2.0 * pipes.fp32),
        ("fp64", coeff.pj_per_fp64_flop * 2.0 * pipes.fp64),
        ("fp16", coeff.pj_per_fp16_flop * 4.0 * pipes.fp16),
        ("int", coeff.pj_per_int_op * pipes.integer),
        ("sfu", coeff.pj_per_sfu_op * (pipes.sfu + pipes.conversion)),
        ("tensor", coeff.pj_per_tensor_flop * work.tensor_flops),
        ("issue", coeff.pj_per_instruction * pipes.issue_slots),
        ("shared", coeff.pj_per_shared_byte * shared_bytes),
        ("l2", coeff.pj_per_l2_byte * l2_bytes),
    )
    core_by_unit = tuple((unit, pj * threads * _PICO) for unit, pj in per_thread_pj)
    return DynamicEnergy(
        core_by_unit=core_by_unit,
        core_j=sum(joules for _, joules in core_by_unit),
        dram_j=coeff.pj_per_dram_byte * dram_bytes * _PICO,
    )
