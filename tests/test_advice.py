"""The advisor: Pareto front, recommendation rules, baseline, exclusions, drivers and JSON.

Directional expectations a GPU engineer would sign, on the shipped RTX 3070 profile, with
ThreadWork built by hand the way the feature extractor reports it for each launch shape.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from flipflop.advice import (
    DRIVER_KINDS,
    NoLaunchableConfig,
    advice_to_json,
    advise,
    energy_drivers,
    pareto_flags,
)
from flipflop.advice.drivers import MAX_DRIVERS
from flipflop.advice.ties import predictions_tie, tie_groups, values_tie
from flipflop.analysis.work import SiteWork, ThreadWork
from flipflop.gpu.occupancy import max_potential_block_size
from flipflop.gpu.profile import GpuProfile
from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape, ProblemSize, volume
from flipflop.model import predict
from flipflop.model.error import ModelError, RatioInterval
from flipflop.model.predict import Prediction
from flipflop.resources import Resources


@pytest.fixture(scope="module")
def rtx3070() -> GpuProfile:
    return load_profile("rtx3070")


def streaming_work(shape: LaunchShape, n: int = 1 << 22) -> ThreadWork:
    """`if (i < n) y[i] = a * x[i] + y[i];` over n elements: the guard idles the overhang."""
    active = min(1.0, n / shape.threads)
    load = SiteWork("global", False, "coalesced", (12,), 2 * active, 8 * active, active / 4, 1.0)
    store = SiteWork("global", True, "coalesced", (12,), active, 4 * active, active / 8, 1.0)
    return ThreadWork(
        instructions=4 + 8 * active,
        fp32_flops=2 * active,
        fp64_flops=0,
        fp16_flops=0,
        int_ops=3 + 3 * active,
        conversions=0,
        sfu_ops=0,
        tensor_flops=0,
        global_load_bytes=8 * active,
        global_store_bytes=4 * active,
        global_load_sectors=active / 4,
        global_store_sectors=active / 8,
        local_bytes=0,
        shared_accesses=0,
        shared_wavefronts=0,
        atomics=0,
        barriers=0,
        shuffles=0,
        branches=1,
        divergent_branches=0,
        active_fraction=active,
        sites=(load, store),
        idle_lines=(11,) if active < 1.0 else (),
    )


def head_work(shape: LaunchShape, head_dim: int = 64, steps: int = 256) -> ThreadWork:
    """One block per attention head: `for (d = tid; d < 64; d += blockDim.x)` over `steps` keys.

    The work per block is fixed; threads beyond 64 only test the loop guard and leave.
    """
    threads = volume(shape.block)
    items = head_dim / threads if threads < head_dim else 1.0
    active = min(1.0, head_dim / threads)
    per_active = items * steps
    load = SiteWork(
        "global",
        False,
        "coalesced",
        (30,),
        per_active * active,
        4 * per_active * active,
        per_active * active / 8,
        1.0,
    )
    return ThreadWork(
        instructions=4 + 12 * per_active * active,
        fp32_flops=4 * per_active * active,
        fp64_flops=0,
        fp16_flops=0,
        int_ops=2 + 4 * per_active * active,
        conversions=0,
        sfu_ops=per_active * active / 8,
        tensor_flops=0,
        global_load_bytes=4 * per_active * active,
        global_store_bytes=4 * active,
        global_load_sectors=per_active * active / 8,
        global_store_sectors=active / 8,
        local_bytes=0,
        shared_accesses=0,
        shared_wavefronts=0,
        atomics=0,
        barriers=0,
        shuffles=0,
        branches=1 + per_active * active,
        divergent_branches=0,
        active_fraction=active,
        sites=(load,),
        idle_lines=(28,) if active < 1.0 else (),
    )


def test_pareto_flags() -> None:
    points = [(1.0, 5.0), (2.0, 3.0), (2.0, 4.0), (3.0, 3.0), (4.0, 1.0), (1.0, 5.0)]
    assert pareto_flags(points) == (True, True, False, False, True, True)
    assert pareto_flags([]) == ()


def test_recommendation_is_lowest_energy_within_slack(rtx3070: GpuProfile) -> None:
    advice = advise(
        rtx3070,
        Resources(registers=16),
        streaming_work,
        ProblemSize(threads=(1 << 22, 1, 1)),
        current_block=(1024, 1, 1),
        power_limits=True,
    )
    assert len(advice.predictions) >= 32 * 10
    fastest_time = min(p.time_s for p in advice.predictions)
    assert advice.fastest.time_s == fastest_time
    within = [p for p in advice.predictions if p.time_s <= fastest_time * 1.05]
    assert set(advice.recommended_set) == set(within)
    rec = advice.recommendation
    assert rec.energy_j == min(p.energy_j for p in within)
    assert rec.slowdown_vs_fastest <= 0.05 + 1e-12
    assert rec.prediction.pareto
    assert advice.front and all(p.pareto for p in advice.front)
    assert [p.time_s for p in advice.front] == sorted(p.time_s for p in advice.front)
    # A memory-bound stream under a power cap keeps its speed and sheds power.
    assert rec.power_limit_w is not None and rec.power_limit_w < rtx3070.tdp_w
    assert rec.energy_saving_vs_current is not None and rec.energy_saving_vs_current > 0
    assert any("within 5% of the fastest" in r or "fastest" in r for r in rec.reasons)
    assert any("power limit" in r for r in rec.reasons)
    # The shortlist worth measuring: the fastest tenth of the 32 shapes at the default limit
    # (4 of them), the recommended configuration among them.
    default_limit = [p for p in advice.predictions if p.power_limit_w is None]
    assert len(default_limit) == 32 and len(advice.shortlist) == 4
    assert all(p.power_limit_w is None for p in advice.shortlist)
    assert rec.block in {p.block for p in advice.shortlist}
    slowest_kept = max(p.time_s for p in advice.shortlist if p.block != rec.block)
    left_out = [p for p in default_limit if p not in advice.shortlist]
    assert all(p.time_s >= slowest_kept for p in left_out)
    assert advice.search_space_reduction == pytest.approx(1 - 4 / 32)


def test_heuristic_baseline_is_nvidias_choice(rtx3070: GpuProfile) -> None:
    resources = Resources(registers=40)
    advice = advise(rtx3070, resources, streaming_work, ProblemSize(threads=(1 << 22, 1, 1)))
    size, _ = max_potential_block_size(rtx3070, registers=40, static_smem_bytes=0)
    assert advice.heuristic is not None
    assert advice.heuristic.block == (size, 1, 1)
    assert advice.heuristic.power_limit_w is None
    saving = advice.recommendation.energy_saving_vs_occupancy_heuristic
    assert saving == pytest.approx(1 - advice.recommendation.energy_j / advice.heuristic.energy_j)
    assert saving >= 0.0  # the heuristic's block is among the candidates


def test_fixed_grid_with_fixed_work_per_block_is_cheapest_at_small_blocks(
    rtx3070: GpuProfile,
) -> None:
    advice = advise(
        rtx3070,
        Resources(registers=32),
        head_work,
        ProblemSize(grid=(64, 1, 1)),
        current_block=(1024, 1, 1),
    )
    by_block = {p.block: p for p in advice.predictions}
    cheapest = min(advice.predictions, key=lambda p: p.energy_j)
    assert volume(cheapest.block) <= 128
    assert volume(advice.recommendation.block) <= 128
    assert by_block[(64, 1, 1)].energy_j < by_block[(256, 1, 1)].energy_j
    assert by_block[(256, 1, 1)].energy_j < by_block[(1024, 1, 1)].energy_j
    saving = advice.recommendation.energy_saving_vs_current
    assert saving is not None and saving > 0.2
    assert advice.search_space_reduction > 0.0
    idle = [d for d in advice.drivers if d.kind == "idle_lanes"]
    assert idle and idle[0].message == "960 of 1024 threads idle at line 28 but draw power"
    assert idle[0].lines == (28,)


def test_register_heavy_kernel_is_not_recommended_blocks_it_cannot_hold(
    rtx3070: GpuProfile,
) -> None:
    advice = advise(
        rtx3070, Resources(registers=255), streaming_work, ProblemSize(threads=(1 << 22, 1, 1))
    )
    # 255 registers round to 8192 per warp: 65536 registers hold 8 warps = 256 threads.
    assert volume(advice.recommendation.block) <= 256
    assert all(volume(p.block) <= 256 for p in advice.predictions)
    excluded = {e.block: e.reason for e in advice.excluded}
    assert (288, 1, 1) in excluded and (1024, 1, 1) in excluded
    assert "255 registers/thread" in excluded[(512, 1, 1)]


def test_small_grid_is_not_recommended_a_block_that_idles_most_sms(rtx3070: GpuProfile) -> None:
    n = 16384

    def small(shape: LaunchShape) -> ThreadWork:
        base = streaming_work(shape, n)
        # Each element then runs 2048 FMAs: the SMs' issue rate, not DRAM, sets the time.
        active = base.active_fraction
        return replace(
            base,
            instructions=base.instructions + 2048 * active,
            fp32_flops=base.fp32_flops + 4096 * active,
        )

    advice = advise(rtx3070, Resources(registers=32), small, ProblemSize(threads=(n, 1, 1)))
    blocks = volume(advice.recommendation.prediction.grid)
    assert blocks >= rtx3070.sms / 2
    big = next(p for p in advice.predictions if p.block == (1024, 1, 1))
    assert big.breakdown.idle_sms_last_wave > rtx3070.sms / 2
    assert advice.recommendation.time_s < big.time_s


def test_launch_bound_and_explicit_blocks(rtx3070: GpuProfile) -> None:
    advice = advise(
        rtx3070,
        Resources(registers=32),
        streaming_work,
        ProblemSize(threads=(1 << 20, 1, 1)),
        blocks=[(64, 1, 1), (128, 1, 1), (512, 1, 1), (16, 16, 1)],
        block_limit=256,
    )
    assert {p.block for p in advice.predictions} == {(64, 1, 1), (128, 1, 1), (16, 16, 1)}
    assert [e.block for e in advice.excluded] == [(512, 1, 1)]
    assert "launch bound 256" in advice.excluded[0].reason
    assert advice.heuristic is not None and volume(advice.heuristic.block) <= 256


def test_nothing_launchable_is_a_clear_error(rtx3070: GpuProfile) -> None:
    with pytest.raises(NoLaunchableConfig, match="no candidate block shape"):
        advise(
            rtx3070,
            Resources(registers=32, static_smem_bytes=200 * 1024),
            streaming_work,
            ProblemSize(threads=(4096, 1, 1)),
        )
    with pytest.raises(ValueError, match="slack"):
        advise(
            rtx3070,
            Resources(registers=32),
            streaming_work,
            ProblemSize(grid=(8, 1, 1)),
            slack=-0.1,
        )


def test_drivers_name_strided_traffic_with_its_line(rtx3070: GpuProfile) -> None:
    shape = LaunchShape((256, 1, 1), (4096, 1, 1))
    strided = SiteWork("global", True, "strided", (42,), 1.0, 4.0, 1.0, 1.0, stride_bytes=128)
    load = SiteWork("global", False, "coalesced", (40,), 1.0, 4.0, 0.125, 1.0)
    kernel = replace(
        streaming_work(shape),
        global_load_bytes=4.0,
        global_store_bytes=4.0,
        global_load_sectors=0.125,
        global_store_sectors=1.0,
        sites=(load, strided),
    )
    prediction = predict(rtx3070, Resources(registers=32), kernel, shape)
    drivers = energy_drivers(rtx3070, Resources(registers=32), kernel, prediction)
    assert all(d.kind in DRIVER_KINDS for d in drivers)
    assert [d.share for d in drivers] == sorted((d.share for d in drivers), reverse=True)
    coalescing = next(d for d in drivers if d.kind == "coalescing")
    assert coalescing.message.startswith("strided stores (stride 128 B) at line 42: 89% of DRAM")
    assert coalescing.lines == (42,)
    assert 0.0 < coalescing.share < 1.0


def test_drivers_report_registers_and_tail(rtx3070: GpuProfile) -> None:
    resources = Resources(registers=128)
    shape = LaunchShape((256, 1, 1), (int(46 * 2 * 1.3), 1, 1))
    # A gather: 64 loads per thread, each waited on, too few warps to cover the latency.
    gather = SiteWork("global", False, "indirect", (50,), 64.0, 256.0, 64.0, 1.0)
    kernel = replace(streaming_work(shape), instructions=400, sites=(gather,))
    prediction = predict(rtx3070, resources, kernel, shape)
    assert prediction.active_blocks_per_sm == 2 and prediction.limiter == "registers"
    assert prediction.bound == "latency"
    messages = {d.kind: d.message for d in energy_drivers(rtx3070, resources, kernel, prediction)}
    assert messages["tail_effect"] == (
        "1.3 waves: last wave fills 29% of the block slots and leaves 41% of SMs idle"
    )
    assert messages["occupancy_limiter"] == "registers (128/thread) cap occupancy at 33%"


def test_json_uses_the_documented_field_names(rtx3070: GpuProfile) -> None:
    advice = advise(
        rtx3070,
        Resources(registers=32),
        head_work,
        ProblemSize(grid=(64, 1, 1)),
        current_block=(256, 1, 1),
    )
    document = json.loads(json.dumps(advice_to_json(advice)))
    config = document["configs"][0]
    assert set(config) - {"tie_group"} == {
        "block",
        "power_limit_w",
        "active_blocks_per_sm",
        "occupancy",
        "limiter",
        "waves",
        "time_s",
        "power_w",
        "energy_j",
        "pareto",
    }
    assert set(document["recommendation"]) == {
        "block",
        "power_limit_w",
        "time_s",
        "power_w",
        "energy_j",
        "energy_saving_vs_current",
        "energy_saving_vs_occupancy_heuristic",
        "slowdown_vs_fastest",
        "reasons",
        "energy_saving_interval",
        "held_back",
    }
    assert set(document["baseline"]["occupancy_heuristic"]) == {
        "block",
        "time_s",
        "power_w",
        "energy_j",
    }
    assert all(set(d) == {"kind", "share", "message", "lines"} for d in document["drivers"])


def test_ties_are_anchored_on_the_fastest_so_a_chain_does_not_drift(
    rtx3070: GpuProfile,
) -> None:
    shape = LaunchShape((256, 1, 1), (4096, 1, 1))
    base = predict(rtx3070, Resources(registers=32), streaming_work(shape), shape)
    # Each step is 0.8%: neighbours tie, but the third is 1.6% from the first.
    chain = [
        replace(base, block=(32 * (k + 1), 1, 1), time_s=base.time_s * (1.008**k),
                energy_j=base.energy_j * (1.008**k))
        for k in range(3)
    ]
    capped = replace(chain[0], block=(512, 1, 1), power_limit_w=150.0)
    groups = tie_groups([chain[2], capped, chain[1], chain[0]])
    assert [[p.block for p in g.members] for g in groups] == [[(32, 1, 1), (64, 1, 1)]]
    assert values_tie(1.0, 1.01) and not values_tie(1.0, 1.0101)
    assert predictions_tie(chain[0], chain[1]) and not predictions_tie(chain[0], capped)


def test_ties_of_every_power_limit_come_fastest_group_first(rtx3070: GpuProfile) -> None:
    shape = LaunchShape((256, 1, 1), (4096, 1, 1))
    base = predict(rtx3070, Resources(registers=32), streaming_work(shape), shape)

    def at(block: int, factor: float, limit: float | None) -> Prediction:
        return replace(base, block=(block, 1, 1), time_s=base.time_s * factor,
                       energy_j=base.energy_j * factor, power_limit_w=limit)  # fmt: skip

    uncapped = [at(64, 1.0, None), at(128, 1.005, None)]
    capped = [at(64, 0.9, 150.0), at(128, 0.905, 150.0), at(256, 0.9, 200.0)]
    groups = tie_groups([uncapped[1], capped[2], capped[1], uncapped[0], capped[0]])
    # The 150 W pair is the faster one; the lone 200 W shape ties with nobody of its limit.
    assert [[(p.block[0], p.power_limit_w) for p in g.members] for g in groups] == [
        [(64, 150.0), (128, 150.0)], [(64, None), (128, None)],
    ]
    assert [g.index for g in groups] == [0, 1]


def test_advice_groups_every_tie_once_and_json_numbers_them(rtx3070: GpuProfile) -> None:
    advice = advise(
        rtx3070,
        Resources(registers=32),
        lambda shape: streaming_work(shape, n=1 << 26),
        ProblemSize(threads=(1 << 26, 1, 1)),
        current_block=(256, 1, 1),
        power_limits=True,
    )
    assert advice.ties, "a memory-bound stream over 2^26 elements ties at many block sizes"
    seen: set[tuple[object, object]] = set()
    for group in advice.ties:
        anchor = group.anchor
        assert anchor.time_s == min(p.time_s for p in group.members)
        for member in group.members:
            assert predictions_tie(anchor, member)
            key = (member.block, member.power_limit_w)
            assert key not in seen
            seen.add(key)
            assert advice.tie_group(member) is group
    document = json.loads(json.dumps(advice_to_json(advice)))
    numbered = [c for c in document["configs"] if "tie_group" in c]
    assert len(numbered) == len(seen)
    for config in numbered:
        group = advice.ties[config["tie_group"]]
        assert (tuple(config["block"]), config["power_limit_w"]) in {
            (p.block, p.power_limit_w) for p in group.members
        }


def test_drivers_merge_by_line_and_sum_the_smallest_as_other(rtx3070: GpuProfile) -> None:
    shape = LaunchShape((256, 1, 1), (4096, 1, 1))

    def strided(line: int, sectors: float, store: bool = False) -> SiteWork:
        return SiteWork("global", store, "strided", (line,), 1.0, 4.0, sectors, 1.0, 128)

    # Line 30 compiles to four loads and a store (an unrolled loop); lines 40..49 one load each.
    repeated = [strided(30, 1.0) for _ in range(4)] + [strided(30, 1.0, store=True)]
    spread = [strided(40 + k, 0.5 + 0.05 * k) for k in range(10)]
    sites = tuple(repeated + spread)
    kernel = replace(
        streaming_work(shape),
        global_load_bytes=4.0 * 14,
        global_store_bytes=4.0,
        global_load_sectors=sum(s.sectors for s in sites if not s.is_store),
        global_store_sectors=1.0,
        sites=sites,
    )
    resources = Resources(registers=32)
    prediction = predict(rtx3070, resources, kernel, shape)
    drivers = energy_drivers(rtx3070, resources, kernel, prediction)
    assert len(drivers) == MAX_DRIVERS
    assert [d.share for d in drivers[:-1]] == sorted((d.share for d in drivers[:-1]), reverse=True)
    line_30 = [d for d in drivers if d.kind == "coalescing" and d.lines == (30,)]
    assert len(line_30) == 1
    assert line_30[0].message.startswith(
        "strided loads and stores (stride 128 B) at line 30 (5 instructions): "
    )
    one_load = next(d for d in drivers if d.kind == "coalescing" and d.lines == (49,))
    # Each access at line 30 moves 1 sector of which 1/8 is useful, like line 49's 0.95 sectors
    # with 1/8 useful: five of them weigh about five times as much.
    assert line_30[0].share == pytest.approx(5 * one_load.share * (1 - 1 / 8) / (0.95 - 1 / 8),
                                             rel=1e-6)
    other = drivers[-1]
    assert other.kind == "other" and other.kind in DRIVER_KINDS
    shown = {line for d in drivers[:-1] if d.kind == "coalescing" for line in d.lines}
    # The rest above the 1% noise floor (the smallest lines fall below it and are dropped).
    assert other.lines and set(other.lines) <= {40 + k for k in range(10)} - shown
    assert min(other.lines) > 40
    assert other.message.startswith(f"{len(other.lines)} smaller drivers (uncoalesced accesses)")
    # The smallest lines, summed: each weighs its sectors beyond the ideal 1/8.
    excess = {40 + k: 0.5 + 0.05 * k - 1 / 8 for k in range(10)}
    assert other.share == pytest.approx(
        one_load.share * sum(excess[line] for line in other.lines) / excess[49], rel=1e-6
    )
    every = [*spread, *repeated]
    assert {line for s in every for line in s.lines} <= {line for d in drivers for line in d.lines}


def test_a_guess_says_why_a_pick_that_uses_less_energy_moves() -> None:
    from flipflop.advice.assumptions import _then

    assert _then(0.09) == "would use 9% more energy"
    # Cheaper, yet replaced: it fell outside the slowdown budget under the variation.
    assert _then(-0.012) == "would use 1% less energy but be slower than the budget allows"
    assert _then(0.001) == "would use the same energy"


def _error_of(width: float) -> ModelError:
    """The model's error with one width for every metric and pair kind."""
    intervals = tuple(RatioInterval(metric, kind, 0.8, math.log(1.0 + width), 100, ("a", "b"), 0.8)
                      for metric in ("time", "energy") for kind in ("block", "code"))
    return ModelError(0.8, intervals, "test")


