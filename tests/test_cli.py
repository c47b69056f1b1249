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
