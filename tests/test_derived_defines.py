"""Values computed from the tunables: derived defines (`--define NAME=EXPR`, `// flipflop: define`,
T1's `Defines`), problem sizes that depend on the configuration and grid divisors that are any
tunable, all through the safe expression grammar; on the real wmma_gemm and expdist spaces."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache
from flipflop.formats.t1 import read_t1
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.space.errors import ExpressionError, SpaceError
from flipflop.space.kernel_tuner import kernel_tuner_launch, parse_define
from flipflop.space.request import SpaceOptions
from flipflop.space.tunables import Configuration

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "calibration" / "data" / "measured"
DERIVED = Path(__file__).parent / "tunable" / "derived_defines.cu"


def _cli(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", *argv], capture_output=True, text=True,
        timeout=600, env={"FLIPFLOP_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )


def test_a_define_is_written_after_the_tunables_with_its_value() -> None:
    launch = kernel_tuner_launch((4096, 4096, 1), ["N_PER_BLOCK"], ["M_PER_BLOCK"], [1],
                                 defines=["N_PER_WARP=N_PER_BLOCK // block_size_y",
                                          ("BATCH_SIZE", 1)])
    config = Configuration.of({"block_size_x": 32, "block_size_y": 2, "block_size_z": 4,
                               "M_PER_BLOCK": 64, "N_PER_BLOCK": 128})
    defines = launch.defines(config)
    names = [name for name, _ in defines]
    assert dict(defines)["N_PER_WARP"] == "64" and dict(defines)["BATCH_SIZE"] == "1"
    assert names.index("N_PER_BLOCK") < names.index("N_PER_WARP") < names.index("kernel_tuner")
    # The grid divides by any tunable: x by N_PER_BLOCK, y by M_PER_BLOCK, z by 1.
    assert launch.grid(config) == (32, 64, 1)
    assert "#define N_PER_WARP 64\n" in launch.prepare_source(config, "")


def test_the_wmma_gemm_defines_give_what_the_cache_recorded() -> None:
    # The tuning script records N_PER_WARP and M_PER_WARP as metrics of every entry.
    t1 = read_t1(MEASURED / "wmma_gemm" / "T1.json")
    measured = read_kernel_tuner_cache(MEASURED / "wmma_gemm" / "RTX_4000_Ada.json.gz")
    checked = 0
    for entry in measured.succeeded:
        defines = dict(t1.launch.defines(entry.config))
        metrics = dict(entry.metrics)
        assert int(defines["N_PER_WARP"]) == metrics["N_PER_WARP"]
        assert int(defines["M_PER_WARP"]) == metrics["M_PER_WARP"]
        assert t1.launch.grid(entry.config) == (4096 // int(entry.config["N_PER_BLOCK"]),
                                                4096 // int(entry.config["M_PER_BLOCK"]), 1)
        checked += 1
    assert checked == 4690


def test_the_expdist_problem_size_depends_on_the_configuration() -> None:
    t1 = read_t1(MEASURED / "expdist" / "T1.json")
    measured = read_kernel_tuner_cache(MEASURED / "expdist" / "RTX_A4000.json.gz")
    seen = set()
    for entry in measured.succeeded:
        p = entry.config
        # tune_expdist.py: lambda p: (size, size if use_column == 0 else
        # n_y_blocks * block_size_y * tile_size_y), grid_div_y = block_size_y, tile_size_y.
        rows = 32768 if p["use_column"] == 0 else \
            int(p["n_y_blocks"]) * int(p["block_size_y"]) * int(p["tile_size_y"])
        assert t1.launch.problem(p) == (32768, rows, 1)
        grid = t1.launch.grid(p)
        assert grid == (math.ceil(32768 / (int(p["block_size_x"]) * int(p["tile_size_x"]))),
                        math.ceil(rows / (int(p["block_size_y"]) * int(p["tile_size_y"]))), 1)
        seen.add(p["use_column"])
    assert seen == {0, 1}


@pytest.mark.parametrize(("define", "message", "column"), [
    ("N_PER_WARP=N_PER_BLOK // block_size_y", "unknown parameter 'N_PER_BLOK'", 1),
    ("N_PER_WARP=N_PER_BLOCK // blok_size_y", "unknown parameter 'blok_size_y'", 16),
])
def test_a_define_naming_an_unknown_tunable_is_an_error_at_its_column(
        define: str, message: str, column: int) -> None:
    launch = kernel_tuner_launch(4096, defines=[define])
    with pytest.raises(ExpressionError) as caught:
        launch.check(["N_PER_BLOCK", "block_size_y"])
    assert message in caught.value.reason and caught.value.column == column
    assert caught.value.reason.startswith("define N_PER_WARP: ")


def test_bad_defines_are_refused() -> None:
    with pytest.raises(SpaceError, match="expected NAME=EXPRESSION"):
        parse_define("N_PER_WARP")
    with pytest.raises(SpaceError, match="is not an identifier"):
        parse_define("2x=4")
    with pytest.raises(ExpressionError, match="define X: "):
        parse_define("X=import os")
    with pytest.raises(SpaceError, match="block_size_x is a tunable"):
        kernel_tuner_launch(64, defines=["block_size_x=32"]).check(["block_size_x"])


def test_an_annotated_define_compiles_every_configuration() -> None:
    result = analyze(DERIVED, None, AnalysisOptions(
        gpu="rtx-a4000", space=SpaceOptions(in_process=True, use_cache=False)))
    (kernel,) = result.kernels
    launch = kernel.primary
    assert launch.space is not None
    assert len(launch.advice.predictions) == 4 and not launch.advice.excluded
    per_thread = {dict(launch.space.launch.defines(c))["ITEMS_PER_THREAD"]
                  for c in launch.space.space.configurations}
    assert per_thread == {"4", "8", "16"}


def test_a_define_given_on_the_command_line_replaces_the_annotated_one(tmp_path: Path) -> None:
    done = _cli("analyze", str(DERIVED), "--gpu", "rtx-a4000", "--define",
                "ITEMS_PER_THREAD=2", "--format", "json", cache=tmp_path)
    assert done.returncode == 0, done.stderr
    done = _cli("analyze", str(DERIVED), "--gpu", "rtx-a4000", "--define",
                "ITEMS_PER_THREAD=items_per_blok // block_size_x", cache=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{DERIVED}: error: define ITEMS_PER_THREAD: unknown "
                                  "parameter 'items_per_blok'")


def test_an_annotated_define_naming_an_unknown_tunable_points_at_it(tmp_path: Path) -> None:
    text = DERIVED.read_text().replace("items_per_block//block_size_x",
                                       "items_per_block//block_size_q")
    source = tmp_path / "bad.cu"
    source.write_text(text)
    done = _cli("analyze", str(source), "--gpu", "rtx-a4000", cache=tmp_path / "cache")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = text.splitlines()
    line = lines.index(next(entry for entry in lines if "block_size_q" in entry))
    column = text.splitlines()[line].index("block_size_q") + 1
    assert done.stderr.startswith(f"{source}:{line + 1}:{column}: error: define "
                                  "ITEMS_PER_THREAD: unknown parameter 'block_size_q'")


def test_a_define_that_divides_by_zero_excludes_that_configuration() -> None:
    space = SpaceOptions(tune=("block_size_x=64,128", "items_per_block=512,1024", "skip=0,1"),
                         defines=("ITEMS_PER_THREAD=items_per_block // block_size_x // skip",),
                         problem_size=("1048576",), grid_div=(("items_per_block",), None, None),
                         in_process=True, use_cache=False)
    result = analyze(DERIVED, None, AnalysisOptions(gpu="rtx-a4000", space=space))
    advice = result.kernels[0].primary.advice
    assert len(advice.predictions) == 4
    assert len(advice.excluded) == 4
    assert all("division by zero" in e.reason or "divi" in e.reason for e in advice.excluded)
