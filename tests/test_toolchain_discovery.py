"""Finding nvcc and ptxas: the documented search order and the message when none is found."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flipflop.toolchain import Toolchain, ToolchainError, find_toolchain
from flipflop.toolchain.discovery import INSTALL_HINT


def make_fake_toolkit(root: Path, release: str) -> Path:
    """A directory `root/bin` with an nvcc that reports `release` and a ptxas beside it."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    major_minor = ".".join(release.split(".")[:2])
    scripts = {
        "nvcc": (
            "#!/bin/sh\n"
            "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
            f"echo 'Cuda compilation tools, release {major_minor}, V{release}'\n"
        ),
        "ptxas": "#!/bin/sh\nexit 0\n",
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


@pytest.fixture()
def kits(tmp_path: Path) -> dict[str, Path]:
    """Six fake toolkits, one per place in the search order, each with its own version."""
    names = ["explicit", "flipflop_nvcc", "cudacxx", "path", "cuda_home", "wheel"]
    found = {}
    for number, name in enumerate(names, start=1):
        if name == "wheel":
            wheel_bin = make_fake_toolkit(tmp_path / "site" / "nvidia" / "cu13", f"13.{number}.0")
            found[name] = wheel_bin
        else:
            found[name] = make_fake_toolkit(tmp_path / name, f"12.{number}.0")
    return found


def environment(kits: dict[str, Path], *, without: tuple[str, ...] = ()) -> dict[str, str]:
    env = {
        "FLIPFLOP_NVCC": str(kits["flipflop_nvcc"] / "nvcc"),
        "CUDACXX": str(kits["cudacxx"] / "nvcc"),
        "PATH": str(kits["path"]),
        "CUDA_HOME": str(kits["cuda_home"].parent),
    }
    return {key: value for key, value in env.items() if key not in without}


def wheel_root(kits: dict[str, Path]) -> Path:
    return kits["wheel"].parent.parent.parent  # <site>/nvidia/cu13/bin -> <site>


def test_explicit_path_wins_over_everything(kits: dict[str, Path]) -> None:
    found = find_toolchain(
        kits["explicit"] / "nvcc", environment(kits), wheel_roots=[wheel_root(kits)]
    )
    assert found.nvcc == kits["explicit"] / "nvcc"
    assert found.ptxas == kits["explicit"] / "ptxas"
    assert found.version == "12.1.0"
    assert found.origin == "explicit path"


def test_explicit_path_may_name_the_toolkit_directory(kits: dict[str, Path]) -> None:
    found = find_toolchain(kits["explicit"].parent, {}, wheel_roots=[])
    assert found.nvcc == kits["explicit"] / "nvcc"


@pytest.mark.parametrize(
    ("removed", "expected_origin", "expected_version"),
    [
        ((), "FLIPFLOP_NVCC", "12.2.0"),
        (("FLIPFLOP_NVCC",), "CUDACXX", "12.3.0"),
        (("FLIPFLOP_NVCC", "CUDACXX"), "PATH", "12.4.0"),
        (("FLIPFLOP_NVCC", "CUDACXX", "PATH"), "CUDA_HOME", "12.5.0"),
        (("FLIPFLOP_NVCC", "CUDACXX", "PATH", "CUDA_HOME"), "nvidia-cuda-nvcc wheel", "13.6.0"),
    ],
)
def test_search_order(
    kits: dict[str, Path],
    removed: tuple[str, ...],
    expected_origin: str,
    expected_version: str,
) -> None:
    found = find_toolchain(None, environment(kits, without=removed), wheel_roots=[wheel_root(kits)])
    assert found.origin == expected_origin
    assert found.version == expected_version


def test_cuda_path_is_used_like_cuda_home(kits: dict[str, Path]) -> None:
    env = {"CUDA_PATH": str(kits["cuda_home"].parent)}
    found = find_toolchain(None, env, wheel_roots=[])
    assert (found.origin, found.version) == ("CUDA_PATH", "12.5.0")


def test_cuda12_wheel_layout_is_found(tmp_path: Path) -> None:
    make_fake_toolkit(tmp_path / "site" / "nvidia" / "cuda_nvcc", "12.8.93")
    found = find_toolchain(None, {}, wheel_roots=[tmp_path / "site"])
    assert found.origin == "nvidia-cuda-nvcc wheel"
    assert found.version == "12.8.93"


def test_missing_nvcc_says_where_it_looked_and_how_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ToolchainError) as caught:
        find_toolchain(None, {"PATH": str(empty)}, wheel_roots=[tmp_path / "site"])
    message = str(caught.value)
    for place in ("explicit path", "FLIPFLOP_NVCC", "CUDACXX", "PATH", "CUDA_HOME", "CUDA_PATH"):
        assert place in message
    assert str(empty) in message
    assert str(tmp_path / "site" / "nvidia" / "cu13" / "bin") in message
    assert "pip install 'flipflop[nvcc]'" in message
    assert "flipflop.nvccPath" in message
    assert INSTALL_HINT in message


def test_a_wrong_explicit_path_is_an_error_not_a_fallback(kits: dict[str, Path]) -> None:
    with pytest.raises(ToolchainError, match=r"nvcc not found at .*no-such-nvcc"):
        find_toolchain(kits["explicit"] / "no-such-nvcc", environment(kits), wheel_roots=[])


def test_a_wrong_flipflop_nvcc_is_an_error_not_a_fallback(kits: dict[str, Path]) -> None:
    env = environment(kits)
    env["FLIPFLOP_NVCC"] = "/nonexistent/nvcc"
    with pytest.raises(ToolchainError, match="FLIPFLOP_NVCC"):
        find_toolchain(None, env, wheel_roots=[])


def test_nvcc_without_ptxas_is_skipped(kits: dict[str, Path]) -> None:
    (kits["cudacxx"] / "ptxas").unlink()
    env = environment(kits, without=("FLIPFLOP_NVCC",))
    env["PATH"] = str(kits["path"]) + os.pathsep + "/nonexistent"
    found = find_toolchain(None, env, wheel_roots=[])
    # CUDACXX's nvcc would find the PATH ptxas, which belongs to another toolkit version but
    # is still a working assembler: discovery takes it rather than failing.
    assert found.origin == "CUDACXX"
    assert found.ptxas == kits["path"] / "ptxas"


def test_the_real_toolchain_of_this_machine_reports_its_version(
    cuda_toolchain: Toolchain,
) -> None:
    found = cuda_toolchain
    assert found.nvcc.is_file() and found.ptxas.is_file()
    major = int(found.version.split(".")[0])
    assert major >= 12
