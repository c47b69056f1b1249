"""The command-line entry point itself."""

import json
import subprocess
import sys
from pathlib import Path

from flipflop import __version__


def test_version_is_printed() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.strip() == f"flipflop {__version__}"


def test_a_tune_file_gives_the_tunables_and_an_unreadable_one_is_an_error(tmp_path: Path) -> None:
    source = Path(__file__).parent / "corpus" / "constraints" / "tuned_reduce_pow2.cu"
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"tune_params": {"block_size_x": [64, 128]}}))
    command = [sys.executable, "-m", "flipflop.cli", "analyze", str(source), "--format", "json"]
    done = subprocess.run([*command, "--tune-file", str(space)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    (kernel,) = json.loads(done.stdout)["kernels"]
    assert kernel["space"]["tunables"] == {"block_size_x": [64, 128]}
    missing = subprocess.run([*command, "--tune-file", str(tmp_path / "absent.json")],
                             capture_output=True, text=True, timeout=600, check=False)
    assert missing.returncode == 1
    assert f"{tmp_path / 'absent.json'}: no such file" in missing.stderr


def test_a_saving_within_the_model_error_keeps_the_launch_unless_asked(tmp_path: Path) -> None:
    source = Path(__file__).parent / "corpus" / "confidence" / "modest_saving.cu"
    command = [sys.executable, "-m", "flipflop.cli", "analyze", str(source), "--format", "json"]

    def recommendation(*extra: str) -> dict[str, object]:
        done = subprocess.run([*command, *extra], capture_output=True, text=True, timeout=600,
                              check=False)
        assert done.returncode == 0, done.stderr
        (kernel,) = json.loads(done.stdout)["kernels"]
        found: dict[str, object] = kernel["recommendation"]
        return found

    # At the default 80% the predicted saving is inside the model's error: the launch is kept.
    kept = recommendation()
    assert kept["block"] == [256, 1, 1]
    held = kept["held_back"]
    assert isinstance(held, str) and "within the model's error" in held
    assert kept["energy_saving_interval"] is None  # nothing changes, so no saving to bound
    # On the point predictions, and at 50% where the error is narrower, the change stands.
    for extra in (("--confidence", "off"), ("--confidence", "0.5")):
        changed = recommendation(*extra)
        assert changed["block"] != [256, 1, 1] and changed["held_back"] is None
        saving = changed["energy_saving_vs_current"]
        assert isinstance(saving, float) and saving > 0.2
    interval = recommendation("--confidence", "0.5")["energy_saving_interval"]
    assert isinstance(interval, dict) and interval["level"] == 0.5
    assert interval["low"] < interval["high"]
    assert recommendation("--confidence", "off")["energy_saving_interval"] is None
    bad = subprocess.run([*command, "--confidence", "0.7"], capture_output=True, text=True,
                         timeout=600, check=False)
    assert bad.returncode == 2 and "0.5, 0.8, 0.9, 0.95" in bad.stderr
