"""Latency hiding by resident warps (`flipflop.model.hiding`): known answers, and the model's
time of a dependent FMA chain as the warps per scheduler grow."""

from __future__ import annotations

import math

import pytest

from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape
from flipflop.model import predict
from flipflop.model.hiding import overlapped_s
from flipflop.resources import Resources
from test_model import fma_work


def test_the_bounds_are_kept() -> None:
    # One warp a scheduler walks its chain; a chain shorter than a warp's share costs nothing.
    assert overlapped_s(2.0, 5.0, 1.0) == 5.0
    assert overlapped_s(2.0, 5.0, 0.25) == 5.0  # fewer warps than schedulers: still one
    assert overlapped_s(8.0, 1.0, 4.0) == 8.0  # each warp busy 2.0 of its 1.0: saturated
    assert overlapped_s(0.0, 3.0, 8.0) == 3.0 and overlapped_s(3.0, 0.0, 8.0) == 3.0
    for warps in (1.0, 2.0, 4.0, 12.0, 48.0):
        for throughput, latency in ((1.0, 1.0), (1.0, 3.0), (3.0, 1.0), (1.0, 0.2)):
            assert overlapped_s(throughput, latency, warps) >= max(throughput, latency) - 1e-12


def test_coinciding_stalls_cost_what_the_independent_warps_model_says() -> None:
    # Two warps each ready half the time: the unit idles a quarter of it.
    assert overlapped_s(2.0, 2.0, 2.0) == pytest.approx(2.0 / 0.75)
    # Throughput equal to the chain: idle share (1 − 1/W)^W, e^−1 for many warps.
    assert overlapped_s(1.0, 1.0, 12.0) == pytest.approx(1.0 / (1.0 - (11 / 12) ** 12))
    assert overlapped_s(1.0, 1.0, 1e6) == pytest.approx(1.0 / (1.0 - math.exp(-1.0)), rel=1e-5)
    # A chain a quarter of the throughput bound: 2% idle at most.
    assert 4.0 < overlapped_s(4.0, 1.0, 16.0) < 4.0 * 1.02


def test_a_dependent_fma_chain_needs_warps_to_reach_the_fp32_peak() -> None:
    rtx3070 = load_profile("rtx3070")
    fmas = 4096
    chained = fma_work(fmas)
    # One accumulator: every FMA waits for the previous one (4 cycles each).
    dependent = type(chained)(**{**chained.__dict__, "chain_cycles": 4.0 * (fmas + 8)})
    times = {}
    for threads in (32, 64, 128, 256):
        # One wave of six blocks on every SM: 6 × threads / 32 warps over 4 schedulers.
        shape = LaunchShape((threads, 1, 1), (rtx3070.sms * 6, 1, 1))
        independent = predict(rtx3070, Resources(registers=32), chained, shape)
        waiting = predict(rtx3070, Resources(registers=32), dependent, shape)
        assert waiting.time_s >= independent.time_s
        times[threads] = waiting.time_s / independent.time_s
    # More warps hide more of the chain; few warps leave most of it exposed.
    assert times[32] > times[64] > times[128] > times[256] >= 1.0
    assert times[256] < 1.05 and times[32] > 1.2


def test_a_load_waits_as_long_as_the_level_that_serves_it() -> None:
    from dataclasses import replace

    from flipflop.model.constants import L1_HIT_LATENCY_CYCLES, L2_HIT_LATENCY_CYCLES
    from flipflop.model.performance import launch_cost
    from test_model import copy_work

    rtx3070 = load_profile("rtx3070")
    shape = LaunchShape((256, 1, 1), (rtx3070.sms, 1, 1))
    streamed = copy_work()  # one load of 1/8 sector a thread, none of it reused
    cost = launch_cost(rtx3070, streamed, shape, 1)
    dram_s = rtx3070.dram_latency_cycles / (rtx3070.boost_clock_mhz * 1e6)
    assert cost.path_s == pytest.approx(dram_s)
    # Every sector read again by the block's other threads: L1 serves it.
    cached = replace(streamed, global_load_l1_misses=0.0)
    hit = launch_cost(rtx3070, cached, shape, 1)
    assert hit.path_s == 0.0
    assert hit.path_cycles == pytest.approx(cost.path_cycles + L1_HIT_LATENCY_CYCLES)
    # Half the sectors miss L1, and the block before along x read them: L2 serves that half.
    halved = replace(streamed, global_load_l1_misses=0.0625, global_load_new_sectors=0.0)
    mixed = launch_cost(rtx3070, halved, shape, 1)
    assert mixed.path_s == 0.0
    assert mixed.path_cycles == pytest.approx(
        cost.path_cycles + 0.5 * L1_HIT_LATENCY_CYCLES + 0.5 * L2_HIT_LATENCY_CYCLES)
