"""The performance–power–energy model against hand-computed expectations.

Expectations follow from the shipped RTX 3070 profile's published numbers (SMs, bandwidth,
per-SM rates, clocks) and the equations of docs/model.md; nothing here is fitted.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import pairwise

import pytest

from flipflop.analysis.work import SiteWork, ThreadWork
from flipflop.gpu.profile import GpuProfile
from flipflop.gpu.profiles import known_gpu_ids, load_profile
from flipflop.launch import LaunchShape
from flipflop.model import (
    UnlaunchableConfig,
    candidate_blocks,
    power_limit_candidates,
    predict,
    predict_power_limits,
    predict_prepared,
    prepare_launch,
)
from flipflop.resources import Resources


def work(**counts: float) -> ThreadWork:
    """A ThreadWork with every count zero except those given (all threads active)."""
    fields: dict[str, float] = {
        name: 0.0
        for name, field in ThreadWork.__dataclass_fields__.items()
        # Fields that default to None or to a tuple keep their defaults: not known, as derived.
        if field.default is not None and not isinstance(field.default, tuple)
    }
    fields["active_fraction"] = 1.0
    fields.update(counts)
    return ThreadWork(**fields)  # type: ignore[arg-type]


def copy_work() -> ThreadWork:
    """y[i] = x[i]: one coalesced 4-byte load and store per thread (1/8 of a sector each)."""
    return work(
        instructions=10,
        int_ops=4,
        global_load_bytes=4,
        global_store_bytes=4,
        global_load_sectors=0.125,
        global_store_sectors=0.125,
        branches=1,
    )


def fma_work(fmas: int = 4096) -> ThreadWork:
    """A dependent-free chain of FMAs per thread and one coalesced store of the result."""
    return work(
        instructions=fmas + 8,
        # Independent FMAs: the warp's schedule is one cycle per instruction (no chain).
        chain_cycles=fmas + 8,
        fp32_flops=2 * fmas,
        int_ops=4,
        global_store_bytes=4,
        global_store_sectors=0.125,
    )


@pytest.fixture(scope="module")
def rtx3070() -> GpuProfile:
    return load_profile("rtx3070")


def test_waves_follow_occupancy(rtx3070: GpuProfile) -> None:
    # 256 threads × 32 registers: warps allow 48/8 = 6 blocks per SM, registers 8, blocks 16.
    capacity = rtx3070.sms * 6
    shape = LaunchShape((256, 1, 1), (2 * capacity + rtx3070.sms, 1, 1))
    prediction = predict(rtx3070, Resources(registers=32), copy_work(), shape)
    assert prediction.active_blocks_per_sm == 6
    assert prediction.limiter == "warps"
    assert prediction.occupancy == pytest.approx(1.0)
    assert prediction.waves == 3
    assert prediction.breakdown.wave_fraction == pytest.approx(2 + 1 / 6)
    assert prediction.breakdown.last_wave_fill == pytest.approx(1 / 6)


def test_memory_bound_time_is_bytes_over_bandwidth(rtx3070: GpuProfile) -> None:
    threads = 1 << 24
    shape = LaunchShape((256, 1, 1), (threads // 256, 1, 1))
    prediction = predict(rtx3070, Resources(registers=16), copy_work(), shape)
    dram_bytes = threads * 8.0
    expected = dram_bytes / (rtx3070.memory_bandwidth_gbs * 1e9) + rtx3070.launch_overhead_s
    assert prediction.bound == "memory"
    assert prediction.breakdown.dram_bytes == pytest.approx(dram_bytes)
    assert prediction.time_s == pytest.approx(expected, rel=0.01)


def test_compute_bound_time_is_flops_over_peak(rtx3070: GpuProfile) -> None:
    shape = LaunchShape((256, 1, 1), (rtx3070.sms * 6 * 40, 1, 1))
    prediction = predict(rtx3070, Resources(registers=32), fma_work(), shape)
    flops = shape.threads * 2 * 4096.0
    peak = rtx3070.sms * rtx3070.rates.fp32_flops * prediction.clock_mhz * 1e6
    assert prediction.bound == "compute"
    assert prediction.time_s == pytest.approx(flops / peak + rtx3070.launch_overhead_s, rel=0.01)


def test_power_stays_within_idle_and_tdp_on_every_profile() -> None:
    kernels = (copy_work(), fma_work(), work(instructions=3, active_fraction=0.01))
    for gpu_id in known_gpu_ids():
        profile = load_profile(gpu_id)
        for kernel in kernels:
            for threads in (32, 256, 1024):
                shape = LaunchShape((threads, 1, 1), (4096, 1, 1))
                prediction = predict(profile, Resources(registers=32), kernel, shape)
                assert profile.power.idle_w <= prediction.power_w <= profile.tdp_w, gpu_id
                assert prediction.energy_j == pytest.approx(prediction.power_w * prediction.time_s)


@pytest.mark.parametrize("kernel", [copy_work(), fma_work()], ids=["memory", "compute"])
def test_lower_power_limit_never_speeds_up_or_raises_power(
    rtx3070: GpuProfile, kernel: ThreadWork
) -> None:
    shape = LaunchShape((256, 1, 1), (65536, 1, 1))
    limits = power_limit_candidates(rtx3070, count=10)
    assert limits == tuple(sorted(limits, reverse=True))
    assert limits[0] == rtx3070.power_limit_max_w and limits[-1] == rtx3070.power_limit_min_w
    predictions = [predict(rtx3070, Resources(registers=32), kernel, shape, cap) for cap in limits]
    for higher, lower in pairwise(predictions):
        assert lower.time_s >= higher.time_s
        assert lower.power_w <= higher.power_w + 1e-9
        assert lower.clock_mhz <= higher.clock_mhz
    for prediction in predictions:
        assert prediction.power_w <= (prediction.power_limit_w or rtx3070.tdp_w) + 1e-6
        assert prediction.energy_j == pytest.approx(prediction.power_w * prediction.time_s)


def test_power_limit_slows_compute_bound_by_the_clock_and_memory_bound_barely(
    rtx3070: GpuProfile,
) -> None:
    shape = LaunchShape((256, 1, 1), (65536, 1, 1))
    resources = Resources(registers=32)
    low = rtx3070.power_limit_min_w
    fast_compute = predict(rtx3070, resources, fma_work(), shape)
    slow_compute = predict(rtx3070, resources, fma_work(), shape, low)
    assert slow_compute.clock_mhz < fast_compute.clock_mhz
    body = [p.time_s - rtx3070.launch_overhead_s for p in (fast_compute, slow_compute)]
    assert body[1] / body[0] == pytest.approx(
        fast_compute.clock_mhz / slow_compute.clock_mhz, rel=0.01
    )
    fast_memory = predict(rtx3070, resources, copy_work(), shape)
    slow_memory = predict(rtx3070, resources, copy_work(), shape, low)
    assert slow_memory.time_s <= fast_memory.time_s * 1.10
    assert slow_memory.energy_j < fast_memory.energy_j


def test_power_breakdown_adds_up_and_dram_power_is_bytes_times_energy(
    rtx3070: GpuProfile,
) -> None:
    shape = LaunchShape((256, 1, 1), (65536, 1, 1))
    prediction = predict(rtx3070, Resources(registers=16), copy_work(), shape)
    power = prediction.breakdown.power
    assert power.total_w == pytest.approx(prediction.power_w)
    dram_j = rtx3070.power.pj_per_dram_byte * 1e-12 * prediction.breakdown.dram_bytes
    assert power.dram_w == pytest.approx(dram_j / prediction.time_s)
    assert power.static_w == pytest.approx(rtx3070.power.static_per_sm_w * rtx3070.sms, rel=0.02)


def test_tiny_launch_is_launch_bound(rtx3070: GpuProfile) -> None:
    prediction = predict(
        rtx3070, Resources(registers=16), copy_work(), LaunchShape((32, 1, 1), (1, 1, 1))
    )
    assert prediction.bound == "launch"
    assert prediction.waves == 1
    assert prediction.breakdown.idle_sms_last_wave == rtx3070.sms - 1


def test_few_resident_warps_make_a_memory_kernel_latency_bound(rtx3070: GpuProfile) -> None:
    # 64 KB of static shared memory allow one 32-thread block per SM: one warp cannot cover
    # the DRAM latency, so the dependent chain (one latency per wave) sets the time.
    shape = LaunchShape((32, 1, 1), (46 * 100, 1, 1))
    prediction = predict(
        rtx3070, Resources(registers=16, static_smem_bytes=64 * 1024), copy_work(), shape
    )
    assert prediction.active_blocks_per_sm == 1
    assert prediction.limiter == "shared_memory"
    assert prediction.bound == "latency"
    latency_s = rtx3070.dram_latency_cycles / (rtx3070.boost_clock_mhz * 1e6)
    assert prediction.time_s >= 100 * latency_s


def test_idle_threads_cost_energy(rtx3070: GpuProfile) -> None:
    """Same useful work, but half the launched threads only evaluate a guard and leave."""
    useful = copy_work()
    shape = LaunchShape((256, 1, 1), (4096, 1, 1))
    doubled = LaunchShape((512, 1, 1), (4096, 1, 1))
    half_idle = replace(
        useful,
        instructions=(useful.instructions + 3) / 2,
        int_ops=useful.int_ops / 2 + 1,
        global_load_bytes=useful.global_load_bytes / 2,
        global_store_bytes=useful.global_store_bytes / 2,
        global_load_sectors=useful.global_load_sectors / 2,
        global_store_sectors=useful.global_store_sectors / 2,
        active_fraction=0.5,
    )
    resources = Resources(registers=32)
    compact = predict(rtx3070, resources, useful, shape)
    wasteful = predict(rtx3070, resources, half_idle, doubled)
    assert wasteful.breakdown.dram_bytes == pytest.approx(compact.breakdown.dram_bytes)
    assert wasteful.energy_j > compact.energy_j


def test_bank_conflicts_slow_a_shared_memory_kernel(rtx3070: GpuProfile) -> None:
    shape = LaunchShape((256, 1, 1), (46 * 6 * 20, 1, 1))
    # Independent accesses (an unrolled copy): the warp's chain is its 600 issue cycles.
    clean = work(instructions=600, shared_accesses=512, shared_wavefronts=512, chain_cycles=600)
    conflicted = replace(clean, shared_wavefronts=512 * 8)
    resources = Resources(registers=32, static_smem_bytes=4096)
    fast = predict(rtx3070, resources, clean, shape)
    slow = predict(rtx3070, resources, conflicted, shape)
    assert slow.bound == "shared"
    # 8 wavefronts per access at one wavefront per cycle: 4096 cycles per warp.
    warps = shape.threads / 32
    expected = warps * 512 * 8 / rtx3070.sms / (slow.clock_mhz * 1e6)
    assert slow.time_s == pytest.approx(expected + rtx3070.launch_overhead_s, rel=0.05)
    assert slow.energy_j > fast.energy_j


def test_site_counts_set_the_loads_in_flight(rtx3070: GpuProfile) -> None:
    load = SiteWork("global", False, "coalesced", (7,), 1.0, 4.0, 0.125, 1.0)
    with_sites = replace(copy_work(), sites=(load,))
    shape = LaunchShape((32, 1, 1), (46, 1, 1))
    resources = Resources(registers=16)
    assert predict(rtx3070, resources, with_sites, shape).time_s == pytest.approx(
        predict(rtx3070, resources, copy_work(), shape).time_s
    )


def test_unlaunchable_shapes_raise_with_the_reason(rtx3070: GpuProfile) -> None:
    with pytest.raises(UnlaunchableConfig, match="registers"):
        predict(rtx3070, Resources(registers=255), copy_work(), LaunchShape((512, 1, 1), (8, 1, 1)))
    with pytest.raises(UnlaunchableConfig, match="1024"):
        predict(rtx3070, Resources(registers=16), copy_work(), LaunchShape((64, 32, 1), (8, 1, 1)))
    with pytest.raises(UnlaunchableConfig, match="limit"):
        predict(rtx3070, Resources(registers=16), copy_work(), LaunchShape((1, 1, 128), (8, 1, 1)))
    with pytest.raises(ValueError, match="positive"):
        predict(rtx3070, Resources(registers=16), copy_work(), LaunchShape((0, 1, 1), (8, 1, 1)))
    with pytest.raises(ValueError, match="power limit"):
        predict(
            rtx3070, Resources(registers=16), copy_work(), LaunchShape((32, 1, 1), (8, 1, 1)), 0
        )


def test_candidate_blocks(rtx3070: GpuProfile) -> None:
    one_d = candidate_blocks(rtx3070, two_d=False, three_d=False)
    assert one_d == tuple((x, 1, 1) for x in range(32, 1025, 32))
    two_d = candidate_blocks(rtx3070, two_d=True, three_d=False, include=[(48, 3, 1)])
    assert (16, 16, 1) in two_d and (32, 32, 1) in two_d and (1, 32, 1) in two_d
    assert (48, 3, 1) in two_d
    assert all(shape[2] == 1 for shape in two_d)
    assert len(two_d) == len(one_d) + 45 + 1  # powers of two, y ≥ 2, 32..1024 threads
    three_d = candidate_blocks(rtx3070, two_d=True, three_d=True)
    assert (8, 8, 4) in three_d and (4, 4, 64) in three_d and (1, 1, 128) not in three_d
    assert all(32 <= math.prod(shape) <= 1024 for shape in three_d)
    assert len(set(three_d)) == len(three_d)


def test_power_limit_candidates_cover_the_settable_range(rtx3070: GpuProfile) -> None:
    limits = power_limit_candidates(rtx3070)
    assert len(limits) == 10
    assert max(limits) == rtx3070.power_limit_max_w
    assert min(limits) == rtx3070.power_limit_min_w
    with pytest.raises(ValueError):
        power_limit_candidates(rtx3070, count=0)


def test_sweeping_power_limits_matches_one_limit_at_a_time(rtx3070: GpuProfile) -> None:
    shape = LaunchShape((128, 1, 1), (8192, 1, 1))
    prepared = prepare_launch(rtx3070, Resources(registers=32), fma_work(512), shape)
    limits = (None, *power_limit_candidates(rtx3070))
    swept = predict_power_limits(rtx3070, prepared, limits)
    for limit, prediction in zip(limits, swept, strict=True):
        single = predict_prepared(rtx3070, prepared, limit)
        assert prediction.power_limit_w == limit
        assert prediction.clock_mhz == pytest.approx(single.clock_mhz, abs=1.0)
        assert prediction.power_w <= (limit or rtx3070.tdp_w) + 1e-9
