"""Kernel Tuner's launch semantics: block, grid, problem size, defines, cache keys, thread limit.

The measured caches are the judge: for entries of every cache, the block and grid our semantics
give equal Kernel Tuner's rule written out here from each tuning script's problem size and grid
divisors (`tune_*.py.txt` beside the caches).
"""

from __future__ import annotations

import gzip
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from flipflop.space.errors import ExpressionError, SpaceError
from flipflop.space.kernel_tuner import (
    DEFAULT_MAX_THREADS,
    KernelTunerLaunch,
    cache_key,
    format_value,
    instance_kernel_name,
    kernel_tuner_launch,
    kernel_tuner_search_space,
    parse_launch_options,
    split_option,
)
from flipflop.space.tunables import Configuration, parse_tune_option, tunables_from_tune_params
from flipflop.toolchain import Toolchain

MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"


def config(**values: Any) -> Configuration:
    return Configuration.of(values)


# ----------------------------------------------------------------------------- block


def test_block_defaults_are_256_1_1_when_no_parameter_names_the_block() -> None:
    launch = kernel_tuner_launch(1000)
    assert launch.block(config(tile=2)) == (256, 1, 1)
    assert launch.block(config(block_size_x=64)) == (64, 1, 1)
    assert launch.block(config(block_size_y=4)) == (256, 4, 1)
    assert launch.block(config(block_size_x=32, block_size_y=2, block_size_z=3)) == (32, 2, 3)


def test_block_values_pass_through_int() -> None:
    launch = kernel_tuner_launch(1000)
    assert launch.block(config(block_size_x=48.9)) == (48, 1, 1)
    assert launch.block(config(block_size_x="64")) == (64, 1, 1)
    with pytest.raises(SpaceError, match="block size block_size_x is the string 'wide'"):
        launch.block(config(block_size_x="wide"))


def test_block_size_names_are_padded_with_the_defaults() -> None:
    launch = kernel_tuner_launch((4096, 4096), ["MWG"], ["NWG"], block_size_names=["MDIMC",
                                                                                    "NDIMC"])
    assert launch.block_names(["MDIMC", "NDIMC"]) == ("MDIMC", "NDIMC", "block_size_z")
    assert launch.block(config(MDIMC=16, NDIMC=8, block_size_x=99)) == (16, 8, 1)
    with pytest.raises(SpaceError, match="more than 3 names"):
        kernel_tuner_launch(1, block_size_names=["a", "b", "c", "d"])


def test_block_size_names_in_other_case_are_found_as_kernel_tuner_finds_them() -> None:
    launch = kernel_tuner_launch((64, 64))
    assert launch.block_names(["BLOCK_SIZE_X", "BLOCK_SIZE_Y"]) == (
        "BLOCK_SIZE_X", "BLOCK_SIZE_Y", "block_size_z")
    assert launch.block(config(BLOCK_SIZE_Y=4, BLOCK_SIZE_X=8)) == (8, 4, 1)
    # Kernel Tuner sorts what it finds and pads after it: a lone BLOCK_SIZE_Y names x.
    assert launch.block_names(["block_size_x", "BLOCK_SIZE_Y"]) == (
        "BLOCK_SIZE_Y", "block_size_y", "block_size_z")


# ----------------------------------------------------------------------------- problem and grid


def test_grid_is_the_problem_divided_by_the_block_by_default() -> None:
    launch = kernel_tuner_launch((1000, 30))
    assert launch.grid(config(block_size_x=128, block_size_y=4)) == (8, 8, 1)
    assert launch.grid(config(tile=1)) == (1000, 30, 1)  # no block parameter: divisor 1


def test_grid_divisors_multiply_and_an_empty_list_divides_by_one() -> None:
    launch = kernel_tuner_launch(20_000_000, grid_div_x=["block_size_x", "tile_size"])
    assert launch.grid(config(block_size_x=992, tile_size=20)) == (1009, 1, 1)
    launch = kernel_tuner_launch((4096, 4096), grid_div_x=[], grid_div_y=[2, "tile"])
    assert launch.grid(config(block_size_x=32, block_size_y=8, tile=4)) == (4096, 512, 1)


