"""The model and advisor on a kernel compiled by nvcc, parsed and analysed by our own pipeline."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cuda_toolchain import required_toolchain
from flipflop.advice import advise
from flipflop.analysis import extract_features
from flipflop.gpu.profiles import load_profile
from flipflop.launch import LaunchShape, ProblemSize
from flipflop.model import predict
from flipflop.ptx.parse import parse_ptx
from flipflop.toolchain.ptxas import parse_ptxas_verbose

SAXPY = Path(__file__).parent / "feature_kernels" / "saxpy.cu"
N = 1 << 24

pytestmark = pytest.mark.usefixtures("cuda_toolchain")


def test_saxpy_runs_at_dram_bandwidth_and_the_advice_is_complete(tmp_path: Path) -> None:
    profile = load_profile("rtx3070")
    ptx_path = tmp_path / "saxpy.ptx"
    tools = required_toolchain()
    subprocess.run(
        [str(tools.nvcc), "-ptx", "-lineinfo", f"-arch={profile.arch}", str(SAXPY),
         "-o", str(ptx_path)],
        check=True,
        capture_output=True,
    )
    verbose = subprocess.run(
        [str(tools.ptxas), "-v", f"-arch={profile.arch}", str(ptx_path),
         "-o", str(tmp_path / "k.cubin")],
        check=True,
        capture_output=True,
        text=True,
    )
    module = parse_ptx(ptx_path.read_text(encoding="utf-8"), str(ptx_path))
    name = next(kernel.name for kernel in module.kernels if "saxpy" in kernel.name)
    resources = parse_ptxas_verbose(verbose.stderr)[name]
    features = extract_features(module, name, ("n", "a", "x", "y"))
    params = {"n": float(N)}

    shape = LaunchShape((256, 1, 1), (N // 256, 1, 1))
    prediction = predict(profile, resources, features.work(shape, params), shape)
    # x[i] and y[i] read, y[i] written: 12 bytes per element, all coalesced.
    expected_s = 12.0 * N / (profile.memory_bandwidth_gbs * 1e9) + profile.launch_overhead_s
    assert prediction.bound == "memory"
    assert prediction.time_s == pytest.approx(expected_s, rel=0.05)

    advice = advise(
        profile,
        resources,
        lambda shape: features.work(shape, params),
        ProblemSize(threads=(N, 1, 1)),
        current_block=(256, 1, 1),
        power_limits=True,
    )
    assert advice.heuristic is not None
    assert advice.recommendation.energy_saving_vs_occupancy_heuristic is not None
    assert advice.recommendation.energy_saving_vs_occupancy_heuristic >= 0.0
    assert advice.recommendation.slowdown_vs_fastest <= 0.05
    assert {d.kind for d in advice.drivers} >= {"memory_traffic"}
    traffic = next(d for d in advice.drivers if d.kind == "memory_traffic")
    assert 6 in traffic.lines  # `y[i] = a * x[i] + y[i];`
