"""The command-line entry point itself."""

import subprocess
import sys

from flipflop import __version__


def test_version_is_printed() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.strip() == f"flipflop {__version__}"
