"""`flipflop ptx` run as a user runs it: a separate process, real files, odd paths, bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).parent / "ptx_samples"


def flipflop_ptx(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "ptx", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_clean_failure(result: subprocess.CompletedProcess[str], code: int = 1) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_table_lists_every_function() -> None:
    result = flipflop_ptx(SAMPLES / "statement_forms.ptx")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "PTX 8.0, target sm_80, 64-bit addresses, 4 functions" in out
    assert "forms  (entry, visible, line" in out
    assert "vprintf  (func, extern, prototype only" in out
    assert "directives    maxntid 256,1,1; minnctapersm 2; maxnreg 64; pragmas" in out
    assert "blocks        5   instructions" in out
    assert "opcodes       mov.u32 8, mov.u64 3, add.s64 2" in out


def test_json_summary() -> None:
    result = flipflop_ptx(SAMPLES / "hopper_sm90a.ptx", "--format", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["target"] == ["sm_90a"]
    (function,) = summary["functions"]
    assert function["name"] == "hopper_tile" and function["kind"] == "entry"
    assert function["directives"] == {
        "maxntid": [384, 1, 1],
        "reqnctapercluster": [2, 1, 1],
        "explicitcluster": True,
    }
    assert function["params"][0] == {
        "name": "hopper_tile_param_0",
        "space": "param",
        "type": "b8",
        "array_dims": [128],
        "align": 64,
        "size_bytes": 128,
    }
    assert function["block_count"] == len(function["blocks"]) == 5
    assert (
        sum(block["instructions"] for block in function["blocks"]) == function["instruction_count"]
    )
    assert sum(function["opcodes"].values()) == function["instruction_count"]
    assert function["opcodes"]["mov.f32"] == 4
    assert summary["unknown_statements"] == []


def test_newer_isa_statements_are_warnings() -> None:
    path = SAMPLES / "newer_isa.ptx"
    result = flipflop_ptx(path, "--format", "json")
    assert result.returncode == 0, result.stderr
    warnings = result.stderr.strip().splitlines()
    assert len(warnings) == 3
    assert warnings[1].startswith(f"{path}:19:2: warning: unknown instruction 'tcgen09.teleport")
    assert len(json.loads(result.stdout)["unknown_statements"]) == 3


def test_malformed_ptx_reports_file_line_column_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.ptx"
    path.write_text(
        ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n"
        "\tadd.s32 \t%r1, %r2 %r3;\n\tret;\n}\n",
        encoding="utf-8",
    )
    result = flipflop_ptx(path)
    assert_clean_failure(result)
    first, source, caret = result.stderr.splitlines()
    assert first.startswith(f"{path}:6:20: error: unexpected '%r3'")
    assert source == "    \tadd.s32 \t%r1, %r2 %r3;"
    assert caret == "    \t        \t         ^"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"  \n\t\n", "empty file"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00garbage", "binary data, not PTX text"),
        (b".version 8.0\n// caf\xe9\n", "not UTF-8 text"),
        (b"hello, world\n", "1:1: error: unexpected 'hello'"),
    ],
    ids=["empty", "blank", "binary", "latin-1", "plain-text"],
)
def test_input_that_is_not_ptx(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "input.ptx"
    path.write_bytes(content)
    result = flipflop_ptx(path)
    assert_clean_failure(result)
    assert result.stderr.startswith(f"{path}:")
    assert message in result.stderr


def test_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "large.ptx"
    shutil.copy(SAMPLES / "statement_forms.ptx", path)
    refused = flipflop_ptx(path, "--max-size", "1K")
    assert_clean_failure(refused)
    assert f"{path}:0:0: error: file is " in refused.stderr
    assert "over the 1.0 KiB limit (raise it with --max-size)" in refused.stderr
    assert flipflop_ptx(path, "--max-size", "64K").returncode == 0


def test_bad_size_option_is_a_usage_error() -> None:
    result = flipflop_ptx(SAMPLES / "statement_forms.ptx", "--max-size", "lots")
    assert_clean_failure(result, code=2)
    assert "not a size in bytes" in result.stderr


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = flipflop_ptx(tmp_path / "nowhere.ptx")
    assert_clean_failure(missing)
    assert f"{tmp_path / 'nowhere.ptx'}:0:0: error: cannot read: no such file" in missing.stderr
    directory = flipflop_ptx(tmp_path)
    assert_clean_failure(directory)
    assert "not a regular file" in directory.stderr


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.ptx"
    shutil.copy(SAMPLES / "statement_forms.ptx", path)
    path.chmod(0)
    try:
        if path.read_bytes():  # running as root: permissions do not apply
            pytest.skip("permissions are not enforced for this user (root)")
    except PermissionError:
        pass
    try:
        result = flipflop_ptx(path)
    finally:
        path.chmod(0o644)
    assert_clean_failure(result)
    assert "cannot read: Permission denied" in result.stderr


@pytest.mark.parametrize(
    "name",
    ["with space.ptx", "semi;colon $(echo no) `x`.ptx", 'quote\'s "and" star*.ptx', "-dash.ptx"],
)
def test_paths_with_spaces_and_shell_metacharacters(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    shutil.copy(SAMPLES / "blackwell_tcgen05.ptx", path)
    result = flipflop_ptx(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{path}: PTX 8.8, target sm_100a")