def test_grid_divisor_expressions_are_truncated_by_int_like_kernel_tunes_eval() -> None:
    launch = kernel_tuner_launch(1024, grid_div_x=["block_size_x / 32"])
    assert launch.grid(config(block_size_x=48)) == (1024, 1, 1)  # int(1.5) == 1
    assert launch.grid(config(block_size_x=64)) == (512, 1, 1)


def test_a_default_divisor_is_the_raw_value_and_the_division_is_float() -> None:
    launch = kernel_tuner_launch(100)
    # get_dimension_divisor returns params.get("block_size_x") itself: 100 / 32.5 -> 4 blocks,
    # while the block is int(32.5) == 32 threads.
    assert launch.grid(config(block_size_x=32.5)) == (4, 1, 1)
    assert launch.block(config(block_size_x=32.5)) == (32, 1, 1)


def test_problem_size_from_expressions_of_tunables() -> None:
    launch = kernel_tuner_launch(("n * 2", "n // 3 + 0.9", 7), grid_div_x=[], grid_div_y=[],
                                 grid_div_z=[])
    assert launch.problem(config(n=10)) == (20, 3, 7)  # int(10 // 3 + 0.9) == 3
    assert launch.grid(config(n=10)) == (20, 3, 7)
    assert kernel_tuner_launch("64").problem_size == (64,)


@pytest.mark.parametrize("problem_size", [(), (1, 2, 3, 4)])
def test_problem_size_of_the_wrong_rank(problem_size: tuple[int, ...]) -> None:
    with pytest.raises(SpaceError, match="Kernel Tuner takes 1 to 3"):
        kernel_tuner_launch(problem_size)


def test_bad_problem_size_entries() -> None:
    with pytest.raises(SpaceError, match="integers or strings"):
        kernel_tuner_launch((4096.0, 2))  # type: ignore[arg-type]
    with pytest.raises(ExpressionError):
        kernel_tuner_launch("n *")


def test_a_divisor_naming_an_unknown_parameter() -> None:
    launch = kernel_tuner_launch((4096, 4096), ["block_size_x", "tile_sise_x"])
    with pytest.raises(ExpressionError) as caught:
        launch.check(["block_size_x", "tile_size_x"])
    assert "grid_div_x: unknown parameter 'tile_sise_x'" in caught.value.reason
    assert "did you mean 'tile_size_x'?" in caught.value.reason
    with pytest.raises(ExpressionError, match="grid_div_x: unknown name 'tile_sise_x'"):
        launch.grid(config(block_size_x=16, tile_size_x=2))
    launch.check(["block_size_x", "tile_sise_x"])


def test_a_zero_divisor() -> None:
    launch = kernel_tuner_launch(64, grid_div_x=["tile"])
    with pytest.raises(SpaceError, match="grid divisor in x is 0 for tile=0"):
        launch.grid(config(tile=0))


def test_launch_fields_are_checked() -> None:
    with pytest.raises(SpaceError, match="integers or expressions"):
        KernelTunerLaunch(problem_size=(1.5,))  # type: ignore[arg-type]
    with pytest.raises(SpaceError, match="not an identifier"):
        kernel_tuner_launch(1, block_size_names=["block size"])


def test_launch_options_as_the_command_line_and_annotations_write_them() -> None:
    launch = parse_launch_options("4096, 4096", grid_div_x="block_size_x,tile_size_x",
                                  grid_div_y="max(block_size_y, 2) , 2", grid_div_z="",
                                  block_size_names="MDIMC,NDIMC")
    assert launch == kernel_tuner_launch((4096, 4096), ["block_size_x", "tile_size_x"],
                                         ["max(block_size_y, 2)", 2], [], ["MDIMC", "NDIMC"])
    assert parse_launch_options("n * 2").grid_div_x is None
    assert split_option("a, 'x,y', f(b, [c, d])", "x") == ["a", "'x,y'", "f(b, [c, d])"]
    with pytest.raises(SpaceError, match="empty entry"):
        parse_launch_options("4096,,2")
    with pytest.raises(SpaceError, match="problem size: no value"):
        parse_launch_options(" ")


# ----------------------------------------------------------------------------- defines, source


