"""A warp's schedule (`flipflop.analysis.chains`) on hand-written PTX and on nvcc's.

Known answers: a block takes the larger of its issue slots (one cycle each) and its longest
dependent chain; arithmetic results take 4 cycles, shared loads 24.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cuda_toolchain import nvcc_for_tests
from flipflop.analysis import extract_features
from flipflop.analysis.chains import issue_cost, schedule_cycles
from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape
from flipflop.model.performance import launch_cost
from flipflop.ptx import parse_ptx

NVCC = nvcc_for_tests()
KERNELS = Path(__file__).parent / "model_kernels"


def _block(body: str) -> list:  # type: ignore[type-arg]
    text = f"""
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{{
    .reg .f32 %f<16>;
    .reg .b64 %rd<4>;
    .reg .pred %p<4>;
    .shared .align 4 .b8 tile[128];
{body}
    ret;
}}
"""
    module = parse_ptx(text, "k.ptx")
    (function,) = module.kernels
    instructions = [i for block in function.blocks for i in block.instructions]
    return [i for i in instructions if i.opcode != "ret"]


def _one_slot(spelling: str) -> tuple[float, float]:
    return issue_cost(spelling, 1.0)


def test_a_dependent_chain_waits_out_each_latency() -> None:
    chain = _block("""
    add.f32 %f2, %f1, %f1;
    add.f32 %f3, %f2, %f2;
    add.f32 %f4, %f3, %f3;""")
    # Issues at 0, 4 and 8; the last result is ready at 12.
    assert schedule_cycles(chain, _one_slot) == 12.0


def test_independent_instructions_issue_back_to_back() -> None:
    independent = _block("""
    add.f32 %f2, %f1, %f1;
    add.f32 %f3, %f1, %f1;
    add.f32 %f4, %f1, %f1;""")
    # Three slots; every result is ready 4 cycles after its operands, which are ready at 0.
    assert schedule_cycles(independent, _one_slot) == 4.0


def test_loads_interleaved_in_ptx_overlap_as_ptxas_schedules_them() -> None:
    interleaved = _block("""
    ld.shared.f32 %f2, [tile];
    fma.rn.f32 %f3, %f2, %f1, %f1;
    ld.shared.f32 %f4, [tile+4];
    fma.rn.f32 %f5, %f4, %f1, %f1;""")
    # Both loads issue first: 24 cycles to their values, 4 more to the FMAs' (in PTX order,
    # waiting at each FMA, it would be 56).
    assert schedule_cycles(interleaved, _one_slot) == 28.0


def test_a_shared_load_and_a_guard_delay_their_users() -> None:
    body = _block("""
    ld.shared.f32 %f2, [tile];
    setp.gt.f32 %p1, %f2, %f1;
    @%p1 add.f32 %f3, %f1, %f1;""")
    # The load's value at 24, the predicate at 28, the guarded add's result at 32.
    assert schedule_cycles(body, _one_slot) == 32.0


def test_a_multi_slot_instruction_is_a_chain_of_its_slots() -> None:
    division = _block("div.rn.f32 %f2, %f1, %f1;")
    ten = {"div.rn.f32": 10.0}
    assert schedule_cycles(division, lambda s: issue_cost(s, ten.get(s, 1.0))) == 40.0


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_independent_accumulators_shorten_the_chain_on_nvcc_output(tmp_path: Path) -> None:
    """256 FMAs as one chain take 4 cycles each; as eight interleaved chains about one."""
    assert NVCC is not None
    ptx = tmp_path / "accumulators.ptx"
    subprocess.run([NVCC, "-ptx", "-arch=sm_80", str(KERNELS / "accumulators.cu"), "-o", str(ptx)],
                   check=True, capture_output=True)  # fmt: skip
    module = parse_ptx(ptx.read_text(), str(ptx))
    shape = LaunchShape((32, 1, 1), (1, 1, 1))
    work = {k.name: extract_features(module, k.name).work(shape, {}) for k in module.kernels}
    one, eight = work["one_chain"], work["eight_chains"]
    assert one.chain_cycles is not None and eight.chain_cycles is not None
    assert 256 * 4 <= one.chain_cycles <= 256 * 4 + 80
    assert 256 <= eight.chain_cycles <= 256 + 100  # the loads and the final sum's 8 adds
    # The issue slots are within a few percent; only the dependences differ.
    assert one.pipe_work().issue_slots == pytest.approx(eight.pipe_work().issue_slots, rel=0.1)
    # One warp alone on the GPU is bound by its chain (and the DRAM latency of its loads, the
    # same for both): the single chain costs the difference in cycles more.
    profile = load_profile("rtx3070")
    clock = profile.boost_clock_mhz * 1e6
    one_cost, eight_cost = (launch_cost(profile, w, shape, 1) for w in (one, eight))
    assert one_cost.path_cycles / eight_cost.path_cycles > 3.0
    extra_s = one_cost.timing(clock)[1] - eight_cost.timing(clock)[1]
    assert extra_s == pytest.approx((one.chain_cycles - eight.chain_cycles) / clock, rel=0.05)


@pytest.mark.skipif(NVCC is None, reason="nvcc (CUDA toolkit) is not installed")
def test_guarded_loads_of_one_loop_nest_are_in_flight_together(tmp_path: Path) -> None:
    assert NVCC is not None
    ptx = tmp_path / "guarded_loads.ptx"
    subprocess.run([NVCC, "-ptx", "-arch=sm_80", str(KERNELS / "guarded_loads.cu"), "-o", str(ptx)],
                   check=True, capture_output=True)  # fmt: skip
    module = parse_ptx(ptx.read_text(), str(ptx))
    (kernel,) = module.kernels
    features = extract_features(module, kernel.name)
    work = features.work(LaunchShape((128, 1, 1), (64, 1, 1)), {"n": 64 * 8 * 128})
    # Eight guarded loads of the tile in one region, one more after the barrier (shared).
    assert work.load_parallelism == pytest.approx(8.0)
