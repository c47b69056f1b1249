"""Our occupancy against NVIDIA's own calculator, `cuda_occupancy.h`, compiled with g++.

Every profile × every register count × block sizes 32..1024 × shared memory from 0 to past the
opt-in maximum (static and dynamic), carveout preferences, barrier counts, and
cudaOccupancyMaxPotentialBlockSize. All queries go through one run of the C++ program.
The header ships with the `nvidia-cuda-runtime` wheel (dev extra) and with the CUDA toolkit.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flipflop.gpu.occupancy import max_potential_block_size, occupancy
from flipflop.gpu.profile import GpuProfile
from flipflop.gpu.profiles import list_profiles

ORACLE_SOURCE = Path(__file__).parent / "oracle" / "occupancy_oracle.cpp"
BLOCKS = range(32, 1025, 32)
NAMES = ("warps", "registers", "shared_memory", "blocks", "barriers")


def occupancy_header_dirs() -> Iterator[Path]:
    spec = importlib.util.find_spec("nvidia")
    for base in (spec.submodule_search_locations or []) if spec else []:
        yield Path(base) / "cu13" / "include"
        yield Path(base) / "cuda_runtime" / "include"
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            yield Path(os.environ[variable]) / "include"
    yield Path("/usr/local/cuda/include")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("g++")
    header_dir = next(
        (d for d in occupancy_header_dirs() if (d / "cuda_occupancy.h").is_file()), None
    )
    if compiler is None or header_dir is None:
        pytest.fail(
            "the occupancy oracle needs g++ and cuda_occupancy.h "
            "(pip install nvidia-cuda-runtime, or a CUDA toolkit)"
        )
    binary = tmp_path_factory.mktemp("oracle") / "occupancy_oracle"
    subprocess.run(
        [compiler, "-O2", "-std=c++17", f"-I{header_dir}", str(ORACLE_SOURCE), "-o", str(binary)],
        check=True,
    )
    return binary


def device_line(profile: GpuProfile) -> str:
    limits = profile.limits
    major, minor = profile.compute_capability
    return (
        f"D {major} {minor} {limits.max_threads_per_block} {limits.max_threads_per_sm} "
        f"{limits.max_registers_per_block} {limits.registers_per_sm} {limits.smem_per_block_bytes} "
        f"{limits.smem_per_sm_bytes} {profile.sms} {limits.smem_per_block_optin_bytes} "
        f"{limits.reserved_smem_per_block_bytes}"
    )


def default_max_dynamic(profile: GpuProfile, static_smem: int) -> int:
    # What a program that raises cudaFuncAttributeMaxDynamicSharedMemorySize as far as allowed sets.
    return max(profile.limits.smem_per_block_optin_bytes - static_smem, 0)


def smem_points(profile: GpuProfile) -> list[int]:
    limits = profile.limits
    optin, reserved = limits.smem_per_block_optin_bytes, limits.reserved_smem_per_block_bytes
    steps = list(range(0, optin + 4096, 4096))
    edges = [1, 127, 129, 255, 257, 48 * 1024 - 1, 48 * 1024, 48 * 1024 + 1]
    edges += [optin - reserved - 1, optin - reserved, optin - 1, optin, optin + 1]
    edges += [limits.smem_per_sm_bytes // 2, limits.smem_per_sm_bytes // 3]
    return sorted(set(steps + edges))


# (regs, static smem, dynamic smem, max dynamic or None, block, carveout or None, barriers)
Case = tuple[int, int, int, int | None, int, int | None, int]


def occupancy_cases(profile: GpuProfile) -> Iterator[Case]:
    for registers in range(256):
        for block in BLOCKS:
            yield registers, 0, 0, None, block, None, 1
            yield registers, 4097, 0, None, block, None, 1
    for registers in (0, 16, 32, 40, 64, 96, 128, 168, 200, 255):
        for index, smem in enumerate(smem_points(profile)):
            static = smem if index % 2 else smem // 3
            for block in BLOCKS:
                yield registers, static, smem - static, None, block, None, 1
    for carveout in (0, 1, 10, 25, 33, 50, 66, 75, 99, 100):
        for smem in (0, 1, 5000, 8192, 20000, 33000, 47000, 64000, 90000, 120000, 200000):
            for block in (32, 128, 256, 640, 1024):
                yield 32, 0, smem, None, block, carveout, 1
    for barriers in (0, 2, 3, 5, 16):
        for block in BLOCKS:
            for registers in (0, 24):
                yield registers, 0, 0, None, block, None, barriers
    for max_dynamic in (0, 1000, 48 * 1024 - 2048, 70000):
        for dynamic in (0, 999, 1000, 1001, 46000, 69000, 70001):
            for block in (64, 256, 1024):
                yield 32, 2048, dynamic, max_dynamic, block, None, 1


def potential_cases(profile: GpuProfile) -> Iterator[tuple[int, int, int, int]]:
    for registers in [*range(0, 256, 8), 255]:
        for smem in (0, 1, 8192, 16384, 40000, 48 * 1024, 64000, 96000, 150000, 220000):
            if smem > profile.limits.smem_per_block_optin_bytes:
                continue
            for limit in (0, 250, 768):
                yield registers, smem // 2, smem - smem // 2, limit


def run_oracle(oracle: Path, lines: list[str]) -> list[str]:
    done = subprocess.run(
        [str(oracle)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_occupancy_matches_cuda_occupancy_h(oracle: Path) -> None:
    queries: list[str] = []
    expected: list[tuple[GpuProfile, Case]] = []
    for profile in list_profiles():
        queries.append(device_line(profile))
        expected.append((profile, (0, 0, 0, None, 0, None, 0)))
        for case in occupancy_cases(profile):
            registers, static, dynamic, max_dynamic, block, carveout, barriers = case
            if max_dynamic is None:
                max_dynamic = default_max_dynamic(profile, static)
            queries.append(
                f"O {registers} {static} {dynamic} {max_dynamic} {block} "
                f"{-1 if carveout is None else carveout} {barriers}"
            )
            expected.append((profile, case))
    answers = run_oracle(oracle, queries)
    assert len(answers) == len(queries)
    mismatches = []
    for query, answer, (profile, case) in zip(queries, answers, expected, strict=True):
        if query.startswith("D"):
            assert answer == "ok"
            continue
        registers, static, dynamic, max_dynamic, block, carveout, barriers = case
        ours = occupancy(
            profile,
            threads_per_block=block,
            registers=registers,
            static_smem_bytes=static,
            dynamic_smem_bytes=dynamic,
            max_dynamic_smem_bytes=max_dynamic,
            carveout_percent=carveout,
            barriers=barriers,
        )
        got = (
            f"{ours.active_blocks_per_sm} {ours.block_limit_warps} {ours.block_limit_registers} "
            f"{ours.block_limit_shared_memory} {ours.block_limit_blocks} "
            f"{ours.block_limit_barriers} {ours.allocated_registers_per_block} "
            f"{ours.allocated_smem_per_block_bytes}"
        )
        header_limits = [int(v) for v in answer.split()[1:6]]
        active = int(answer.split()[0])
        binding = tuple(n for n, v in zip(NAMES, header_limits, strict=True) if v == active)
        if got != answer or ours.limiting_factors != binding:
            mismatches.append(f"{profile.id} {query}: header {answer}, ours {got} {ours.limiter}")
    assert not mismatches, f"{len(mismatches)} mismatches, first: " + "\n".join(mismatches[:10])
    assert len(queries) > 150_000


def test_max_potential_block_size_matches_cuda_occupancy_h(oracle: Path) -> None:
    queries: list[str] = []
    cases: list[tuple[GpuProfile, tuple[int, int, int, int]]] = []
    for profile in list_profiles():
        queries.append(device_line(profile))
        cases.append((profile, (0, 0, 0, 0)))
        for case in potential_cases(profile):
            registers, static, dynamic, limit = case
            max_dynamic = default_max_dynamic(profile, static)
            queries.append(f"M {registers} {static} {dynamic} {max_dynamic} {limit}")
            cases.append((profile, case))
    answers = run_oracle(oracle, queries)
    mismatches = []
    for query, answer, (profile, (registers, static, dynamic, limit)) in zip(
        queries, answers, cases, strict=True
    ):
        if query.startswith("D"):
            continue
        block, min_grid = max_potential_block_size(
            profile,
            registers=registers,
            static_smem_bytes=static,
            dynamic_smem_bytes=dynamic,
            block_size_limit=limit,
        )
        if f"{block} {min_grid}" != answer:
            mismatches.append(f"{profile.id} {query}: header {answer}, ours {block} {min_grid}")
    assert not mismatches, f"{len(mismatches)} mismatches, first: " + "\n".join(mismatches[:10])
