"""`flipflop measure`: argument handling, header parsing, the clear no-GPU error, and (behind the
`gpu` marker) a real measurement."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from flipflop.calibration.records import read_measurement
from flipflop.calibration.spec import SpecError, evaluate, parse_headers
from flipflop.commands import measure

REPOSITORY = Path(__file__).resolve().parents[1]
VECTOR_ADD = REPOSITORY / "calibration" / "workloads" / "vector_add.cu"


def _nvml_present() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


GPU_PRESENT = shutil.which("nvidia-smi") is not None or _nvml_present()
needs_gpu = pytest.mark.skipif(not GPU_PRESENT, reason="no NVIDIA GPU: nvidia-smi/NVML absent")


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    measure.register(parser.add_subparsers())
    return parser.parse_args(["measure", *argv])


def test_request_takes_header_and_overrides() -> None:
    args = _args([str(VECTOR_ADD), "--kernel", "vector_add", "--param", "n=1024",
                  "--blocks", "64,128x2", "--threads", "1024", "--window", "2"])
    request = measure.build_request(args, ["flipflop", "measure"])
    assert request.spec.kernel == "vector_add"
    assert request.params == {"n": 1024.0}
    assert request.blocks == ((64, 1, 1), (128, 2, 1))
    assert request.threads == (1024, 1, 1)
    assert request.window_s == 2.0
    assert request.spec.check is not None and request.spec.check.outputs == ("c",)


def test_grid_and_threads_are_exclusive() -> None:
    with pytest.raises(SystemExit) as exit_info:
        _args([str(VECTOR_ADD), "--kernel", "vector_add", "--grid", "4", "--threads", "8"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--kernel", "nope"], "no flipflop-measure header for kernel 'nope'"),
        ([], "--kernel NAME is required"),
        (["--kernel", "vector_add", "--window", "0"], "--window"),
    ],
)
def test_bad_input_is_exit_1_with_a_located_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert measure.run(_args([str(VECTOR_ADD), *argv])) == 1
    err = capsys.readouterr().err
    assert message in err
    assert f"{VECTOR_ADD}:" in err and "error:" in err


def test_missing_file_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert measure.run(_args([str(tmp_path / "absent.cu"), "--kernel", "k"])) == 1
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.skipif(GPU_PRESENT, reason="a GPU is present, so the no-GPU error cannot occur")
def test_without_a_gpu_the_error_is_clear_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.json"
    args = _args([str(VECTOR_ADD), "--kernel", "vector_add", "--out", str(out)])
    assert measure.run(args) == 3
    err = capsys.readouterr().err
    assert err.startswith("flipflop measure: error: no GPU to measure on:")
    assert "Traceback" not in err
    assert not out.exists()


def test_header_errors_name_the_line() -> None:
    source = "// a kernel\n\n/* flipflop-measure\n{\"kernel\": \"k\", \"args\": [}\n*/\n"
    with pytest.raises(SpecError, match=r"^x\.cu:3:1: flipflop-measure header is not valid"):
        parse_headers(source, "x.cu")
    bad_type = '/* flipflop-measure {"kernel": "k", "args": [{"name": "a", "type": "f8*"}]} */'
    with pytest.raises(SpecError, match="unknown type 'f8\\*'"):
        parse_headers(bad_type, "x.cu")


def test_expressions() -> None:
    names = {"n": 1000.0, "block_x": 256.0}
    assert evaluate("ceil(n / block_x) * 2", names) == 8.0
    assert evaluate("min(n, 4) ** 2 - -1", names) == 17.0
    for bad in ("__import__('os')", "n.real", "m + 1", "n / 0"):
        with pytest.raises(SpecError):
            evaluate(bad, names)


@pytest.mark.gpu
@needs_gpu
def test_measures_vector_add_on_the_local_gpu(tmp_path: Path) -> None:
    out = tmp_path / "vector_add.json"
    args = _args([str(VECTOR_ADD), "--kernel", "vector_add", "--param", "n=16777216",
                  "--blocks", "128,1024", "--out", str(out), "--idle", "1"])
    assert measure.run(args) == 0
    data = read_measurement(out)
    assert [c.block for c in data.configs] == [(128, 1, 1), (1024, 1, 1)]
    for config in data.configs:
        assert config.correct is True
        assert config.time_s > 0 and config.window_s >= 1.0
        assert config.energy_j > 0 and config.power_w > data.idle_power_w * 0.5
    assert data.device.name and data.commit
    assert out.with_suffix(".csv").read_text().startswith("kernel,device,block_x")


class _RecordedNvml:
    """Replays NVML readings recorded as plain numbers: the one system edge of the observers."""

    def __init__(self) -> None:
        self._energy = iter([1_000_000, 1_250_500])  # mJ before and after the window
        self._power = iter([250.0, None, 260.0])

    def energy_mj(self) -> int:
        return next(self._energy)

    def instant_power_w(self) -> float | None:
        return next(self._power)


def test_observers_turn_counter_readings_into_energy_and_samples() -> None:
    from flipflop.calibration.observers import EnergyCounterObserver, InstantPowerObserver

    source = _RecordedNvml()
    energy, power = EnergyCounterObserver(source), InstantPowerObserver(source)
    for observer in (energy, power):
        observer.before_start()
        observer.after_start()
    for _ in range(3):
        power.during()
    for observer in (energy, power):
        observer.after_finish()
    assert energy.get_results()["energy_j"] == pytest.approx(250.5)
    assert power.get_results()["power_samples_w"] == (250.0, 260.0)  # unsupported read skipped
