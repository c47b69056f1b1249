"""Search spaces of compile-time tunables through `flipflop analyze`, with real compilers."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flipflop.findings import findings
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.source import apply_edits
from flipflop.space.errors import SpaceError
from flipflop.space.request import SpaceOptions

CORPUS = Path(__file__).parent / "corpus"
SCALE = Path(__file__).parent / "tunable" / "tunable_scale.cu"
# A small corner of the annotated space keeps the compiles few.
SMALL = ("block_size_x=64,256,1024", "tile_size=1,4")


def _cli(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", *argv],
        capture_output=True, text=True, timeout=600,
        env={"FLIPFLOP_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )


def _analyze_json(tmp_path: Path, *argv: str) -> dict[str, Any]:
    done = _cli("analyze", *argv, "--format", "json", cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_every_configuration_gets_kernel_tuners_block_and_grid(tmp_path: Path) -> None:
    args = [str(SCALE), "--gpu", "rtx3090", "--tune", SMALL[0], "--tune", SMALL[1],
            "--problem-size", "1000000", "--grid-div-x", "block_size_x,tile_size"]
    (kernel,) = _analyze_json(tmp_path, *args)["kernels"]
    configs = kernel["configs"]
    assert len(configs) == 6
    for config in configs:
        params = config["params"]
        assert config["block"] == [params["block_size_x"], 1, 1]
    space = kernel["space"]
    assert space["configurations"] == 6 and space["evaluated"] == 6
    assert space["variants"] == 6 and space["cached_variants"] == 0
    assert space["grid_div"][0] == ["block_size_x", "tile_size"]
    # The current configuration is the source's #ifndef defaults (256, 1).
    assert space["current"] == {"block_size_x": 256, "tile_size": 1}
    assert space["current_from"] == "source defaults"
    assert kernel["recommendation"]["params"].keys() == {"block_size_x", "tile_size"}
    assert 0.0 <= space["search_space_reduction"] < 1.0
    # The grid of each configuration: ceil(problem / (block_size_x * tile_size)).
    by_params = {(c["params"]["block_size_x"], c["params"]["tile_size"]): c for c in configs}
    assert set(by_params) == {(b, t) for b in (64, 256, 1024) for t in (1, 4)}
    again = _analyze_json(tmp_path, *args)["kernels"][0]["space"]
    assert again["cached_variants"] == again["variants"] == 6


def test_grids_follow_the_problem_size(tmp_path: Path) -> None:
    options = AnalysisOptions(
        gpu="rtx3090",
        space=SpaceOptions(tune=SMALL, problem_size=("1000000",),
                           grid_div=(("block_size_x", "tile_size"), None, None),
                           in_process=True),
    )
    result = analyze(SCALE, None, options)
    (kernel,) = result.kernels
    for prediction in kernel.primary.advice.predictions:
        values = dict(prediction.params)
        per_block = int(values["block_size_x"]) * int(values["tile_size"])
        assert prediction.grid == (math.ceil(1_000_000 / per_block), 1, 1)


def test_restrictions_and_sampling(tmp_path: Path) -> None:
    base = [str(SCALE), "--gpu", "rtx3090", "--tune", "block_size_x=32..1024:32",
            "--tune", "tile_size=1,2,4,8"]
    restricted = _analyze_json(
        tmp_path, *base, "--restrict", "block_size_x * tile_size <= 512", "--sample", "5",
        "--seed", "3",
    )["kernels"][0]
    space = restricted["space"]
    assert space["configurations"] == sum(
        1 for b in range(32, 1025, 32) for t in (1, 2, 4, 8) if b * t <= 512
    )
    # Five drawn, plus the current configuration, which is always evaluated.
    assert space["evaluated"] == 6 and space["sample"] == 5
    for config in restricted["configs"]:
        assert config["params"]["block_size_x"] * config["params"]["tile_size"] <= 512
    same = _analyze_json(
        tmp_path, *base, "--restrict", "block_size_x * tile_size <= 512", "--sample", "5",
        "--seed", "3",
    )["kernels"][0]
    assert [c["params"] for c in same["configs"]] == [c["params"] for c in restricted["configs"]]


def test_the_annotation_declares_the_space(tmp_path: Path) -> None:
    done = _cli("analyze", str(SCALE), "--gpu", "rtx3090", "--sample", "3",
                cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert "search space: 128 configurations of 2 tunables" in done.stdout
    assert "block_size_x tile_size (block)" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tune", "block_size_x=32,64", "--restrict", "tile_sz < 4"], "tile_sz"),
        (["--tune", "block_size_x=32,64", "--restrict", "__import__('os')"], "error"),
        (["--tune", "block_size_x=32,64", "--problem-size", "1,2,3,4"], "dimensions"),
        (["--tune", "block_size_x="], "block_size_x"),
        (["--tune", "block_size_x=64", "--grid-div-x", "tiles"], "tiles"),
    ],
)
def test_bad_spaces_are_clear_errors(tmp_path: Path, argv: list[str], message: str) -> None:
    done = _cli("analyze", str(SCALE), "--gpu", "rtx3090", *argv, cache=tmp_path / "cache")
    assert done.returncode in (1, 2), done.stdout
    assert message in done.stderr and "Traceback" not in done.stderr
    if done.returncode == 1:
        assert done.stderr.startswith(f"{SCALE}: error: ")


def test_a_tunable_the_source_never_uses_is_noted(tmp_path: Path) -> None:
    done = _cli("analyze", str(SCALE), "--gpu", "rtx3090", "--tune", "block_size_x=64,128",
                "--tune", "unrolling=1,2", "--grid-div-x", "block_size_x",
                cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert "unrolling never appear" in done.stderr + done.stdout


def test_a_configuration_that_does_not_compile_is_excluded(tmp_path: Path) -> None:
    source = tmp_path / "fragile.cu"
    source.write_text(SCALE.read_text().replace(
        "int first =", "static_assert(tile_size != 2, \"no pairs\");\n    int first ="
    ))
    (kernel,) = _analyze_json(tmp_path, str(source), "--gpu", "rtx3090", "--tune",
                              "block_size_x=64", "--tune", "tile_size=1,2,4")["kernels"]
    assert {c["params"]["tile_size"] for c in kernel["configs"]} == {1, 4}
    (excluded,) = kernel["excluded"]
    assert excluded["params"]["tile_size"] == 2 and "no pairs" in excluded["reason"]


def test_the_quick_fix_rewrites_the_defaults(tmp_path: Path) -> None:
    options = AnalysisOptions(gpu="rtx3090", space=SpaceOptions(tune=SMALL, in_process=True))
    result = analyze(SCALE, None, options)
    advice = result.kernels[0].primary.advice
    found = [f for f in findings(result, min_saving=0.0) if f.code == "FF013"]
    recommended = dict(advice.recommendation.prediction.params)
    if recommended == {"block_size_x": 256, "tile_size": 1}:
        assert not found  # the defaults are already the recommendation
        return
    (finding,) = found
    (fix,) = finding.fixes
    fixed = apply_edits(SCALE.read_text(), fix.edits)
    for name, value in recommended.items():
        if value != {"block_size_x": 256, "tile_size": 1}[name]:
            assert f"#define {name} {value}\n" in fixed


def test_a_space_needs_one_kernel(tmp_path: Path) -> None:
    source = tmp_path / "two.cu"
    source.write_text(SCALE.read_text().replace("// flipflop: tune", "// tune")
                      + '\nextern "C" __global__ void other(float* x) { x[0] = 1.0f; }\n')
    with pytest.raises(SpaceError, match="give --kernel"):
        analyze(source, None, AnalysisOptions(space=SpaceOptions(tune=("block_size_x=64",))))


def test_the_shortlist_for_kernel_tuner_loads_back(tmp_path: Path) -> None:
    from flipflop.formats.emit import read_kernel_tuner_input

    shortlist = tmp_path / "shortlist.json"
    report = _analyze_json(tmp_path, str(SCALE), "--gpu", "rtx3090", "--tune", SMALL[0],
                           "--tune", SMALL[1], "--shortlist", "0.5",
                           # On the point predictions: the recommendation is the lowest
                           # predicted energy, not the current one kept within the error.
                           "--confidence", "off",
                           "--emit-kernel-tuner", str(shortlist))
    kernel = report["kernels"][0]
    # Half of the six configurations: the three predicted fastest, the recommendation among.
    kept = [entry["params"] for entry in kernel["search"]["shortlist"]]
    by_time = sorted(kernel["configs"], key=lambda c: (c["time_s"], c["energy_j"]))
    assert kept == [c["params"] for c in by_time[:3]]
    assert kernel["recommendation"]["params"] in kept
    assert kernel["space"]["shortlist_size"] == 3
    assert kernel["space"]["search_space_reduction"] == pytest.approx(0.5)
    loaded = read_kernel_tuner_input(shortlist)
    assert [dict(c) for c in loaded.configurations] == kept
    assert loaded.kernel_name == "tiled_scale"
    assert loaded.launch.grid_div_x is not None


def test_a_shortlist_needs_a_space(tmp_path: Path) -> None:
    done = _cli("analyze", str(CORPUS / "vector_add.cu"), "--emit-kernel-tuner",
                str(tmp_path / "x.json"), cache=tmp_path / "cache")
    assert done.returncode == 1
    assert "needs a search space" in done.stderr and not (tmp_path / "x.json").exists()


def test_a_template_kernel_is_tuned_through_its_arguments(tmp_path: Path) -> None:
    # SGEMM_CUDA style: tile sizes are template arguments; the host function's launch with
    # local constants (64, 64, 8, 8, block (64 * 64) / 8) is the configuration as written.
    source = CORPUS / "templated_sgemm.cu"
    (kernel,) = _analyze_json(
        tmp_path, str(source), "--gpu", "rtx3090", "--kernel", "sgemm1D<bm, bn, 8, tm>",
        "--tune", "bm=32,64", "--tune", "bn=64", "--tune", "tm=8",
        "--tune", "block_size_x=256,512", "--restrict", "block_size_x == bm * bn // tm",
        "--problem-size", "4096,4096", "--grid-div-x", "bn", "--grid-div-y", "bm",
        "--param", "M=4096", "--param", "N=4096", "--param", "K=4096",
    )["kernels"]
    space = kernel["space"]
    assert space["current"] == {"bm": 64, "bn": 64, "tm": 8, "block_size_x": 512}
    assert space["current_from"] == "launch site"
    # Host code (the launch) needs nvcc: NVRTC compiles device code only.
    assert space["compiler"] == "nvcc" and space["unused_tunables"] == []
    by_bm = {c["params"]["bm"]: c for c in kernel["configs"]}
    assert set(by_bm) == {32, 64}
    # Each configuration is its own instantiation: the smaller tile holds less shared memory.
    assert by_bm[32]["block"] == [256, 1, 1] and by_bm[64]["block"] == [512, 1, 1]
    assert kernel["display_name"].startswith("void sgemm1D<")


def test_a_kernel_defined_in_an_included_file_takes_parameters_by_name(tmp_path: Path) -> None:
    """CLBlast keeps its kernels in included `.opencl` parts: `--param` still names them."""
    body = "".join(line for line in SCALE.read_text().splitlines(keepends=True)
                   if "flipflop:" not in line)  # fmt: skip
    (tmp_path / "body.h").write_text(body)
    main = tmp_path / "main.cu"
    main.write_text('#include "body.h"\n')
    space = ("--kernel", "tiled_scale", "--gpu", "rtx3090", "--tune", "block_size_x=256",
             "--problem-size", "16777216", "--grid-div-x", "block_size_x")  # fmt: skip
    half = _analyze_json(tmp_path, str(main), *space, "--param", "n=8388608", "--param", "m=3")
    every = _analyze_json(tmp_path, str(main), *space, "--param", "n=16777216")
    # Half the threads stop at the bounds test: the predictions differ only if `n` was read
    # (an unmatched name used to be dropped silently, leaving the bounds test a guess).
    times = [report["kernels"][0]["configs"][0]["time_s"] for report in (half, every)]
    assert abs(times[0] - times[1]) > 0.1 * times[1]
    assert half["notes"] == [
        "--param m: no such parameter of tiled_scale (its parameters: out, in, factor, n); ignored"
    ]
    assert every["notes"] == []
