"""Kernel display names (demangling) and the source line of each kernel's definition."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flipflop.toolchain import Toolchain, ToolchainError, build, demangle, find_toolchain
from flipflop.toolchain.names import (
    demangle_with_filter_tool,
    find_definition_line,
    kernel_base_name,
)

CORPUS = Path(__file__).parent / "corpus"


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    try:
        return find_toolchain()
    except ToolchainError:
        pytest.fail("the CUDA toolchain is missing; run scripts/setup.sh (flipflop[nvcc])")


@pytest.mark.parametrize(
    ("mangled", "readable"),
    [
        ("_Z5saxpyifPKfPf", "saxpy(int, float, float const*, float*)"),
        (
            "_Z15transpose_tiledILi1EEvPfPKfii",
            "void transpose_tiled<1>(float*, float const*, int, int)",
        ),
        (
            "_ZN7imaging7filters16clamp_brightnessIfLi4EEEvPT_iS2_S2_",
            "void imaging::filters::clamp_brightness<float, 4>(float*, int, float, float)",
        ),
    ],
)
def test_demangle(mangled: str, readable: str) -> None:
    assert demangle(mangled) == readable


@pytest.mark.parametrize("name", ["relu_inplace", "_Znot_a_valid_name", ""])
def test_unmangled_or_unreadable_names_come_back_unchanged(name: str) -> None:
    assert demangle(name) == name


@pytest.mark.skipif(
    shutil.which("cu++filt") is None and shutil.which("c++filt") is None,
    reason="neither cu++filt nor c++filt is installed",
)
def test_command_line_demangler_agrees_with_the_runtime() -> None:
    name = "_ZN7imaging7filters16clamp_brightnessIhLi8EEEvPT_iS2_S2_"
    assert demangle_with_filter_tool(name) == demangle(name)


@pytest.mark.parametrize(
    ("display", "base"),
    [
        ("saxpy(int, float, float const*, float*)", "saxpy"),
        (
            "void imaging::filters::clamp_brightness<float, 4>(float*, int, float, float)",
            "clamp_brightness",
        ),
        ("void reduce_tree<256u>(float const*, float*, unsigned int)", "reduce_tree"),
        ("relu_inplace", "relu_inplace"),
    ],
)
def test_kernel_base_name(display: str, base: str) -> None:
    assert kernel_base_name(display) == base


def test_definition_lines_come_from_the_ptx(toolchain: Toolchain) -> None:
    result = build(CORPUS / "namespaced_templates.cu", arch="sm_80", toolchain=toolchain)
    assert result.ok
    source_lines = (CORPUS / "namespaced_templates.cu").read_text().splitlines()
    assert len(result.kernels) == 2
    for kernel in result.kernels:
        assert kernel.file == str((CORPUS / "namespaced_templates.cu").absolute())
        assert kernel.line is not None
        assert "__global__ void clamp_brightness" in source_lines[kernel.line - 1]
        assert kernel.display_name.startswith("void imaging::filters::clamp_brightness<")
        assert kernel.resources is not None


def test_extern_c_kernels_keep_their_names(toolchain: Toolchain) -> None:
    result = build(CORPUS / "extern_c_relu.cu", arch="sm_75", toolchain=toolchain)
    assert [(k.name, k.display_name, k.line) for k in result.kernels] == [
        ("relu_inplace", "relu_inplace", 6),
        ("relu_half2", "relu_half2", 14),
    ]


def test_kernel_defined_in_a_header_points_at_the_header(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    (tmp_path / "kernels.cuh").write_text(
        "#pragma once\n\n__global__ void from_header(float* x)\n{\n    x[0] = 2.0f;\n}\n"
    )
    source = tmp_path / "main.cu"
    source.write_text('#include "kernels.cuh"\nvoid run(float* x) { from_header<<<1, 1>>>(x); }\n')
    [kernel] = build(source, arch="sm_80", toolchain=toolchain).kernels
    assert (kernel.file, kernel.line) == (str(tmp_path / "kernels.cuh"), 3)


def test_source_scan_finds_definitions() -> None:
    text = (CORPUS / "transpose_tiled.cu").read_text()
    line = find_definition_line(text, "transpose_tiled")
    assert line is not None
    assert "__global__ void transpose_tiled" in text.splitlines()[line - 1]
    launch_only = "void host() { transpose_tiled<1><<<1, 1>>>(a, b, 1, 1); }\n"
    assert find_definition_line(launch_only, "transpose_tiled") is None
    multi_line = "template <int B>\n__global__\nvoid\nspread(\n  float* x)\n{}\n"
    assert find_definition_line(multi_line, "spread") == 4
