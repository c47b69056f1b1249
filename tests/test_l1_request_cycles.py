"""A warp request holds the L1/shared data array at least `rates.l1_request_cycles`: two on
the GA10x SM, where 2-way shared bank conflicts measure free (docs/validation.md names the file
and the held-out split), one elsewhere; shared requests and global ones through L1 alike. Real
nvcc output; the wavefronts are worked out by hand from the lanes' addresses in
tests/model_kernels/shared_requests.cu and l1_banks.cu."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from flipflop.advice.drivers import energy_drivers
from flipflop.analysis.work import ThreadWork
from flipflop.gpu.profiles import list_profiles, load_profile
from flipflop.launch import LaunchShape
from flipflop.model.performance import (
    global_wavefronts_per_warp,
    l1_wavefronts_per_warp,
    shared_cycles_per_warp,
)
from flipflop.model.predict import predict
from flipflop.resources import Resources
from model_ptx import KERNELS, compile_ptx, features_of

BLOCK = (8, 32, 1)


@pytest.fixture(scope="module")
def requests_ptx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shared") / "shared_requests.ptx"
    return compile_ptx(KERNELS / "shared_requests.cu", out)


def _work(ptx: Path, kernel: str) -> ThreadWork:
    return features_of(ptx, kernel).work(LaunchShape(BLOCK, (64, 1, 1)), {})


@pytest.mark.parametrize(
    ("kernel", "load_wavefronts", "cycles_at_one", "cycles_at_two"),
    [
        # Per thread one conflict-free store (1 wavefront) and one load.
        ("conflict_free", 1.0, 2.0, 4.0),
        ("two_way", 2.0, 3.0, 4.0),  # the conflict fits in the second cycle
        ("four_way", 4.0, 5.0, 6.0),  # a 4-way load takes its 4 wavefronts either way
    ],
)
def test_each_request_takes_the_larger_of_its_wavefronts_and_the_least_cycles(
    requests_ptx: Path,
    kernel: str,
    load_wavefronts: float,
    cycles_at_one: float,
    cycles_at_two: float,
) -> None:
    work = _work(requests_ptx, kernel)
    (load,) = [s for s in work.sites if s.space == "shared" and not s.is_store]
    assert load.wavefronts_per_request == pytest.approx(load_wavefronts)
    assert work.shared_wavefronts == pytest.approx(cycles_at_one)
    assert shared_cycles_per_warp(work) == pytest.approx(cycles_at_one)
    assert shared_cycles_per_warp(work, 2.0) == pytest.approx(cycles_at_two)
    # The coalesced 4-byte store: one wavefront per warp, two at two cycles a request; the L1
    # data path carries both.
    assert global_wavefronts_per_warp(work) == pytest.approx(1.0)
    assert global_wavefronts_per_warp(work, 2.0) == pytest.approx(2.0)
    assert l1_wavefronts_per_warp(work) == pytest.approx(cycles_at_one + 1.0)
    assert l1_wavefronts_per_warp(work, 2.0) == pytest.approx(cycles_at_two + 2.0)


def test_a_wide_global_request_already_holds_the_array_longer(tmp_path: Path) -> None:
    banks = compile_ptx(KERNELS / "l1_banks.cu", tmp_path / "l1_banks.ptx")
    work = features_of(banks, "float4_consecutive").work(LaunchShape((256, 1, 1), (64, 1, 1)), {})
    # A float4 load and store return or take 4 registers each: 4 cycles apiece either way.
    assert global_wavefronts_per_warp(work) == pytest.approx(8.0)
    assert global_wavefronts_per_warp(work, 2.0) == pytest.approx(8.0)


def test_without_sites_the_least_cycles_apply_to_every_shared_access() -> None:
    counted = ThreadWork(
        instructions=10.0, fp32_flops=0.0, fp64_flops=0.0, fp16_flops=0.0, int_ops=0.0,
        conversions=0.0, sfu_ops=0.0, tensor_flops=0.0, global_load_bytes=0.0,
        global_store_bytes=0.0, global_load_sectors=0.0, global_store_sectors=0.0,
        local_bytes=0.0, shared_accesses=3.0, shared_wavefronts=5.0, atomics=0.0,
        barriers=0.0, shuffles=0.0, branches=0.0, divergent_branches=0.0, active_fraction=1.0,
    )  # fmt: skip
    assert shared_cycles_per_warp(counted, 2.0) == pytest.approx(6.0)  # 3 accesses × 2
    assert shared_cycles_per_warp(replace(counted, shared_wavefronts=9.0), 2.0) == 9.0
    assert shared_cycles_per_warp(counted) == 5.0


def test_the_ga10x_profiles_hold_a_request_two_cycles_and_the_others_one() -> None:
    for profile in list_profiles():
        expected = 2.0 if profile.compute_capability == (8, 6) else 1.0
        assert profile.rates.l1_request_cycles == expected, profile.id
        if expected == 2.0:
            source = profile.sources["rates.l1_request_cycles"]
            assert "convolution/RTX_3090" in source and "held out" in source
            assert profile.kinds["rates.l1_request_cycles"] == "measured"


def test_a_two_way_conflict_costs_shared_time_on_turing_but_not_on_ga10x(
    requests_ptx: Path,
) -> None:
    resources = Resources(registers=8, static_smem_bytes=8192)
    shape = LaunchShape(BLOCK, (4096, 1, 1))

    def shared_cycles(kernel: str, gpu: str) -> float:
        prediction = predict(load_profile(gpu), resources, _work(requests_ptx, kernel), shape)
        return dict(prediction.launch.cost.block_unit_cycles)["shared"]

    turing_free = shared_cycles("conflict_free", "rtx2080ti")
    assert shared_cycles("two_way", "rtx2080ti") == pytest.approx(1.5 * turing_free)  # 3 : 2
    assert shared_cycles("two_way", "rtx3090") == pytest.approx(
        shared_cycles("conflict_free", "rtx3090")
    )
    assert shared_cycles("four_way", "rtx3090") == pytest.approx(
        1.5 * shared_cycles("conflict_free", "rtx3090")
    )


def test_a_two_way_conflict_is_an_energy_driver_on_turing_and_not_on_ga10x(
    requests_ptx: Path,
) -> None:
    """64 two-way loads a thread: the L1/shared path sets the time on both GPUs; on the RTX
    2080 Ti the conflicts take 64 of a warp's 161 cycles there (loads 64 × 2, stores 32, the
    global store 1), on the RTX 3090 none (every request holds the array two cycles anyway)."""
    work = features_of(requests_ptx, "two_way_loop").work(LaunchShape(BLOCK, (4096, 1, 1)), {})
    resources = Resources(registers=16, static_smem_bytes=32768)
    shares = {}
    for gpu in ("rtx2080ti", "rtx3090"):
        profile = load_profile(gpu)
        prediction = predict(profile, resources, work, LaunchShape(BLOCK, (4096, 1, 1)))
        assert prediction.launch.cost.busiest_unit == "l1", gpu
        conflicts = [
            driver for driver in energy_drivers(profile, resources, work, prediction)
            if driver.kind == "bank_conflicts"
        ]  # fmt: skip
        shares[gpu] = sum(driver.share for driver in conflicts)
        if conflicts:
            assert conflicts[0].message.startswith("2-way bank conflicts in shared-memory loads")
    assert shares["rtx2080ti"] >= 0.1
    assert shares["rtx3090"] < 0.01  # only the extra wavefront's energy, below what is shown
