"""T1 input files: every measured T1 file reads into Kernel Tuner's search space and launch."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from flipflop.formats.errors import FormatError
from flipflop.formats.t1 import T1Input, read_t1
from flipflop.space.kernel_tuner import kernel_tuner_launch

MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"
# Two T1 files name a kernel file the folder does not hold (the benchmark's own layout):
# convolution_milo.cu and dedisp_milo/dedispersion.cu.hip; the folders hold these instead.
KERNEL_FILES = {"convolution_milo": "convolution.cu", "dedispersion": "dedispersion.cu"}
SIZES = {"convolution": 6768, "convolution_milo": 4362, "dedispersion": 11130, "pnpoly": 4092}


@cache
def _t1(folder: str) -> T1Input:
    kernel = MEASURED / folder / KERNEL_FILES[folder] if folder in KERNEL_FILES else None
    return read_t1(MEASURED / folder / "T1.json", kernel_file=kernel)


@pytest.mark.parametrize("folder", list(SIZES))
def test_every_measured_t1_file_reads(folder: str) -> None:
    t1 = _t1(folder)
    assert t1.space.size == SIZES[folder]
    assert t1.language == "CUDA"
    assert t1.compiler_options == ("-std=c++11",)
    assert t1.shared_memory_bytes == 0
    assert Path(t1.kernel_file).is_file()
    assert t1.launch.block_size_names == ("block_size_x", "block_size_y", "block_size_z")
    # Kernel Tuner's limit on threads per block joins the written conditions, unless they
    # already hold it in Kernel Tuner's words (the two convolution files do).
    texts = [restriction.text.replace(" ", "") for restriction in t1.conditions]
    written = "block_size_x*block_size_y<=1024" in texts
    assert len(t1.space.restrictions) == len(t1.conditions) + (0 if written else 1)
    assert written == (folder in ("convolution", "convolution_milo"))


def test_the_kernel_file_is_found_beside_the_t1_file() -> None:
    t1 = read_t1(MEASURED / "convolution/T1.json")
    assert t1.kernel_file == str(MEASURED / "convolution" / "convolution.cu")
    assert t1.kernel_name == "convolution_kernel"
    assert t1.benchmark_name == "convolution"


@pytest.mark.parametrize(("folder", "named"), [("convolution_milo", "convolution_milo.cu"),
                                               ("dedispersion", "dedisp_milo/dedispersion.cu.hip")])
def test_a_missing_kernel_file_is_a_clear_error(folder: str, named: str) -> None:
    with pytest.raises(FormatError) as caught:
        read_t1(MEASURED / folder / "T1.json")
    assert caught.value.path == str(MEASURED / folder / "T1.json")
    assert f"kernel file {named!r} (KernelSpecification.KernelFile) not found" in str(caught.value)


def test_values_strings_are_evaluated_as_python() -> None:
    pnpoly = _t1("pnpoly")
    assert pnpoly.space.tunable("block_size_x").values == tuple(32 * i for i in range(1, 32))
    assert pnpoly.space.tunable("tile_size").values == (1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20)
    assert pnpoly.launch.problem_size == (20_000_000,)


def test_the_launch_follows_problem_size_and_grid_div() -> None:
    t1 = _t1("convolution")
    config = t1.space.configuration({
        "block_size_x": 48, "block_size_y": 8, "filter_height": 15, "filter_width": 15,
        "read_only": 0, "tile_size_x": 3, "tile_size_y": 2, "use_padding": 1})
    assert t1.launch.block(config) == (48, 8, 1)
    assert t1.launch.grid(config) == (-(-4096 // (48 * 3)), -(-4096 // (8 * 2)), 1)


def test_the_dedispersion_t1_divides_the_grid_by_tiles_where_its_tuning_script_did_not() -> None:
    # T1.json gives GridDivX = [block_size_x, tile_size_x]; tune_dedispersion.py.txt, which made
    # the measurements, passes no grid_div. Reading the T1 keeps what the T1 file says; the
    # caller that compares with the measurements needs the script's launch.
    t1 = _t1("dedispersion")
    script = kernel_tuner_launch((25000, 2048, 1))
    config = t1.space.configurations[-1]
    assert config["tile_size_x"] == 4 and config["tile_size_y"] == 8
    assert t1.launch.grid(config) != script.grid(config)
    assert t1.launch.block(config) == script.block(config)


def test_arguments_are_kept_as_written() -> None:
    t1 = _t1("convolution")
    assert [(a.name, a.type, a.memory_type) for a in t1.arguments] == [
        ("output_image", "float", "Vector"), ("input_image", "float", "Vector"),
        ("d_filter", "float", "Vector")]
    assert json.loads(t1.arguments[2].raw)["MemType"] == "Constant"


# ----------------------------------------------------------------------------- bad T1 files


def _mutated(tmp_path: Path, change: Any) -> Path:
    data = json.loads((MEASURED / "convolution" / "T1.json").read_text())
    data = copy.deepcopy(data)
    change(data)
    path = tmp_path / "T1.json"
    path.write_text(json.dumps(data))
    (tmp_path / "convolution.cu").write_text((MEASURED / "convolution" / "convolution.cu")
                                             .read_text())
    return path


def _parameter(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in data["ConfigurationSpace"]["TuningParameters"]
                                 if p["Name"] == name)
    return found


def _set(path: tuple[str, ...], value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


BAD = [
    (lambda d: _parameter(d, "tile_size_x").update(Values="9**9**9"),
     "TuningParameters[5] (tile_size_x).Values: column 1: integer result has more than"),
    (lambda d: _parameter(d, "tile_size_x").update(Values="5"),
     "(tile_size_x).Values gives the value 5, not a list of values"),
    (lambda d: _parameter(d, "tile_size_x").update(Values="[1, 2.5]"),
     "(tile_size_x).Values holds 2.5, not a int"),
    (lambda d: _parameter(d, "tile_size_x").update(Values="[1, 1]"),
     "(tile_size_x): tunable tile_size_x lists the value 1 twice"),
    (lambda d: _parameter(d, "tile_size_x").update(Values="__import__('os')"),
     "unknown function '__import__'"),
    (lambda d: d["ConfigurationSpace"]["Conditions"].append(
        {"Expression": "tile_size_x * tile_sise_y < 30", "Parameters": []}),
     "Conditions[3].Expression: column 15: unknown parameter 'tile_sise_y'"),
    (lambda d: d["ConfigurationSpace"]["Conditions"].append(
        {"Expression": "tile_size_x <", "Parameters": []}),
     "Conditions[3].Expression: column 14: unexpected end of expression"),
    (_set(("KernelSpecification", "LocalSize", "X"), "128"),
     "LocalSize.X is '128'; Kernel Tuner can only fix a block dimension at its default 256"),
    (_set(("KernelSpecification", "LocalSize", "Y"), "1"),
     "LocalSize.Y is '1', but the tunable block_size_y sets that block dimension"),
    (_set(("KernelSpecification", "LocalSize", "X"), "block_size_x * 2"),
     "must name a tunable parameter or be a constant"),
    (_set(("KernelSpecification", "ProblemSize"), [1, 2, 3, 4]), "Kernel Tuner takes 1 to 3"),
    (_set(("KernelSpecification", "GridDivX"), ["block_size_x", "tile"]),
     "grid_div_x: unknown parameter 'tile'"),
    (_set(("KernelSpecification", "KernelName"), ""), "KernelName must be a non-empty string"),
    (_set(("KernelSpecification", "SharedMemory"), -1), "SharedMemory is the value -1"),
    (lambda d: d.pop("ConfigurationSpace"), "not a T1 file: no ConfigurationSpace"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_t1_files_are_clear_errors(tmp_path: Path, change: Any, message: str) -> None:
    path = _mutated(tmp_path, change)
    with pytest.raises(FormatError) as caught:
        read_t1(path)
    assert caught.value.path == str(path)
    assert message in caught.value.reason, caught.value.reason


def test_a_cache_is_not_a_t1_file() -> None:
    with pytest.raises(FormatError, match="not a T1 file: no ConfigurationSpace"):
        read_t1(MEASURED / "pnpoly" / "RTX_3090.json.gz")


def test_local_size_constants_equal_to_kernel_tuners_defaults_are_accepted(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data["KernelSpecification"]["LocalSize"] = {"X": "block_size_x", "Y": "block_size_y",
                                                    "Z": "1"}
    t1 = read_t1(_mutated(tmp_path, change))
    assert t1.launch.block_size_names == ("block_size_x", "block_size_y", "block_size_z")
    path = _mutated(tmp_path, lambda d: d["KernelSpecification"].pop("LocalSize"))
    assert read_t1(path).launch.block_size_names is None
