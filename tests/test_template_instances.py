"""Kernel templates named the way Kernel Tuner names them (`tuned_matmul<float>`,
`scale_block<32>`): the instance is found with or without return type, parameters and spaces,
and instantiated when the file does not, for `analyze` and for `validate`; arguments that do not
instantiate the template are an error naming `--kernel`, not a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.space.errors import SpaceError
from flipflop.space.request import SpaceOptions
from flipflop.toolchain.names import instance_key, kernel_matches, written_instance

MATMUL = Path(__file__).parent / "tunable" / "tuned_matmul.cu"


def _cli(*argv: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flipflop.cli", *argv], capture_output=True, text=True,
        timeout=600, env={"FLIPFLOP_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )


@pytest.mark.parametrize(("wanted", "display", "matches"), [
    ("tuned_matmul<float>", "void tuned_matmul<float>(float*, float const*, float const*, int)",
     True),
    ("void tuned_matmul<float>(float*, …)", "void tuned_matmul<float>(float*, float const*)",
     True),
    ("f<float, 4>", "void f<float, 4>(float*)", True),
    ("f<float,4>", "void f<float, 4u>(float*)", True),  # the demangler's unsigned suffix
    ("k<128, 4>", "void ns::k<(unsigned int)128, 4l>(float*)", True),  # and its casts
    ("f<float, 8>", "void f<float, 4>(float*)", False),
    ("f<double, 4>", "void f<float, 4>(float*)", False),
    ("tuned_matmul", "void tuned_matmul<float>(float*)", True),  # every instance
    ("void saxpy(int, float)", "saxpy(int, float)", True),
    ("saxpy", "saxpy(int, float)", True),
    ("", "saxpy(int, float)", False),
])
def test_instance_names_match_however_they_are_written(wanted: str, display: str,
                                                      matches: bool) -> None:
    assert kernel_matches(wanted, "_Zmangled", display) is matches


def test_an_instance_is_spelled_as_source_code() -> None:
    assert written_instance("void f<unsigned int, 4>(float*)") == "f<unsigned int, 4>"
    assert written_instance("f <float, 4>") == "f<float, 4>"
    assert instance_key("f<unsigned int, 4>") == instance_key("void f<unsigned int, 4u>(int)")


@pytest.mark.parametrize("wanted", [
    "tuned_matmul<float>",
    "void tuned_matmul<float>(float*, float const*, float const*, int)",
    "tuned_matmul< float >",
])
def test_analyze_instantiates_a_template_the_file_never_instantiates(wanted: str) -> None:
    result = analyze(MATMUL, None, AnalysisOptions(gpu="rtx-a4000", kernel=wanted,
                                                   threads=(1024, 1024, 1)))
    (kernel,) = result.kernels
    assert kernel.info.display_name.startswith("void tuned_matmul<float>(float*")
    assert kernel.source_kernel is not None and kernel.source_kernel.name == "tuned_matmul"
    assert kernel.primary.advice.predictions
    # The instantiation is not the user's code: no message points past the file's end.
    lines = MATMUL.read_text().count("\n") + 1
    assert all(d.line is None or d.line <= lines for d in result.diagnostics)


def test_a_value_template_argument_instantiates_too() -> None:
    result = analyze(MATMUL, None, AnalysisOptions(gpu="rtx-a4000", kernel="scale_block<32>",
                                                   threads=(1 << 20, 1, 1)))
    (kernel,) = result.kernels
    assert kernel.info.display_name.startswith("void scale_block<32>(")


def test_arguments_that_do_not_instantiate_are_an_error_naming_the_option(
        tmp_path: Path) -> None:
    with pytest.raises(SpaceError, match=r"--kernel 'tuned_matmul<float, 3>': "
                                         r"tuned_matmul<typename T> does not take these"):
        analyze(MATMUL, None, AnalysisOptions(gpu="rtx-a4000", kernel="tuned_matmul<float, 3>"))
    done = _cli("analyze", str(MATMUL), "--gpu", "rtx-a4000", "--kernel", "scale_block<float>",
                cache=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"{MATMUL}: error: --kernel 'scale_block<float>': "
                                  "scale_block<int BLOCK> does not take these template arguments")
    assert done.stdout == ""


def test_a_space_of_a_template_instance_compiles_every_configuration() -> None:
    space = SpaceOptions(tune=("block_size_x=16,32", "block_size_y=8", "tile_size_y=1,2"),
                         problem_size=("1024", "1024"),
                         grid_div=(None, ("block_size_y", "tile_size_y"), None),
                         tunables=(), in_process=True, use_cache=False)
    options = AnalysisOptions(gpu="rtx-a4000", kernel="tuned_matmul<float>", space=space,
                              params=(("n", 1024.0),))
    result = analyze(MATMUL, None, options)
    (kernel,) = result.kernels
    assert len(kernel.primary.advice.predictions) == 4
    assert kernel.info.display_name.startswith("void tuned_matmul<float>(")


def _cache(tmp_path: Path, kernel_name: str) -> Path:
    """A Kernel Tuner cache of the template instance, as tune_kernel writes one (times are
    fixtures: what is tested is that the instance is found and predicted)."""
    keys = ("block_size_x", "block_size_y", "tile_size_y")
    values = [(16, 16, 1), (32, 8, 1), (16, 16, 2), (32, 8, 2), (32, 4, 4)]
    cache: dict[str, Any] = {}
    for position, config in enumerate(values):
        key = ",".join(map(str, config))
        cache[key] = {**dict(zip(keys, config, strict=True)), "time": 1.0 + 0.25 * position,
                      "times": [1.0 + 0.25 * position]}
    document = {
        "device_name": "NVIDIA RTX A4000", "kernel_name": kernel_name,
        "problem_size": [1024, 1024], "tune_params_keys": list(keys),
        "tune_params": {"block_size_x": [16, 32], "block_size_y": [4, 8, 16],
                        "tile_size_y": [1, 2, 4]},
        "objective": "time", "cache": cache,
    }
    path = tmp_path / "matmul_cache.json"
    path.write_text(json.dumps(document))
    return path


def test_validate_instantiates_the_template_the_cache_names(tmp_path: Path) -> None:
    path = _cache(tmp_path, "tuned_matmul<float>")
    done = _cli("validate", str(path), "--source", str(MATMUL), "--kernel",
                "tuned_matmul<float>", "--grid-div-y", "block_size_y,tile_size_y",
                "--param", "n=1024", "--format", "json", cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["gpu"] == "rtx-a4000" and result["configs"] == 5 and result["excluded"] == 0
    # Without --kernel, the name the cache gives is used, instantiated as well.
    done = _cli("validate", str(path), "--source", str(MATMUL), "--grid-div-y",
                "block_size_y,tile_size_y", "--param", "n=1024", "--format", "json",
                cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["configs"] == 5
