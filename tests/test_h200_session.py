"""calibration/h200_session.sh: the dry run on this machine (every input checked, every
configuration compiled for sm_90 with the real compilers, the plan and the estimate), its clear
failures, the estimate's arithmetic, and part B run end to end on a stand-in GPU machine
(tests/fake_gpu_machine): what comes back, and that nothing but reads reached nvidia-smi."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from flipflop.calibration import session
from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache

REPOSITORY = Path(__file__).resolve().parents[1]
MEASURED = REPOSITORY / "calibration" / "data" / "measured"
SCRIPT = REPOSITORY / "calibration" / "h200_session.sh"
FAKE_MACHINE = REPOSITORY / "tests" / "fake_gpu_machine"


def _script(*args: str, env: dict[str, str] | None = None,
            timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], cwd=REPOSITORY, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A carried inputs folder made by --prepare from the shared measured data."""
    assert MEASURED.is_dir(), f"{MEASURED} is missing: the tests need the shared measured data"
    folder = tmp_path_factory.mktemp("session") / "inputs"
    done = _script("--prepare", "--shared", str(MEASURED), env={"INPUTS": str(folder)})
    assert done.returncode == 0, done.stderr
    assert "copied 14 files" in done.stdout
    assert (folder / "COMMIT").read_text().strip()
    return folder


def test_prepare_copies_what_each_space_needs(inputs: Path) -> None:
    for space in session.SPACES:
        for name in space.files:
            copied = inputs / space.name / name
            assert copied.read_bytes() == (MEASURED / space.name / name).read_bytes()


