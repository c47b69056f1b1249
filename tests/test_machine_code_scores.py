"""calibration/scripts/machine_code_scores.py: register-bank cycles and a warp's in-order
schedule read from nvdisasm listings, with known answers — a listing in nvdisasm's own format
for the banks, kernels nvcc compiles for the schedule."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from cuda_toolchain import nvcc_for_tests
from machine_code import ToolsMissing, load_script, ptxas_and_nvdisasm

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "calibration" / "scripts" / "machine_code_scores.py"

# As `nvdisasm -c` prints a function: the forum's RTX A4000 case (FFMA R4, R9, R10, R4 waits
# on bank 0 twice), the same operands with reuse flags, and three odd registers.
LISTING = """
\t.type\t\tk,@function
k:
        /*0000*/                   FFMA R4, R9, R10, R4 ;
        /*0010*/                   FFMA R5, R9.reuse, R10.reuse, R5 ;
        /*0020*/                   FFMA R6, R9, R10, R6 ;
        /*0030*/                   FFMA R7, R11, R13, R15 ;
        /*0040*/                   EXIT ;
"""

# Eight FMAs an iteration of a loop ptxas must not unroll, in CHAINS independent chains.
CHAINS_KERNEL = """
#ifndef CHAINS
#define CHAINS 1
#endif
extern "C" __global__ void chains(float *out, const float *in, int n) {
    float acc[CHAINS];
    #pragma unroll
    for (int c = 0; c < CHAINS; c++) acc[c] = in[threadIdx.x + c];
    float b = in[0], d = in[1];
    #pragma unroll 1
    for (int i = 0; i < n; i++) {
        #pragma unroll
        for (int k = 0; k < 8 / CHAINS; k++) {
            #pragma unroll
            for (int c = 0; c < CHAINS; c++) acc[c] = fmaf(acc[c], b, d);
        }
    }
    float sum = 0.0f;
    #pragma unroll
    for (int c = 0; c < CHAINS; c++) sum += acc[c];
    out[threadIdx.x] = sum;
}
"""


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script(SCRIPT, "machine_code_scores_script")


def test_bank_cycles_follow_register_parity_and_reuse_flags(script: ModuleType) -> None:
    function = script.parse_sass(LISTING)["k"]
    instructions = [i for _, body in function.blocks for i in body]
    # R10 and R4 share bank 0; R9, R5 bank 1; the third FFMA finds R9 and R10 in the reuse
    # cache and reads R6 alone; R11, R13 and R15 all sit in bank 1.
    assert script.bank_cycles(instructions) == [2, 2, 1, 3, 1]
    assert script.machine_code(LISTING, "k").fp32_bank_cycles == pytest.approx(2.0)


def test_operands_name_what_is_written_and_read(script: ModuleType) -> None:
    listing = LISTING.replace("FFMA R7, R11, R13, R15", "ISETP.GE.AND P0, PT, R14, RZ, PT")
    instructions = [i for _, body in script.parse_sass(listing)["k"].blocks for i in body]
    written, read = script.operands_of(instructions[3])
    assert written == ("P0",)
    assert [operand.registers for operand in read] == [("R14",)]
    wide = script.SassInstruction("LDS.128", False, None, False, "R8, [R3.X4+0x780]")
    written, read = script.operands_of(wide)
    assert written == ("R8", "R9", "R10", "R11")
    assert [operand.registers for operand in read] == [("R3",)]


@pytest.mark.parametrize(("chains", "low", "high"), [(1, 2.5, 4.0), (8, 0.9, 1.5)])
def test_a_dependent_chain_paces_the_loop_and_independent_ones_do_not(
    script: ModuleType, tmp_path: Path, chains: int, low: float, high: float
) -> None:
    try:
        _, nvdisasm = ptxas_and_nvdisasm()
    except ToolsMissing as missing:
        pytest.fail(str(missing))
    source = tmp_path / "chains.cu"
    source.write_text(CHAINS_KERNEL, encoding="utf-8")
    listing = script.compile_listing(source, "sm_86", [], {"CHAINS": chains},
                                     Path(nvcc_for_tests()), nvdisasm)  # fmt: skip
    code = script.machine_code(listing, "chains")
    # Eight FMAs one after another wait four cycles each; eight side by side issue back to back.
    assert code.loop_instructions >= 8
    assert low <= code.loop_cycles_per_instruction <= high


def test_scores_rank_the_error_against_each_property(script: ModuleType) -> None:
    configs = [
        {"measured_time_s": 2.0 * t, "predicted_time_s": 1.0,
         "predicted_time_parts_s": {"fp32": 0.95}}
        for t in (1.0, 1.5, 2.0, 2.5)
    ]  # fmt: skip
    codes = [script.MachineCode(1.0 + 0.1 * k, 2.0 - 0.1 * k, 100 + 400 * (k % 2))
             for k in range(4)]  # fmt: skip
    lines = list(script.scores(configs, codes))
    assert lines[0].startswith("every configuration (4)")
    assert "ρ(error) +1.00" in lines[0] and "ρ(error) -1.00" in lines[0]
    # Lengths 100, 500, 100, 500 against errors rising: ties ranked by their mean.
    assert "main loop instructions 100-500, ρ(error) +0.45" in lines[0]
    assert lines[1].startswith("FP32-bound (4)")