def test_a_saving_within_the_model_error_keeps_the_launch(rtx3070: GpuProfile) -> None:
    problem = ProblemSize(threads=(1 << 22, 1, 1))
    arguments = (rtx3070, Resources(registers=32), streaming_work, problem)
    free = advise(*arguments, current_block=(32, 1, 1))
    saving = free.recommendation.energy_saving_vs_current
    assert free.recommendation.block != (32, 1, 1) and saving is not None and saving > 0.02
    # An error wider than the predicted saving: the launch as written is kept, and says why.
    wide = advise(*arguments, current_block=(32, 1, 1), error=_error_of(2.0))
    assert wide.recommendation.block == (32, 1, 1)
    assert wide.recommendation.energy_saving_vs_current == 0.0
    assert wide.held_back is not None
    assert wide.held_back.startswith(f"Block {free.recommendation.block[0]} is predicted to use")
    low, high = 1.0 - (1.0 - saving) * 3.0, 1.0 - (1.0 - saving) / 3.0
    assert f"{saving:.0%} ({round(100 * low)}% to {round(100 * high)}% at 80%) less energy" \
        in wide.held_back
    assert wide.recommendation.reasons[0].startswith("Block ")
    assert "within the model's error" in wide.recommendation.reasons[0]
    # A narrow one: the change stands, with its interval beside the saving.
    narrow = advise(*arguments, current_block=(32, 1, 1), error=_error_of(0.001))
    assert narrow.recommendation.block == free.recommendation.block
    assert narrow.held_back is None
    interval = narrow.saving_interval
    assert interval is not None and interval.kind == "block"
    assert interval.percent == pytest.approx(0.1)
    document = advice_to_json(narrow)["recommendation"]
    assert document["energy_saving_interval"]["plus_minus"] == pytest.approx(0.001)
    assert document["energy_saving_interval"]["low"] < saving < document[
        "energy_saving_interval"]["high"]
    assert document["held_back"] is None
    # Without a launch as written there is nothing to keep.
    unwritten = advise(*arguments, error=_error_of(2.0))
    assert unwritten.held_back is None
