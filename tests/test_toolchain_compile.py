"""Compiling CUDA to PTX with the real nvcc: buffers, includes, flags, errors, timeouts."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from pathlib import Path

import pytest

from flipflop.toolchain import (
    CompileOptions,
    Toolchain,
    ToolchainError,
    ToolTimeout,
    build,
    compile_to_ptx,
    find_toolchain,
)
from flipflop.toolchain.errors import ToolCancelled

FAKE_TOOLS = Path(__file__).parent / "fake_tools"
CORPUS = Path(__file__).parent / "corpus"

# A directory name nvcc's internal shell would mangle if it ever saw it.
AWKWARD_DIR = "dir with spaces $HOME;echo pwned&'quoted'"


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    try:
        return find_toolchain()
    except ToolchainError:
        pytest.fail("the CUDA toolchain is missing; run scripts/setup.sh (flipflop[nvcc])")


def test_saved_file_compiles_to_ptx_with_line_info(toolchain: Toolchain) -> None:
    result = compile_to_ptx(CORPUS / "saxpy.cu", None, toolchain, "sm_80")
    assert result.ok, result.diagnostics
    assert ".target sm_80" in result.ptx
    assert ".entry _Z5saxpyifPKfPf(" in result.ptx
    assert f'"{(CORPUS / "saxpy.cu").absolute()}"' in result.ptx  # .file names the real file
    assert ".loc" in result.ptx
    assert {"-ptx", "-lineinfo", "-arch=sm_80"} <= set(result.command)
    assert result.elapsed_s > 0


def test_unsaved_buffer_resolves_relative_includes(toolchain: Toolchain, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "include").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "src" / "scale.cuh").write_text("#define SCALE 3.0f\n")
    (project / "include" / "shift.cuh").write_text("#define SHIFT 1.0f\n")
    source = project / "src" / "kernel.cu"
    source.write_text("// the saved version has no kernel yet\n")
    buffer = (
        '#include "scale.cuh"\n'
        '#include "../include/shift.cuh"\n'
        "__global__ void affine(float* x) { x[threadIdx.x] = x[threadIdx.x] * SCALE + SHIFT; }\n"
    )
    result = compile_to_ptx(source, buffer, toolchain, "sm_75")
    assert result.ok, result.diagnostics
    assert "_Z6affinePf" in result.ptx
    assert f'"{source}"' in result.ptx
    assert not any(
        part.startswith(str(project)) and part.endswith(".cu") for part in result.command
    )


def test_error_in_unsaved_buffer_is_reported_at_the_real_file(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    source = tmp_path / "broken.cu"
    source.write_text("// saved text is fine\n")
    buffer = "__global__ void k(float* x)\n{\n    float y = undefined_symbol;\n    x[0] = y;\n}\n"
    result = compile_to_ptx(source, buffer, toolchain, "sm_80")
    assert not result.ok
    assert result.ptx == ""
    errors = result.errors
    assert len(errors) == 1
    assert errors[0].file == str(source)
    assert (errors[0].line, errors[0].column) == (3, 15)
    assert 'identifier "undefined_symbol" is undefined' in errors[0].message
    assert errors[0].tool == "cudafe++"


def test_missing_include_is_reported_with_line_and_column(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    source = tmp_path / "needs_header.cu"
    source.write_text('\n#include "not_there.cuh"\n__global__ void k() {}\n')
    result = compile_to_ptx(source, None, toolchain, "sm_80")
    [error] = result.errors
    assert (error.file, error.line, error.column) == (str(source), 2, 10)
    assert "not_there.cuh" in error.message


def test_warnings_keep_their_number(toolchain: Toolchain, tmp_path: Path) -> None:
    source = tmp_path / "warn.cu"
    source.write_text("__global__ void k(int* x)\n{\n    int unused;\n    x[0] = 1;\n}\n")
    result = compile_to_ptx(source, None, toolchain, "sm_80")
    assert result.ok
    [warning] = [d for d in result.diagnostics if d.severity == "warning"]
    assert (warning.line, warning.column, warning.code) == (3, 9, "177-D")


def test_awkward_paths_never_reach_a_shell(toolchain: Toolchain, tmp_path: Path) -> None:
    directory = tmp_path / AWKWARD_DIR
    directory.mkdir()
    (directory / "value $x.cuh").write_text("#define VALUE 7\n")
    source = directory / "kernel; rm -rf x.cu"
    source.write_text(
        '#include "value $x.cuh"\n__global__ void k(int* x) { x[0] = VALUE + oops; }\n'
    )
    failed = compile_to_ptx(source, None, toolchain, "sm_80")
    [error] = failed.errors
    assert (error.file, error.line) == (str(source), 2)

    fixed = source.read_text().replace(" + oops", "")
    result = compile_to_ptx(source, fixed, toolchain, "sm_80")
    assert result.ok, result.diagnostics
    assert f'"{source}"' in result.ptx  # `$HOME` and the quotes arrive unexpanded
    assert not (tmp_path / "x").exists()


def test_include_dirs_defines_and_std(toolchain: Toolchain, tmp_path: Path) -> None:
    include = tmp_path / "third party"
    include.mkdir()
    (include / "config.cuh").write_text("#define FROM_INCLUDE 5\n")
    source = tmp_path / "flags.cu"
    source.write_text(
        '#include "config.cuh"\n'
        "#if __cplusplus < 201703L\n#error needs C++17\n#endif\n"
        "__global__ void k(int* x) { if constexpr (TUNING > 1) x[0] = FROM_INCLUDE + TUNING; }\n"
    )
    options = CompileOptions(include_dirs=(include,), defines=("TUNING=3",), std="c++17")
    result = compile_to_ptx(source, None, toolchain, "sm_80", options)
    assert result.ok, result.diagnostics
    assert ", 8;" in result.ptx  # FROM_INCLUDE + TUNING

    without_define = compile_to_ptx(
        source, None, toolchain, "sm_80", CompileOptions(include_dirs=(include,))
    )
    assert not without_define.ok
    assert any("TUNING" in d.message for d in without_define.errors)


def test_extra_args_drop_output_flags_and_keep_extensions(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    source = tmp_path / "lambda.cu"
    source.write_text(
        "constexpr float half_of(float v) { return v / 2; }\n"
        "__global__ void k(float* x) { x[0] = half_of(x[1]); }\n"
    )
    options = CompileOptions(
        extra_args=("--expt-relaxed-constexpr", "-o", str(tmp_path / "elsewhere.o"), "-c")
    )
    result = compile_to_ptx(source, None, toolchain, "sm_80", options)
    assert result.ok, result.diagnostics
    assert "--expt-relaxed-constexpr" in result.command
    assert "-c" not in result.command
    assert not (tmp_path / "elsewhere.o").exists()


def test_compile_commands_entry_supplies_flags(toolchain: Toolchain, tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "tile.cuh").write_text("constexpr int TILE_FROM_HEADER = 16;\n")
    source = tmp_path / "src" / "tile.cu"
    source.parent.mkdir()
    source.write_text(
        '#include "tile.cuh"\n'
        "__global__ void k(int* x) { x[threadIdx.x] = TILE_FROM_HEADER * BUILD_FACTOR; }\n"
    )
    database = tmp_path / "build" / "compile_commands.json"
    database.parent.mkdir()
    entries = [
        {
            "directory": str(tmp_path / "build"),
            "file": "../src/other.cu",
            "command": "nvcc -DBUILD_FACTOR=1 -c ../src/other.cu -o other.o",
        },
        {
            "directory": str(tmp_path / "build"),
            "file": "../src/tile.cu",
            "arguments": [
                "/usr/local/cuda/bin/nvcc", "-I../inc", "-DBUILD_FACTOR=4", "-std=c++17",
                "-gencode", "arch=compute_86,code=sm_86", "-O3", "-Xcompiler", "-fPIC",
                "-c", "../src/tile.cu", "-o", "tile.o",
            ],
        },
    ]  # fmt: skip
    database.write_text(json.dumps(entries))
    result = build(source, options=CompileOptions(compile_commands=database), toolchain=toolchain)
    assert result.ok, result.diagnostics
    assert result.compile.arch == "sm_86"  # the database's architecture, no explicit one given
    assert "-DBUILD_FACTOR=4" in result.compile.command
    assert "-std=c++17" in result.compile.command
    assert "-fPIC" not in result.compile.command
    assert ", 64;" in result.ptx  # TILE_FROM_HEADER * BUILD_FACTOR, folded by the compiler


def test_header_file_is_compiled_as_cuda(toolchain: Toolchain, tmp_path: Path) -> None:
    header = tmp_path / "kernels.cuh"
    header.write_text("__global__ void in_header(float* x) { x[0] = 1.0f; }\n")
    result = compile_to_ptx(header, None, toolchain, "sm_80")
    assert result.ok, result.diagnostics
    assert "_Z9in_headerPf" in result.ptx


def test_empty_file_gives_ptx_without_kernels(toolchain: Toolchain, tmp_path: Path) -> None:
    empty = tmp_path / "empty.cu"
    empty.write_text("")
    result = build(empty, arch="sm_80", toolchain=toolchain)
    assert result.ok
    assert result.kernels == ()


def test_binary_garbage_is_an_error_not_a_crash(toolchain: Toolchain, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.cu"
    garbage.write_bytes(bytes(range(256)) * 4)
    result = build(garbage, arch="sm_80", toolchain=toolchain)
    assert not result.ok
    assert result.compile.errors
    assert all(d.file in (None, str(garbage)) for d in result.compile.errors)


def test_unsupported_architecture_is_reported_by_nvcc(toolchain: Toolchain) -> None:
    result = compile_to_ptx(CORPUS / "saxpy.cu", None, toolchain, "sm_99")
    assert not result.ok
    [error] = result.errors
    assert error.tool == "nvcc" and error.file is None
    assert "compute_99" in error.message or "sm_99" in error.message


def test_inline_asm_for_a_newer_arch_is_reported_at_the_cuda_line(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    source = tmp_path / "async_copy.cu"
    source.write_text(
        "__global__ void k(unsigned* x)\n"
        "{\n"
        "    __shared__ unsigned staged[32];\n"
        "    unsigned address = (unsigned)__cvta_generic_to_shared(staged + threadIdx.x);\n"
        '    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\\n" :: "r"(address), '
        '"l"(x + threadIdx.x));\n'
        "    x[threadIdx.x] = staged[threadIdx.x ^ 1];\n"
        "}\n"
    )
    result = build(source, arch="sm_75", toolchain=toolchain)
    assert result.compile.ok  # nvcc does not check inline asm against the target
    assert result.assembly is not None and not result.assembly.ok
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert errors[0].tool == "ptxas"
    assert (errors[0].file, errors[0].line) == (str(source), 5)
    assert "cp.async" in errors[0].message and "sm_80" in errors[0].message
    assert build(source, arch="sm_80", toolchain=toolchain).ok


def test_hanging_nvcc_is_killed_with_its_children(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FLIPFLOP_TEST_CHILD_PID", str(pid_file))
    hanging = Toolchain(FAKE_TOOLS / "hanging_nvcc", toolchain.ptxas, "fake", "test")
    source = tmp_path / "any.cu"
    source.write_text("__global__ void k() {}\n")
    scratch_before = set(Path(tempfile.gettempdir()).glob("flipflop-*"))
    with pytest.raises(ToolTimeout, match="did not finish within 1 s"):
        compile_to_ptx(source, None, hanging, "sm_80", CompileOptions(timeout_s=1.0))
    child = int(pid_file.read_text())
    assert wait_until_gone(child), f"child process {child} survived the timeout"
    assert set(Path(tempfile.gettempdir()).glob("flipflop-*")) <= scratch_before


def test_cancelled_compile_stops_promptly(
    toolchain: Toolchain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FLIPFLOP_TEST_CHILD_PID", str(pid_file))
    hanging = Toolchain(FAKE_TOOLS / "hanging_nvcc", toolchain.ptxas, "fake", "test")
    source = tmp_path / "any.cu"
    source.write_text("__global__ void k() {}\n")
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    try:
        with pytest.raises(ToolCancelled):
            compile_to_ptx(source, None, hanging, "sm_80", CompileOptions(timeout_s=60), cancel)
    finally:
        timer.cancel()
    assert wait_until_gone(int(pid_file.read_text()))


def test_crashing_nvcc_becomes_an_error_diagnostic(toolchain: Toolchain, tmp_path: Path) -> None:
    crashing = Toolchain(FAKE_TOOLS / "crashing_nvcc", toolchain.ptxas, "fake", "test")
    source = tmp_path / "any.cu"
    source.write_text("__global__ void k() {}\n")
    result = compile_to_ptx(source, None, crashing, "sm_80")
    assert not result.ok
    [error] = result.errors
    assert "killed by signal 11" in error.message
    assert "internal state corrupted" in error.message


def test_unreadable_source_is_a_clear_error(toolchain: Toolchain, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"missing\.cu: cannot read"):
        compile_to_ptx(tmp_path / "missing.cu", None, toolchain, "sm_80")


def wait_until_gone(pid: int, patience_s: float = 5.0) -> bool:
    """True once `pid` no longer runs (a zombie awaiting its reaper counts as gone)."""
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "State:\tZ" in status:
            return True
        time.sleep(0.05)
    return False
