"""A missing `#include` with the real nvcc: one error that says what is missing, where nvcc looked
and what provides it; CUDA library wheels installed beside FlipFlop are searched by themselves."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flipflop.toolchain import CompileOptions, Toolchain, compile_to_ptx
from flipflop.toolchain.discovery import python_roots, toolkit_include_dirs
from flipflop.toolchain.headers import library_wheel_include_dirs

CORPUS = Path(__file__).parent / "corpus"
SCALE_ROWS = CORPUS / "missing_header" / "scale_rows.cu"
CURAND_NOISE = CORPUS / "libraries" / "curand_noise.cu"


@pytest.fixture(scope="module")
def toolchain(cuda_toolchain: Toolchain) -> Toolchain:
    return cuda_toolchain


def _has_header(directories: tuple[Path, ...], name: str) -> bool:
    return any((directory / name).is_file() for directory in directories)


def _version_words(toolchain: Toolchain) -> tuple[str, str]:
    major, minor = toolchain.version.split(".")[:2]
    return major, minor


def test_missing_library_header_is_one_error_at_the_include_that_leads_to_it(
    toolchain: Toolchain,
) -> None:
    own = toolkit_include_dirs(toolchain)
    assert own, "nvcc -dryrun names its include folders"
    if _has_header(own, "cublas_v2.h"):
        pytest.skip(f"this CUDA installation ships cuBLAS ({toolchain.nvcc})")
    result = compile_to_ptx(SCALE_ROWS, None, toolchain, "sm_86")
    assert not result.ok
    [error] = result.errors
    assert (error.file, error.line) == (str(SCALE_ROWS.absolute()), 3)
    message = error.message
    assert message.startswith(
        "cublas_v2.h not found (#include at blas_helpers.h:5, reached from scale_rows.cu:3)."
    )
    assert "It is part of cuBLAS" in message
    for directory in (SCALE_ROWS.parent.absolute(), *own):
        assert str(directory) in message
    major, minor = _version_words(toolchain)
    wheel = "nvidia-cublas" if int(major) >= 13 else "nvidia-cublas-cu12"
    assert f"`{sys.executable} -m pip install {wheel}`" in message
    assert f"libcublas-dev-{major}-{minor}" in message
    assert "flipflop.includePaths" in message and "-I DIR" in message
    assert "compile_commands.json" in message
    assert "nvcc reported nothing else" in message


def test_cli_prints_the_one_error_and_exits_1(toolchain: Toolchain) -> None:
    if _has_header(toolkit_include_dirs(toolchain), "cublas_v2.h"):
        pytest.skip(f"this CUDA installation ships cuBLAS ({toolchain.nvcc})")
    run = subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "analyze", str(SCALE_ROWS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1
    assert run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(
        f"{SCALE_ROWS}:3:0: error: host compiler: cublas_v2.h not found (#include at"
    )


def test_a_missing_header_of_the_project_names_the_include_paths_not_a_wheel(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    source = tmp_path / "kernel.cu"
    source.write_text('#include "tiles/config.cuh"\n__global__ void k() {}\n')
    [error] = compile_to_ptx(source, None, toolchain, "sm_80").errors
    assert (error.line, error.column) == (1, 10)
    assert error.message.startswith("tiles/config.cuh not found. Searched: ")
    assert "pip install" not in error.message and "It is part of" not in error.message
    assert f"{tmp_path} (the file's folder)" in error.message
    assert "the folder holding config.cuh in the `flipflop.includePaths` setting" in error.message


def test_headers_of_a_cuda_library_wheel_beside_flipflop_are_found(toolchain: Toolchain) -> None:
    """nvidia-curand is a test dependency: its `nvidia/cu13/include` is searched by itself."""
    wheel_dirs = library_wheel_include_dirs(python_roots(), toolchain.version)
    assert _has_header(wheel_dirs, "curand_kernel.h"), "scripts/setup.sh installs nvidia-curand"
    result = compile_to_ptx(CURAND_NOISE, None, toolchain, "sm_86")
    assert result.ok, [d.message for d in result.errors]
    assert "uniform_noise" in result.ptx
    # The wheel folder comes after nvcc's own, so it never replaces a toolkit header.
    own = toolkit_include_dirs(toolchain)
    if not _has_header(own, "curand_kernel.h"):
        assert any(arg.startswith("-idirafter,") for arg in result.command)
        without = compile_to_ptx(
            CURAND_NOISE, None, toolchain, "sm_86", CompileOptions(library_roots=())
        )
        [error] = without.errors
        assert error.line == 3 and "It is part of cuRAND" in error.message
        assert "CUDA library wheels beside FlipFlop: none installed" in error.message
        assert "-m pip install nvidia-curand" in error.message


def test_a_wheel_layout_anywhere_on_the_library_roots_is_searched(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    """The layout of the real wheel (`nvidia/cu13/include/curand*.h`), laid out in a temporary
    site-packages: found there, and only there."""
    [installed] = [
        d for d in library_wheel_include_dirs(python_roots(), toolchain.version)
        if (d / "curand_kernel.h").is_file()
    ]
    site = tmp_path / "site packages"  # a space: reached through a plain link, not a shell
    major = toolchain.version.split(".")[0]
    include = site / "nvidia" / f"cu{major}" / "include"
    include.mkdir(parents=True)
    for header in installed.glob("curand*.h"):
        shutil.copy(header, include / header.name)
    result = compile_to_ptx(
        CURAND_NOISE, None, toolchain, "sm_86", CompileOptions(library_roots=(site,))
    )
    assert result.ok, [d.message for d in result.errors]
    assert "uniform_noise" in result.ptx


def test_wheel_include_folders_follow_the_cuda_major_version(tmp_path: Path) -> None:
    cu13 = tmp_path / "a" / "nvidia" / "cu13" / "include"
    cu12_blas = tmp_path / "b" / "nvidia" / "cublas" / "include"
    cu12_rand = tmp_path / "b" / "nvidia" / "curand" / "include"
    for folder in (cu13, cu12_blas, cu12_rand):
        folder.mkdir(parents=True)
    roots = (tmp_path / "a", tmp_path / "b", tmp_path / "absent")
    assert library_wheel_include_dirs(roots, "13.0.88") == (cu13.resolve(),)
    assert library_wheel_include_dirs(roots, "12.4.131") == (
        cu12_blas.resolve(),
        cu12_rand.resolve(),
    )
    assert library_wheel_include_dirs(roots, "unknown") == ()
    # The nvcc wheel's own folder is already on nvcc's path.
    assert library_wheel_include_dirs(roots, "13.0.88", own_include=cu13) == ()