def test_defines_are_kernel_tuners_in_its_order() -> None:
    launch = kernel_tuner_launch((4096, 4096), ["block_size_x", "tile_size_x"],
                                 ["block_size_y", "tile_size_y"])
    settings = config(block_size_x=48, block_size_y=8, tile_size_x=3, tile_size_y=2,
                      op="tile_size_x+1", use_padding=True)
    assert launch.defines(settings) == (
        ("grid_size_x", "29"), ("grid_size_y", "256"), ("grid_size_z", "1"),
        ("block_size_x", "48"), ("block_size_y", "8"), ("block_size_z", "1"),
        ("tile_size_x", "3"), ("tile_size_y", "2"), ("op", "3+1"), ("use_padding", "True"),
        ("kernel_tuner", "1"),
    )


def test_loop_unroll_factors_follow_kernel_tuners_cuda_rule() -> None:
    launch = kernel_tuner_launch(1024)
    source = "a\n    #pragma unroll loop_unroll_factor_k\nb\n#pragma unroll 4\nc\n"
    off = launch.prepare_source(config(block_size_x=64, loop_unroll_factor_k=0), source)
    # The pattern takes the newline before the pragma and leaves the one after it.
    assert off.endswith("#line 1\na\n\nb\n#pragma unroll 4\nc\n")
    assert "loop_unroll_factor_k" not in off
    on = launch.prepare_source(config(block_size_x=64, loop_unroll_factor_k=8), source)
    assert "constexpr int loop_unroll_factor_k = 8;\n" in on
    assert "#pragma unroll loop_unroll_factor_k" in on
    assert on.startswith("#define grid_size_x 16\n")


