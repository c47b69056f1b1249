"""`--emit-kernel-tuner`: a shortlist written as a Kernel Tuner input loads back as itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flipflop.formats.emit import (
    FORMAT,
    kernel_tuner_input,
    membership_restriction,
    read_kernel_tuner_input,
    render_kernel_tuner_input,
    write_kernel_tuner_input,
)
from flipflop.formats.errors import FormatError
from flipflop.formats.t1 import read_t1
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import kernel_tuner_launch
from flipflop.space.tunables import Configuration, parse_tune_option, search_space

MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"
CONVOLUTION = read_t1(MEASURED / "convolution" / "T1.json")


def _shortlist(count: int = 25) -> list[Configuration]:
    picked = list(CONVOLUTION.space.sample(count, seed=4))
    return picked[::-1]  # a recommendation's order, not the space's


def test_the_emitted_file_loads_back_as_the_same_configurations(tmp_path: Path) -> None:
    shortlist = _shortlist()
    spec = kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, shortlist,
                              CONVOLUTION.kernel_name, CONVOLUTION.kernel_file)
    path = tmp_path / "shortlist.json"
    write_kernel_tuner_input(path, spec)
    back = read_kernel_tuner_input(path)
    assert back == spec
    assert back.configurations == tuple(shortlist)
    assert back.launch == CONVOLUTION.launch
    assert back.kernel_name == "convolution_kernel"
    for original, restricted in zip(CONVOLUTION.tunables, back.tunables, strict=True):
        used = {config[original.name] for config in shortlist}
        assert restricted.values == tuple(v for v in original.values if v in used)
    assert back.source_restrictions == tuple(r.text for r in CONVOLUTION.space.restrictions)
    assert [path.name for path in tmp_path.iterdir()] == ["shortlist.json"]  # no temporary left


def test_the_membership_restriction_selects_exactly_the_shortlist() -> None:
    shortlist = _shortlist()
    spec = kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, shortlist,
                              CONVOLUTION.kernel_name, CONVOLUTION.kernel_file)
    # Kernel Tuner applies the restriction to the product of the restricted tune_params.
    space = search_space(spec.tunables, [spec.restriction])
    assert set(space.configurations) == set(shortlist)
    assert space.product_size > len(shortlist)


def test_the_file_is_what_tune_kernel_takes() -> None:
    spec = kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, _shortlist(3),
                              CONVOLUTION.kernel_name, CONVOLUTION.kernel_file)
    document = json.loads(render_kernel_tuner_input(spec, "shortlist.json"))
    assert document["format"] == FORMAT
    assert document["problem_size"] == [4096, 4096]
    assert document["grid_div_x"] == ["block_size_x", "tile_size_x"]
    assert document["grid_div_z"] is None
    assert document["block_size_names"] == ["block_size_x", "block_size_y", "block_size_z"]
    assert list(document["tune_params"]) == list(CONVOLUTION.space.names)
    assert len(document["configurations"]) == 3
    assert document["restrictions"][0].startswith("(block_size_x, block_size_y, filter_height")
    usage = document["usage"]
    assert "json.load(open('shortlist.json'))" in usage
    assert "kernel_tuner.tune_kernel(spec['kernel_name'], spec['kernel_file']" in usage
    assert "restrictions=spec['restrictions']" in usage
    assert "block_size_names=spec['block_size_names']" in usage


def test_values_are_python_literals() -> None:
    space = search_space([parse_tune_option("mode=fast,'it''s'"), parse_tune_option("s=0.5,2"),
                          parse_tune_option("on=True,False")])
    configs = space.configurations
    text = membership_restriction(configs[:2])
    assert text == "(mode, s, on) in [('fast', 0.5, True), ('fast', 0.5, False)]"
    assert set(search_space(space.tunables, [text])) == set(configs[:2])
    single = search_space([parse_tune_option("b=32,64,128")])
    assert membership_restriction(single.configurations[1:]) == "b in [64, 128]"


def test_duplicates_are_dropped_and_order_kept() -> None:
    first, second = _shortlist(2)
    spec = kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, [first, second, first],
                              CONVOLUTION.kernel_name, CONVOLUTION.kernel_file)
    assert spec.configurations == (first, second)


def test_configurations_outside_the_space_are_refused() -> None:
    config = dict(CONVOLUTION.space.configurations[0])
    with pytest.raises(SpaceError, match="fails a restriction"):
        kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch,
                           [{**config, "block_size_x": 128, "block_size_y": 32}], "k", "k.cu")
    with pytest.raises(SpaceError, match="block_size_x=3 is not among its values"):
        kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch,
                           [{**config, "block_size_x": 3, "block_size_y": 32}], "k", "k.cu")
    with pytest.raises(SpaceError, match="no configurations"):
        kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, [], "k", "k.cu")
    with pytest.raises(SpaceError, match="unknown parameter 'tile'"):
        kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, [{**config, "tile": 1}],
                           "k", "k.cu")


def test_a_launch_naming_an_unknown_parameter_is_refused() -> None:
    launch = kernel_tuner_launch((64, 64), ["block_size_x", "tile"])
    with pytest.raises(SpaceError, match="unknown parameter 'tile'"):
        kernel_tuner_input(CONVOLUTION.space, launch, _shortlist(1), "k", "k.cu")


def test_an_edited_or_foreign_file_is_a_clear_error(tmp_path: Path) -> None:
    spec = kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, _shortlist(4),
                              CONVOLUTION.kernel_name, CONVOLUTION.kernel_file)
    document = json.loads(render_kernel_tuner_input(spec))
    path = tmp_path / "edited.json"
    edits = [
        (lambda d: d["configurations"].pop(), "'restrictions' is not the membership test"),
        (lambda d: d["configurations"][0].update(block_size_x=999), "is not in tune_params"),
        (lambda d: d["configurations"][0].pop("tile_size_x"), "configurations[0] names"),
        (lambda d: d.update(format="other"), "not a FlipFlop Kernel Tuner input"),
        (lambda d: d.update(problem_size=[1, 2, 3, 4]), "Kernel Tuner takes 1 to 3"),
        (lambda d: d.update(problem_size=[4096.0]), "'problem_size' holds the value 4096.0"),
        (lambda d: d.update(configurations=[]), "'configurations' is empty"),
    ]
    for edit, message in edits:
        edited = json.loads(json.dumps(document))
        edit(edited)
        path.write_text(json.dumps(edited))
        with pytest.raises(FormatError) as caught:
            read_kernel_tuner_input(path)
        assert caught.value.path == str(path)
        assert message in caught.value.reason, (message, caught.value.reason)


def test_writing_where_it_cannot_is_a_clear_error(tmp_path: Path) -> None:
    spec = kernel_tuner_input(CONVOLUTION.space, CONVOLUTION.launch, _shortlist(2),
                              CONVOLUTION.kernel_name, CONVOLUTION.kernel_file)
    with pytest.raises(FormatError, match="cannot write"):
        write_kernel_tuner_input(tmp_path / "missing" / "shortlist.json", spec)


def test_a_non_finite_value_has_no_literal() -> None:
    space = search_space([parse_tune_option("s=0.5,1e999")])
    with pytest.raises(SpaceError, match="no Python literal"):
        membership_restriction(space.configurations)