@pytest.mark.slow
def test_the_dry_run_plans_compiles_and_estimates_without_a_gpu(inputs: Path) -> None:
    done = _script("--dry-run", "--part", "all", "--sample", "2", env={"INPUTS": str(inputs)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    # Every step, with the command the run uses.
    for step in ("calibration", "convolution", "pnpoly", "gemm"):
        assert f"== step {step}" in out
    assert "run_all.sh --repeats 5 --window 1 --cooldown 0 --idle 0.5 --no-validate" in out
    # run_all.sh's kernels: every microbenchmark and workload compiled for sm_90.
    assert "-- microbench" in out and "-- workloads" in out
    kernels = re.findall(r"^calibration/(?:microbench|workloads)/\S+: .* compiled for sm_90 \(",
                         out, re.M)
    assert len(kernels) == 28
    # Each space: the configurations, their launches, the windows, all compiled.
    for kernel, available in (("convolution_kernel", 5220), ("cn_pnpoly", 3734),
                              ("Xgemm", 17956)):
        assert f"{kernel} for sm_90: 2 configurations (of {available}, sample 2, seed 13" in out
    assert out.count("compiled 2/2 for sm_90") == 3
    assert "energy window >= 1.0 s" in out
    assert len(re.findall(r"^    \S+ +block \d+x\d+x\d+ +grid \d+x\d+x\d+ ", out, re.M)) == 6
    # The estimate: both parts, each within 8 minutes.
    table = out[out.index("== time estimate"):]
    assert "part A:" in table and "part B:" in table
    assert table.count(": fits") == 2
    totals = [float(t) for t in re.findall(r"total +(\d+) s", table)]
    assert len(totals) == 2 and all(0 < t <= 480 for t in totals)
    # The cubins the run will load are in the carried inputs.
    assert len(list((inputs / "cubins").glob("*.cubin"))) >= 6 + 12


def test_the_dry_run_refuses_missing_inputs(tmp_path: Path) -> None:
    done = _script("--dry-run", "--part", "B", env={"INPUTS": str(tmp_path / "none")})
    assert done.returncode == 1
    assert "pnpoly.cu: error: missing input (run calibration/h200_session.sh --prepare)" in \
        done.stderr


def test_an_estimate_over_the_budget_fails_the_dry_run(inputs: Path) -> None:
    done = _script("--dry-run", "--part", "B", "--sample", "1", "--budget", "5",
                   env={"INPUTS": str(inputs)})
    assert done.returncode == 1
    assert "DOES NOT FIT" in done.stdout
    assert "exceeds the budget of 5 s" in done.stderr


def test_usage_errors_are_exit_2() -> None:
    assert _script("--part", "C").returncode == 2
    assert _script("--frobnicate").returncode == 2
    done = _script("--part", "B", env={"OUT": ""})
    assert done.returncode == 2 and "give --out DIR" in done.stderr


def test_the_estimate_is_the_documented_arithmetic() -> None:
    method = session.Method(repeats=5, window_s=1.0, cooldown_s=0.0, idle_s=1.0)
    # 10 ms launches: 0.04 + 0.01 + 0.05 + 5 x 0.01 + 1.0 + 1.5 x 0.05
    assert session.config_seconds(0.01, method) == pytest.approx(1.225)
    # 200 ms launches outlast the warm-up's 50 ms and the 50 ms chunks.
    assert session.config_seconds(0.2, method) == pytest.approx(
        0.04 + 0.2 + 0.6 + 1.0 + 1.0 + 0.3)
    assert session.space_seconds([0.01, 0.01], 4 * 10**6, method) == pytest.approx(
        session.PROCESS_START_S + 10**6 * session.ELEMENT_S + 2.0 + 2 * 1.225)
    plans = [{"file": "calibration/workloads/a.cu", "configs": [{}, {}],
              "argument_elements": {"x": 1000}},
             {"file": "calibration/microbench/b.cu", "configs": [{}], "argument_elements": {}}]
    sweep = session.config_seconds(session.ASSUMED_WORKLOAD_LAUNCH_S, session.CALIBRATION_METHOD)
    assert session.calibration_seconds(plans, session.CALIBRATION_METHOD) == pytest.approx(
        2 * session.PROCESS_START_S + 1000 * (session.ELEMENT_S + session.REFERENCE_ELEMENT_S)
        + 2 * session.CALIBRATION_METHOD.idle_s + 3 * sweep)


def test_every_energy_window_is_at_least_a_second() -> None:
    assert session.SPACE_METHOD.window_s >= 1.0 and session.CALIBRATION_METHOD.window_s >= 1.0
    assert session.SAMPLE == 150
    assert {name for part in session.PARTS.values() for name in part} == {
        "calibration", "convolution", "pnpoly", "gemm"}


NEVER = re.compile(r"nvmlDeviceSet|nvmlDeviceReset|nvidia-smi\s+(?!--query-gpu)[-\w]")


def test_nothing_in_the_measuring_code_changes_a_device_setting() -> None:
    files = [*sorted((REPOSITORY / "calibration").glob("*.sh")),
             *sorted((REPOSITORY / "server" / "flipflop" / "calibration").glob("*.py")),
             *(REPOSITORY / "server" / "flipflop" / "commands" / name
               for name in ("measure.py", "measure_space.py", "calibrate.py"))]
    assert len(files) > 10
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not NEVER.search(line), f"{path}:{number}: {line.strip()}"


@pytest.mark.slow
def test_part_b_runs_end_to_end_on_a_stand_in_gpu_machine(inputs: Path, tmp_path: Path) -> None:
    log = tmp_path / "nvidia-smi.log"
    env = {"INPUTS": str(inputs), "TMPDIR": str(tmp_path),
           "PATH": f"{FAKE_MACHINE}{os.pathsep}{os.environ['PATH']}",
           "PYTHON": str(FAKE_MACHINE / "python"), "REAL_PYTHON": sys.executable,
           "FAKE_NVIDIA_SMI_LOG": str(log)}
    # A first call measures one configuration of each space (as if it had been cut off)...
    first = tmp_path / "first"
    done = _script("--part", "B", "--sample", "1", env={**env, "OUT": str(first)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    # ...and the next continues what it brought back.
    out = tmp_path / "out"
    done = _script("--part", "B", "--sample", "2", "--resume", str(first),
                   env={**env, "OUT": str(out)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.count("1 measured, 1 already there") == 2
    files = sorted(p.name for p in out.iterdir())
    assert files == ["RUN.txt", "gemm.json", "pnpoly.json", "session.json", "session.log"]
    run = (out / "RUN.txt").read_text()
    assert "command: calibration/h200_session.sh --part B --sample 2 --resume" in run
    assert "device: NVIDIA H200" in run and "driver: 580.159.04" in run
    assert re.search(r"commit: [0-9a-f]{40}", run)
    record = json.loads((out / "session.json").read_text())
    assert [(s["step"], s["exit"]) for s in record["steps"]] == [("pnpoly", 0), ("gemm", 0)]
    for name, kernel in (("pnpoly", "cn_pnpoly"), ("gemm", "Xgemm")):
        space = read_kernel_tuner_cache(out / f"{name}.json")
        assert space.device_name == "NVIDIA H200" and space.kernel_name == kernel
        assert len(space.entries) == 2 and space.measured == ("time", "power", "energy")
        env_record = record["spaces"][name]
        assert env_record["method"]["window_s"] == 1.0
        assert (env_record["measured"], env_record["already_in_cache"]) == (1, 1)
        # The stand-in runs no kernel: the check says so rather than passing.
        assert env_record["incorrect"] == 1
        first_keys = {e.key for e in read_kernel_tuner_cache(first / f"{name}.json").entries}
        assert first_keys < {e.key for e in space.entries}  # the nested sample
    assert "== part B done" in (out / "session.log").read_text()
    calls = log.read_text().splitlines()
    assert calls and all(call.startswith("--query-gpu=") for call in calls)