def test_the_prepared_dedispersion_kernel_compiles(cuda_toolchain: Toolchain,
                                                   tmp_path: Path) -> None:
    folder = MEASURED / "dedispersion"
    launch = kernel_tuner_launch((25000, 2048, 1))
    settings = config(block_size_x=4, block_size_y=64, block_size_z=1, tile_size_x=2,
                      tile_size_y=3, tile_stride_x=1, tile_stride_y=0,
                      loop_unroll_factor_channel=0)
    source = launch.prepare_source(settings, (folder / "dedispersion.cu").read_text())
    assert "#pragma unroll loop_unroll_factor_channel" not in source
    prepared = tmp_path / "dedispersion.cu"
    prepared.write_text(source)
    result = subprocess.run(
        [str(cuda_toolchain.nvcc), "-ptx", "-arch=sm_86", "-std=c++11", f"-I{folder}",
         str(prepared), "-o", str(tmp_path / "dedispersion.ptx")],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    ptx = (tmp_path / "dedispersion.ptx").read_text()
    assert ".entry dedispersion_kernel(" in ptx


def test_templated_kernel_names() -> None:
    assert instance_kernel_name("gemm<TILE, 2>", config(TILE=16)) == "gemm<16, 2>"
    assert instance_kernel_name("TILE_kernel", config(TILE=16)) == "TILE_kernel"


# ----------------------------------------------------------------------------- cache keys


def test_cache_keys_are_python_str_of_the_values_in_key_order() -> None:
    settings = config(b=32, a=0.5, c=True, d="fast", e=1.0, f=1e-05)
    assert cache_key(settings, ["a", "b", "c", "d", "e", "f"]) == "0.5,32,True,fast,1.0,1e-05"
    assert cache_key(settings, ["b"]) == "32"
    assert format_value(2**40) == "1099511627776"
    with pytest.raises(SpaceError, match="no value for g"):
        cache_key(settings, ["a", "g"])


# ----------------------------------------------------------------------------- thread limit


def test_kernel_tuners_thread_limit_joins_the_restrictions() -> None:
    tunables = [parse_tune_option("block_size_x=32..1024:32"),
                parse_tune_option("block_size_y=1,2,4")]
    space = kernel_tuner_search_space(tunables)
    assert [r.text for r in space.restrictions] == ["block_size_x * block_size_y <= 1024"]
    assert all(c["block_size_x"] * c["block_size_y"] <= DEFAULT_MAX_THREADS for c in space)
    assert space.size == 32 + 16 + 8
    written = kernel_tuner_search_space(tunables, ["block_size_x*block_size_y<=1024"])
    assert [r.text for r in written.restrictions] == ["block_size_x*block_size_y<=1024"]
    assert kernel_tuner_search_space(tunables, max_threads=None).size == 96


def test_the_thread_limit_uses_the_default_names_only() -> None:
    # tune_kernel does not pass block_size_names to its Searchspace: GEMM's MDIMC x NDIMC is not
    # limited there (Kernel Tuner skips such instances when it launches them instead).
    space = kernel_tuner_search_space([parse_tune_option("MDIMC=8,64"),
                                       parse_tune_option("NDIMC=8,64")])
    assert space.restrictions == ()


# ----------------------------------------------------------------------------- measured caches


@cache
def _raw_cache(relative: str) -> dict[str, Any]:
    with gzip.open(MEASURED / relative, "rt") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


# From each tuning script: problem_size, grid_div_x/y/z (None: not passed) and block_size_names.
SCRIPTS: dict[str, dict[str, Any]] = {
    "convolution": {"problem": (4096, 4096), "div": (["block_size_x", "tile_size_x"],
                                                     ["block_size_y", "tile_size_y"], None),
                    "names": None},
    "convolution_milo": {"problem": (4096, 4096), "div": (["block_size_x", "tile_size_x"],
                                                          ["block_size_y", "tile_size_y"], None),
                         "names": None},
    # tune_dedispersion.py.txt passes no grid_div: every dimension divides by its block size.
    "dedispersion": {"problem": (25000, 2048, 1), "div": (None, None, None), "names": None},
    "gemm": {"problem": (4096, 4096), "div": (["MWG"], ["NWG"], None),
             "names": ["MDIMC", "NDIMC", "block_size_z"]},
    "pnpoly": {"problem": (20_000_000,), "div": (["block_size_x", "tile_size"], None, None),
               "names": None},
}
CACHES = [
    "convolution/RTX_2080_Ti.json.gz", "convolution/RTX_3090.json.gz",
    "convolution_milo/A6000.json.gz", "dedispersion/A6000.json.gz",
    "gemm/RTX_2080_Ti.json.gz", "gemm/RTX_3090.json.gz",
    "pnpoly/RTX_2080_Ti.json.gz", "pnpoly/RTX_3090.json.gz",
]


def _kernel_tuner_rule(script: dict[str, Any], params: dict[str, Any]) -> tuple[tuple[int, ...],
                                                                               tuple[int, ...]]:
    names = script["names"] or ["block_size_x", "block_size_y", "block_size_z"]
    block = (params.get(names[0], 256), params.get(names[1], 1), params.get(names[2], 1))
    grid = []
    for dimension in range(3):
        extent = script["problem"][dimension] if dimension < len(script["problem"]) else 1
        divisors = script["div"][dimension]
        if divisors is None:
            divisor = params.get(names[dimension], 1)
        else:
            divisor = 1
            for name in divisors:
                divisor *= params[name]
        grid.append(-(-extent // divisor))
    return block, tuple(grid)


@pytest.mark.parametrize("relative", CACHES)
def test_block_and_grid_of_measured_configurations(relative: str) -> None:
    data = _raw_cache(relative)
    script = SCRIPTS[relative.split("/")[0]]
    launch = kernel_tuner_launch(data["problem_size"], *script["div"],
                                 block_size_names=script["names"])
    keys = data["tune_params_keys"]
    entries = list(data["cache"].values())
    sample = entries[:: max(1, len(entries) // 300)]
    assert len(sample) >= 300
    for entry in sample:
        params = {key: entry[key] for key in keys}
        settings = Configuration(keys, [entry[key] for key in keys])
        block, grid = _kernel_tuner_rule(script, params)
        assert launch.block(settings) == block, params
        assert launch.grid(settings) == grid, params


@pytest.mark.parametrize("relative", CACHES)
def test_every_measured_cache_key_is_our_cache_key(relative: str) -> None:
    data = _raw_cache(relative)
    keys = data["tune_params_keys"]
    for key, entry in data["cache"].items():
        assert cache_key(Configuration(keys, [entry[k] for k in keys]), keys) == key


def test_the_measured_pnpoly_grids_cover_twenty_million_points() -> None:
    data = _raw_cache("pnpoly/RTX_3090.json.gz")
    launch = kernel_tuner_launch(data["problem_size"], ["block_size_x", "tile_size"])
    tunables = tunables_from_tune_params(data["tune_params"])
    space = kernel_tuner_search_space(tunables)
    for settings in space:
        grid, block = launch.grid(settings), launch.block(settings)
        covered = grid[0] * block[0] * int(settings["tile_size"])
        assert covered >= 20_000_000 > covered - block[0] * int(settings["tile_size"])
