"""The server's settings model and its caches, on real inputs (real nvcc, real PTX)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from flipflop.launch import Dim3
from flipflop.lsp.session import (
    AssemblyCache,
    Outcome,
    OutcomeCache,
    ToolchainCache,
    content_key,
    run_analysis,
)
from flipflop.lsp.settings import Settings, parse_settings
from flipflop.toolchain import ToolchainError, ToolTimeout, compile_to_ptx, find_toolchain
from lsp_fixtures.harness import HEADS, REPO

needs_nvcc = pytest.mark.usefixtures("cuda_toolchain")
KNOWN = frozenset({"rtx3070", "h100-sxm"})


def test_defaults_without_settings() -> None:
    settings, problems = parse_settings(None)
    assert settings == Settings()
    assert problems == ()


def test_good_values_are_taken() -> None:
    settings, problems = parse_settings(
        {
            "gpu": "h100-sxm",
            "compileTimeout": 5,
            "extraArgs": ["-DFAST", "-std=c++17"],
            "minSaving": 0.1,
            "codeLens": False,
            "debounceMs": 300,
            "problemSize": {"threads": [4096, 64]},
        },
        known_gpus=KNOWN,
    )
    assert problems == ()
    assert settings.gpu == "h100-sxm"
    assert settings.compileTimeout == 5.0
    assert settings.extraArgs == ("-DFAST", "-std=c++17")
    assert settings.codeLens is False
    assert settings.debounceMs == 300
    threads: Dim3 = (4096, 64, 1)
    options = settings.analysis_options()
    assert options.threads == threads and options.grid is None
    assert options.gpu == "h100-sxm" and options.compile_timeout_s == 5.0


def test_each_bad_value_is_named_and_replaced_by_its_default() -> None:
    base = Settings(slack=0.2)
    settings, problems = parse_settings(
        {
            "gpu": "gtx-9999",
            "slack": -1,
            "maxFileSize": "big",
            "extraArgs": "-O3",
            "powerLimits": 1,
            "problemSize": {"grid": [0]},
            "unheardOf": True,
        },
        base,
        KNOWN,
    )
    keys = sorted(problem.split(":")[0] for problem in problems)
    assert keys == sorted(
        f"flipflop.{k}"
        for k in ("gpu", "slack", "maxFileSize", "extraArgs", "powerLimits", "problemSize")
    )
    assert settings == base  # nothing bad got through; unknown keys are ignored
    assert any("gtx-9999" in p and "h100-sxm, rtx3070" in p for p in problems)


def test_the_confidence_level_is_one_of_the_measured_levels_or_off() -> None:
    assert Settings().analysis_options().confidence == 0.8
    settings, problems = parse_settings({"confidence": 0.95})
    assert problems == () and settings.analysis_options().confidence == 0.95
    off, problems = parse_settings({"confidence": "off"})
    assert problems == () and off.analysis_options().confidence is None
    kept, problems = parse_settings({"confidence": 0.7})
    assert kept.confidence == 0.8
    assert problems == ('flipflop.confidence: expected one of 0.5, 0.8, 0.9, 0.95 or "off"; '
                        "using 0.8",)


def test_settings_that_are_not_an_object() -> None:
    settings, problems = parse_settings(["gpu", "rtx3070"])
    assert settings == Settings()
    assert problems == ("the flipflop settings must be an object, not list",)


def test_cache_key_follows_text_and_settings(tmp_path: Path) -> None:
    path = tmp_path / "a.cu"
    base = content_key(path, "x", Settings())
    assert content_key(path, "x", Settings()) == base
    assert content_key(path, "y", Settings()) != base
    assert content_key(path, "x", Settings(gpu="h100-sxm")) != base
    assert content_key(tmp_path / "b.cu", "x", Settings()) != base


def test_outcome_cache_keeps_only_repeatable_outcomes() -> None:
    cache = OutcomeCache(capacity=2)
    cache.put(("failed",), Outcome(None, (), failure="nvcc not found"))
    cache.put(("crashed",), Outcome(None, (), log="Traceback ..."))
    cache.put(("cancelled",), Outcome(None, (), cancelled=True))
    assert cache.get(("failed",)) is None
    assert cache.get(("crashed",)) is None
    assert cache.get(("cancelled",)) is None
    for name in ("a", "b", "c"):
        cache.put((name,), Outcome(None, ()))
    assert cache.get(("a",)) is None  # the oldest went first
    assert cache.get(("c",)) is not None


@needs_nvcc
def test_assembly_cache_reuses_ptxas_when_only_line_info_moved(tmp_path: Path) -> None:
    tools = find_toolchain()
    source = tmp_path / "heads.cu"
    text = HEADS.read_text()
    first = compile_to_ptx(source, text, tools, "sm_86")
    moved = compile_to_ptx(source, "// a new first line\n" + text, tools, "sm_86")
    changed = compile_to_ptx(source, text.replace("* scale[head]", "+ scale[head]"), tools, "sm_86")
    assert first.ptx != moved.ptx  # the .loc lines differ ...
    cache = AssemblyCache()
    assembled = cache(first.ptx, "sm_86", tools, 60.0)
    assert assembled.ok and assembled.resources
    assert cache(moved.ptx, "sm_86", tools, 60.0) is assembled  # ... the instructions do not
    other = cache(changed.ptx, "sm_86", tools, 60.0)
    assert other is not assembled and other.ok
    assert cache(first.ptx, "sm_75", tools, 60.0) is not assembled


def test_toolchain_cache_names_a_missing_nvcc(tmp_path: Path) -> None:
    missing = tmp_path / "nvcc"
    with pytest.raises(ToolchainError, match=str(missing)):
        ToolchainCache().find(str(missing), 10.0)


def test_toolchain_cache_bounds_a_hanging_nvcc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    child_pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FLIPFLOP_TEST_CHILD_PID", str(child_pid_file))
    hanging = REPO / "tests" / "fake_tools" / "hanging_nvcc"
    try:
        with pytest.raises(ToolTimeout, match="did not answer within 1 s"):
            ToolchainCache().find(str(hanging), 1.0)
    finally:
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            os.killpg(os.getpgid(int(child_pid_file.read_text())), signal.SIGKILL)


@needs_nvcc
def test_run_analysis_turns_every_failure_into_a_finding(tmp_path: Path) -> None:
    missing = run_analysis(tmp_path / "a.cu", HEADS.read_text(), Settings(nvccPath="/no/nvcc"))
    assert [f.code for f in missing.findings] == ["FF010"]
    assert missing.failure is not None and "/no/nvcc" in missing.failure

    unknown_gpu = run_analysis(tmp_path / "a.cu", HEADS.read_text(), Settings(gpu="gtx-9999"))
    assert [f.code for f in unknown_gpu.findings] == ["FF010"]
    assert unknown_gpu.failure is not None and "gtx-9999" in unknown_gpu.failure

    found = run_analysis(tmp_path / "a.cu", HEADS.read_text(), Settings())
    assert found.failure is None and found.log is None
    assert found.result is not None
    assert "FF001" in [f.code for f in found.findings]


def test_a_pre_turing_gpu_setting_says_why_it_is_refused() -> None:
    settings, problems = parse_settings({"gpu": "v100"}, Settings(), KNOWN)
    assert settings.gpu == Settings().gpu
    (problem,) = problems
    assert "sm_70" in problem and "nvcc 13 cannot compile" in problem
