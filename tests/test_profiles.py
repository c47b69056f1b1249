"""The bundled GPU profiles: schema, provenance, consistency with the compute-capability table."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache
from flipflop.gpu.dvfs import relative_voltage_curve
from flipflop.gpu.legacy import legacy_gpu, legacy_gpus
from flipflop.gpu.profile import GpuProfile
from flipflop.gpu.profiles import (
    KINDS,
    ProfileFormatError,
    UnknownGpuError,
    UnsupportedGpuError,
    known_gpu_ids,
    list_profiles,
    load_profile,
    load_profile_file,
)

ROOT = Path(__file__).resolve().parents[1]
PROFILE_DIR = ROOT / "calibration" / "profiles"
SHARED = ROOT / "calibration" / "data"
SWEEP = SHARED / "reference" / "a100-pcie-fp32-clock-sweep.json"
MEASURED_CACHES = sorted((SHARED / "measured").glob("*/*.json.gz"))
REQUIRED = {
    "rtx3070", "quadro-rtx5000", "rtx5000-ada", "rtx4090", "l4", "a100-sxm4-80gb", "h100-sxm",
    "h200",
    # the GPUs of the measured search spaces in calibration/data/measured
    "rtx3090", "rtx2080ti", "rtx-a6000",
    "a100-pcie-40gb", "rtx-a4000", "rtx-a5000", "titan-rtx", "rtx3060-laptop", "rtx3080",
    "rtx4070", "t4", "a10", "l40s", "h100-pcie", "rtx4000-ada",
}
# Peak rates NVIDIA publishes (TFLOPS at the boost clock), to check SMs x per-SM rate x clock:
# FP32 and dense FP16 tensor with FP32 accumulate (half of the sparsity figure where only that
# is given). Whitepapers: GA102 (RTX 3090/3080), Turing (RTX 2080 Ti); datasheets otherwise.
PUBLISHED_TFLOPS = {
    "rtx3090": (35.6, 71.0),
    "rtx3080": (29.8, 59.5),
    "rtx2080ti": (13.4, 53.8),
    "rtx-a6000": (38.7, 309.7 / 2),
    "rtx-a5000": (27.8, 222.2 / 2),
    "rtx-a4000": (19.2, 153.4 / 2),
    "a10": (31.2, 125.0),
    "a100-pcie-40gb": (19.5, 312.0),
    "t4": (8.1, 65.0),
    "titan-rtx": (16.3, 130.0),
    "rtx4070": (29.1, 466.0 / 8),  # "466 AI TOPS": FP8 with sparsity = 8 x FP32-accumulate FP16
    "l40s": (91.6, 362.05),
    "h100-pcie": (51.0, None),  # the tensor peak is quoted at a clock below the boost clock
    # The datasheet's 327.6 TFLOPS (FP8, sparse) is 48 SMs x 4096 at 1.67 GHz, not the boost
    # clock; the full FP32-accumulate rate is measured (test below).
    "rtx4000-ada": (26.7, None),
}
# NVML device names in the measured caches -> the profile `flipflop validate` must pick.
MEASURED_DEVICES = {
    "NVIDIA GeForce RTX 3090": "rtx3090",
    "NVIDIA GeForce RTX 2080 Ti": "rtx2080ti",
    "NVIDIA RTX A6000": "rtx-a6000",
    "NVIDIA RTX A4000": "rtx-a4000",
    "NVIDIA RTX 4000 Ada Generation": "rtx4000-ada",
}
# cc -> (threads/SM, warps/SM, blocks/SM, smem/SM KB, opt-in/block KB, smem unit B), from
# cuda_occupancy.h and the CUDA C++ Programming Guide's technical specifications (the profiles'
# sources; cc 12.0's 24 blocks/SM is the header's, where the guide's table says 32)
CC_TABLE = {
    (7, 5): (1024, 32, 16, 64, 64, 256),
    (8, 0): (2048, 64, 32, 164, 163, 128),
    (8, 6): (1536, 48, 16, 100, 99, 128),
    (8, 9): (1536, 48, 24, 100, 99, 128),
    (9, 0): (2048, 64, 32, 228, 227, 128),
    (10, 0): (2048, 64, 32, 228, 227, 128),
    (12, 0): (1536, 48, 24, 100, 99, 128),
}
FILES = sorted(PROFILE_DIR.glob("*.json"))


def leaves(node: object, path: str = "") -> list[tuple[str, object]]:
    """Every {"value", "source", "kind"} object (or malformed stand-in) below `node`."""
    if isinstance(node, dict) and "value" in node:
        return [(path, node)]
    if isinstance(node, dict):
        found = []
        for key, child in node.items():
            if key in ("id", "name", "arch") and not path:
                continue
            found += leaves(child, f"{path}.{key}" if path else key)
        return found
    return [(path, node)]


def test_required_gpus_and_a_blackwell_part_are_bundled() -> None:
    ids = {profile.id for profile in list_profiles()}
    assert ids >= REQUIRED
    assert any(p.compute_capability[0] in (10, 12) for p in list_profiles())


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_every_number_has_value_source_and_kind(path: Path) -> None:
    document = json.loads(path.read_text())
    assert document["id"] == path.stem
    found = leaves(document)
    assert len(found) > 40
    for dotted, leaf in found:
        assert isinstance(leaf, dict) and set(leaf) == {"value", "source", "kind"}, dotted
        assert leaf["kind"] in KINDS, dotted
        assert isinstance(leaf["source"], str) and len(leaf["source"]) > 10, dotted
        if dotted != "limits.max_barriers_per_sm":
            assert leaf["value"] is not None, dotted


@pytest.mark.parametrize("profile", list_profiles(), ids=lambda p: p.id)
def test_limits_agree_with_the_compute_capability_table(profile: GpuProfile) -> None:
    threads, warps, blocks, smem_kb, optin_kb, unit = CC_TABLE[profile.compute_capability]
    limits = profile.limits
    assert profile.arch == "sm_{}{}".format(*profile.compute_capability)
    assert (limits.max_threads_per_sm, limits.max_warps_per_sm, limits.max_blocks_per_sm) == (
        threads, warps, blocks,
    )
    assert limits.smem_per_sm_bytes == smem_kb * 1024
    assert limits.smem_per_block_optin_bytes == optin_kb * 1024
    assert limits.smem_allocation_unit_bytes == unit
    assert limits.registers_per_sm == limits.max_registers_per_block == 65536
    assert limits.max_registers_per_thread == 255 and limits.max_threads_per_block == 1024
    reserved = 1024 if profile.compute_capability >= (8, 0) else 0
    assert limits.reserved_smem_per_block_bytes == reserved
    assert max(limits.smem_carveouts_kb) * 1024 == limits.smem_per_sm_bytes
    assert (limits.max_barriers_per_sm is None) == (profile.compute_capability < (9, 0))


@pytest.mark.parametrize("profile", list_profiles(), ids=lambda p: p.id)
def test_performance_and_power_numbers_are_physical(profile: GpuProfile) -> None:
    assert 0 < profile.base_clock_mhz <= profile.boost_clock_mhz
    assert 0 < profile.memory_bandwidth_gbs <= profile.dram_peak_bandwidth_gbs
    assert profile.power.idle_w < profile.tdp_w
    assert 0 < profile.power_limit_min_w <= profile.power_limit_max_w
    clocks = [clock for clock, _ in profile.dvfs_points]
    voltages = [voltage for _, voltage in profile.dvfs_points]
    assert clocks == sorted(clocks)
    assert math.isclose(clocks[-1], profile.boost_clock_mhz, rel_tol=1e-3)
    assert voltages[-1] == 1.0 and all(0.5 < v <= 1.0 for v in voltages)
    # At peak FP32 issue on every SM the TDP-anchored coefficients reproduce the TDP.
    lane_fmas_per_s = profile.sms * profile.rates.fp32_flops / 2 * profile.boost_clock_mhz * 1e6
    power = profile.power
    peak = (
        power.idle_w + power.static_per_sm_w * profile.sms + power.constant_active_w
        + lane_fmas_per_s * (2 * power.pj_per_fp32_flop + power.pj_per_instruction) * 1e-12
    )
    assert peak == pytest.approx(profile.tdp_w, rel=0.01)
    assert set(profile.sources) == set(profile.kinds) and len(profile.sources) > 40


def test_h200_bandwidth_is_our_measurement() -> None:
    h200 = load_profile("h200")
    assert h200.memory_bandwidth_gbs == 4300
    assert h200.kinds["memory_bandwidth_gbs"] == "measured"


@pytest.mark.skipif(not SWEEP.is_file(), reason="the shared A100 clock sweep is not checked out")
def test_dvfs_points_are_the_a100_sweep_derivation() -> None:
    cache = json.loads(SWEEP.read_text())["cache"]
    curve = relative_voltage_curve(
        [entry["core_freq"] for entry in cache.values()],
        [entry["nvml_power"] for entry in cache.values()],
    )
    a100 = load_profile("a100-sxm4-80gb")
    expected = [(round(f * 1410, 1), round(v, 4)) for f, v in curve.points]
    assert list(a100.dvfs_points) == expected
    assert curve.idle_intercept_w == pytest.approx(33.16, abs=0.01)
    assert curve.points[0][1] == pytest.approx(0.70, abs=0.01)


def test_voltage_curve_recovers_a_known_curve() -> None:
    clocks = [200.0, 400.0, 600.0, 800.0, 1000.0]
    voltage = {200.0: 0.7, 400.0: 0.7, 600.0: 0.7, 800.0: 0.85, 1000.0: 1.0}
    power = [30.0 + 0.05 * f * voltage[f] ** 2 for f in clocks]
    curve = relative_voltage_curve(clocks, power)
    assert curve.idle_intercept_w == pytest.approx(30.0)
    assert [v for _, v in curve.points] == pytest.approx([0.7, 0.7, 0.7, 0.85, 1.0])


def test_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(UnknownGpuError) as raised:
        load_profile("gtx480")
    assert str(raised.value) == f"unknown GPU 'gtx480'; known: {', '.join(known_gpu_ids())}"
    assert not isinstance(raised.value, UnsupportedGpuError)


@pytest.mark.parametrize("gpu_id", sorted(PUBLISHED_TFLOPS))
def test_rates_reproduce_the_published_peaks(gpu_id: str) -> None:
    profile = load_profile(gpu_id)
    fp32, tensor = PUBLISHED_TFLOPS[gpu_id]
    per_clock = profile.sms * profile.boost_clock_mhz * 1e6 / 1e12
    assert profile.rates.fp32_flops * per_clock == pytest.approx(fp32, rel=0.015)
    if tensor is not None:
        assert profile.rates.tensor_flops * per_clock == pytest.approx(tensor, rel=0.015)


@pytest.mark.skipif(not MEASURED_CACHES, reason="the shared measured data is not checked out")
def test_every_measured_device_has_a_profile_of_that_name() -> None:
    names = set()
    for cache in MEASURED_CACHES:
        # As `flipflop validate` reads them: the expdist cache was left unclosed.
        device = read_kernel_tuner_cache(cache).device_name
        assert device is not None
        names.add(device)
    assert names == set(MEASURED_DEVICES)
    by_name = {p.name.lower(): p.id for p in list_profiles()}
    for name, gpu_id in MEASURED_DEVICES.items():
        assert by_name[name.lower()] == gpu_id
        assert load_profile(name).id == gpu_id


def test_a_profile_is_found_by_its_device_name_in_any_case() -> None:
    assert load_profile("nvidia geforce rtx 3060 laptop gpu").id == "rtx3060-laptop"
    assert load_profile("Tesla T4").id == "t4"


@pytest.mark.parametrize(
    ("given", "described", "capability"),
    [
        ("v100", "Tesla V100 (sm_70)", "7.0"),
        ("tesla-v100", "Tesla V100 (sm_70)", "7.0"),
        ("Tesla V100-SXM2-16GB", "Tesla V100 (sm_70)", "7.0"),
        ("titan-v", "TITAN V (sm_70)", "7.0"),
        ("p100", "Tesla P100 (sm_60)", "6.0"),
        ("gtx1080", "GeForce GTX 1080 (sm_61)", "6.1"),
        ("geforce-gtx-1080-ti", "GeForce GTX 1080 Ti (sm_61)", "6.1"),
        ("titan-x", "TITAN X (sm_52/sm_61)", "5.2 or 6.1"),
        ("gtx980", "GeForce GTX 980 (sm_52)", "5.2"),
        ("Tesla M40", "Tesla M40 (sm_52)", "5.2"),
        ("sm_72", "sm_72", "7.2"),
    ],
)
def test_pre_turing_gpus_are_refused_with_the_reason(
    given: str, described: str, capability: str
) -> None:
    with pytest.raises(UnsupportedGpuError) as raised:
        load_profile(given)
    message = str(raised.value)
    assert message.startswith(
        f"{described} is not supported: nvcc 13 cannot compile for compute capability {capability}"
    )
    assert "CUDA 12" in message and message.endswith(", ".join(known_gpu_ids()))


def test_no_shipped_gpu_is_mistaken_for_a_pre_turing_one() -> None:
    for profile in list_profiles():
        assert legacy_gpu(profile.id) is None and legacy_gpu(profile.name) is None, profile.id
    for spelling in ("sm_75", "sm_86", "sm_35", "gtx480", "quadro-rtx5000", "titan-rtx"):
        assert legacy_gpu(spelling) is None, spelling
    for gpu in legacy_gpus():
        assert gpu.compute_capabilities and max(gpu.compute_capabilities) < (7, 5)
        assert legacy_gpu(gpu.name) == gpu  # names do not shadow each other


@pytest.mark.skipif(not SWEEP.is_file(), reason="the shared A100 clock sweep is not checked out")
def test_the_shipped_profiles_are_what_the_generator_writes(tmp_path: Path) -> None:
    script = ROOT / "calibration" / "scripts" / "generate_profiles.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    written = sorted(path.name for path in tmp_path.glob("*.json"))
    assert written == [path.name for path in FILES]
    for name in written:
        assert (tmp_path / name).read_text() == (PROFILE_DIR / name).read_text(), name


def test_a_malformed_profile_file_is_rejected_with_the_field(tmp_path: Path) -> None:
    document = json.loads((PROFILE_DIR / "l4.json").read_text())
    document["sms"] = 60
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    with pytest.raises(ProfileFormatError, match="'sms' must be"):
        load_profile_file(broken)
    document = json.loads((PROFILE_DIR / "l4.json").read_text())
    document["limits"]["max_blocks_per_sm"]["kind"] = "guess"
    broken.write_text(json.dumps(document))
    with pytest.raises(ProfileFormatError, match="kind 'guess'"):
        load_profile(str(broken))


def test_profile_files_load_from_a_path(tmp_path: Path) -> None:
    copy = tmp_path / "mine.json"
    copy.write_text((PROFILE_DIR / "rtx3070.json").read_text())
    assert load_profile(str(copy)) == load_profile("rtx3070")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", *args], capture_output=True, text=True
    )


def test_profiles_command_lists_every_profile_as_json() -> None:
    done = run_cli("profiles", "--format", "json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [entry["id"] for entry in listed] == [p.id for p in list_profiles()]
    h100 = next(entry for entry in listed if entry["id"] == "h100-sxm")
    assert h100["sms"] == 132 and h100["compute_capability"] == [9, 0]


def test_profiles_command_table() -> None:
    done = run_cli("profiles")
    assert done.returncode == 0, done.stderr
    assert "rtx3070" in done.stdout and "sm_86" in done.stdout


def test_profiles_command_shows_only_the_gpus_named() -> None:
    done = run_cli("profiles", "rtx2080ti", "--gpu", "NVIDIA RTX A6000", "--format", "json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [entry["id"] for entry in listed] == ["rtx2080ti", "rtx-a6000"]
    assert listed[0]["compute_capability"] == [7, 5] and listed[1]["sms"] == 84


@pytest.mark.parametrize(
    "args",
    [
        ("profiles", "v100"),
        ("profiles", "--gpu", "tesla-v100"),
        ("occupancy", "--gpu", "v100", "--regs", "32", "--smem", "0"),
        ("analyze", str(ROOT / "examples" / "attention.cu"), "--gpu", "v100"),
    ],
    ids=["profiles", "profiles-gpu", "occupancy", "analyze"],
)
def test_commands_refuse_a_pre_turing_gpu_with_exit_1(args: tuple[str, ...]) -> None:
    done = run_cli(*args)
    assert done.returncode == 1
    assert "Tesla V100 (sm_70) is not supported: nvcc 13 cannot compile" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
