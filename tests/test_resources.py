"""Per-kernel resource usage from the real `ptxas -v`."""

from __future__ import annotations

from pathlib import Path

import pytest

from flipflop.toolchain import (
    AssemblyError,
    Resources,
    Toolchain,
    ToolchainError,
    compile_to_ptx,
    find_toolchain,
    parse_ptxas_verbose,
    ptxas_resources,
)
from flipflop.toolchain.process import run_tool
from flipflop.toolchain.ptxas import assemble

CORPUS = Path(__file__).parent / "corpus"
REGISTERS_PER_SM = 65536  # CUDA C++ Programming Guide, compute capabilities table (cc 7.5-9.0)


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    try:
        return find_toolchain()
    except ToolchainError:
        pytest.fail("the CUDA toolchain is missing; run scripts/setup.sh (flipflop[nvcc])")


def resources_of(name: str, arch: str, toolchain: Toolchain) -> dict[str, Resources]:
    compiled = compile_to_ptx(CORPUS / name, None, toolchain, arch)
    assert compiled.ok, compiled.diagnostics
    return ptxas_resources(compiled.ptx, arch, toolchain)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_launch_bounds_force_a_register_cap_and_spills(toolchain: Toolchain, arch: str) -> None:
    [usage] = resources_of("spill_launch_bounds.cu", arch, toolchain).values()
    # __launch_bounds__(1024, 2): two resident blocks of 1024 threads share 64 K registers.
    assert usage.registers == REGISTERS_PER_SM // (2 * 1024)
    assert usage.spill_store_bytes > 0 and usage.spill_load_bytes > 0
    assert usage.spills
    assert usage.stack_bytes >= 4
    assert usage.static_smem_bytes == 256 * 4
    assert usage.barriers == 1


def test_static_shared_memory_matches_the_declarations(toolchain: Toolchain) -> None:
    usage = resources_of("transpose_tiled.cu", "sm_86", toolchain)
    assert usage["_Z15transpose_tiledILi0EEvPfPKfii"].static_smem_bytes == 32 * 32 * 4
    assert usage["_Z15transpose_tiledILi1EEvPfPKfii"].static_smem_bytes == 32 * 33 * 4
    tiled = resources_of("sgemm_tiled.cu", "sm_75", toolchain)
    [gemm] = tiled.values()
    assert gemm.static_smem_bytes == 2 * 32 * 32 * 4
    assert not gemm.spills


def test_dynamic_shared_memory_is_not_static(toolchain: Toolchain) -> None:
    [scan] = resources_of("dynamic_smem.cu", "sm_80", toolchain).values()
    assert scan.static_smem_bytes == 0
    assert scan.barriers == 1


def test_runtime_indexed_array_lives_on_the_stack(toolchain: Toolchain) -> None:
    [kernel] = resources_of("local_array_runtime_index.cu", "sm_80", toolchain).values()
    assert kernel.stack_bytes == 16 * 4  # int counts[16]
    assert not kernel.spills


def test_callee_frames_count_in_the_kernel_stack(toolchain: Toolchain) -> None:
    usage = resources_of("noinline_calls.cu", "sm_80", toolchain)
    assert list(usage) == ["_Z14evaluate_callsPKfiS0_PfPii"]  # device functions are not kernels
    assert usage["_Z14evaluate_callsPKfiS0_PfPii"].stack_bytes >= 9 * 4


def test_hopper_kernel_resources(toolchain: Toolchain) -> None:
    [kernel] = resources_of("wgmma_tma.cu", "sm_90a", toolchain).values()
    assert kernel.static_smem_bytes == 2 * 64 * 64 * 2 + 8  # two fp16 tiles and an mbarrier
    assert 32 <= kernel.registers <= 255  # 32 fp32 accumulators per thread


def test_every_kernel_of_a_module_is_reported(toolchain: Toolchain) -> None:
    usage = resources_of("templated_block_size.cu", "sm_89", toolchain)
    assert sorted(usage) == [
        "_Z11scale_itemsILi128ELi1EEvPffi",
        "_Z11scale_itemsILi256ELi4EEvPffi",
        "_Z11scale_itemsILi512ELi8EEvPffi",
    ]


def test_invalid_ptx_raises_with_diagnostics(toolchain: Toolchain) -> None:
    ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n  bogus.op;\n}\n"
    with pytest.raises(AssemblyError) as caught:
        ptxas_resources(ptx, "sm_80", toolchain)
    [error, *_] = caught.value.diagnostics
    assert error.tool == "ptxas" and error.severity == "error"
    assert "PTX line 6" in error.message  # no .loc: the PTX line is all we can say
    assert assemble(ptx, "sm_80", toolchain).resources == {}


def test_parser_reads_a_raw_ptxas_log(toolchain: Toolchain, tmp_path: Path) -> None:
    compiled = compile_to_ptx(CORPUS / "noinline_calls.cu", None, toolchain, "sm_75")
    ptx_file = tmp_path / "module.ptx"
    ptx_file.write_text(compiled.ptx)
    log = run_tool(
        [toolchain.ptxas, "-v", "-arch=sm_75", ptx_file, "-o", tmp_path / "module.cubin"], 60
    )
    assert "Function properties for _Z13collatz_stepsji" in log.stderr + log.stdout
    parsed = parse_ptxas_verbose(log.stderr + log.stdout)
    assert parsed == assemble(compiled.ptx, "sm_75", toolchain).resources
    assert list(parsed) == ["_Z14evaluate_callsPKfiS0_PfPii"]
    assert parse_ptxas_verbose("") == {}
