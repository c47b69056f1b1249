"""Tunables, configurations and search spaces: enumeration, restrictions, sampling."""

from __future__ import annotations

import itertools
import json

import pytest

import flipflop.space.tunables as tunables_module
from flipflop.space.errors import ExpressionError, SpaceError
from flipflop.space.tunables import (
    Configuration,
    SearchSpace,
    SplitMix64,
    Tunable,
    choose_indices,
    parse_tune_option,
    search_space,
    tunables_from_tune_params,
)

# ----------------------------------------------------------------------------- --tune


@pytest.mark.parametrize(
    ("option", "values"),
    [
        ("block_size_x=16..256:16", tuple(range(16, 257, 16))),
        ("tile=1..4", (1, 2, 3, 4)),
        ("tile = 8..2:-2", (8, 6, 4, 2)),
        ("n=5..5", (5,)),
        ("b=32,64, 128", (32, 64, 128)),
        ("f=0.5,1e-3,-2.", (0.5, 1e-3, -2.0)),
        ("mode=fast,'a,b',\"x y\"", ("fast", "a,b", "x y")),
        ("flag=True,False", (True, False)),
        ("mixed=1,2.5,half2", (1, 2.5, "half2")),
        ("neg=-1,+3", (-1, 3)),
    ],
)
def test_tune_options(option: str, values: tuple[object, ...]) -> None:
    tunable = parse_tune_option(option)
    assert tunable.values == values
    assert [type(v) for v in tunable.values] == [type(v) for v in values]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("block_size_x", "expected NAME=V1,V2"),
        ("=1,2", "expected NAME=V1,V2"),
        ("2x=1", "not an identifier"),
        ("if=1,2", "Python keyword"),
        ("time=1,2", "reserved by Kernel Tuner"),
        ("grid_size_x=1", "reserved by Kernel Tuner"),
        ("b=1..8:0", "the step is 0"),
        ("b=8..1", "the range is empty"),
        ("b=1.5..8", "a range is A..B"),
        ("b=1..", "a range is A..B"),
        ("b=1..10000000", "more than 100000 values"),
        ("b=1,,2", "empty value"),
        ("b=", "empty value"),
        ("b='open", "unterminated quote"),
        ("b=1,2,1", "lists the value 1 twice"),
        ("b=1,True", "lists the value True twice (as 1)"),
        ("b=1,1.0", "lists the value 1.0 twice (as 1)"),
    ],
)
def test_bad_tune_options(option: str, message: str) -> None:
    with pytest.raises(SpaceError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_tune_option(option)


def test_tune_params_dictionary() -> None:
    tune_params = json.loads('{"block_size_x": [32, 64], "use_shmem": [0, 1], "op": ["a", "b"],'
                             ' "scale": [0.5, 1.0]}')
    tunables = tunables_from_tune_params(tune_params)
    assert [t.name for t in tunables] == ["block_size_x", "use_shmem", "op", "scale"]
    assert tunables[3].values == (0.5, 1.0)


@pytest.mark.parametrize(
    ("tune_params", "message"),
    [
        ([1, 2], "must be an object"),
        ({"a": 3}, "must be a list"),
        ({"a": [None]}, "values must be numbers"),
        ({"a": [[1]]}, "values must be numbers"),
        ({"a": []}, "has no values"),
        ({"a-b": [1]}, "not an identifier"),
    ],
)
def test_bad_tune_params(tune_params: object, message: str) -> None:
    with pytest.raises(SpaceError, match=message):
        tunables_from_tune_params(tune_params)


# ----------------------------------------------------------------------------- configurations


def test_configuration_is_an_immutable_hashable_ordered_mapping() -> None:
    config = Configuration(("block_size_x", "tile"), (32, 2))
    assert dict(config) == {"block_size_x": 32, "tile": 2}
    assert list(config) == ["block_size_x", "tile"]
    assert config["tile"] == 2 and "tile" in config and "x" not in config
    assert config.get("x", 7) == 7
    assert config == Configuration.of({"block_size_x": 32, "tile": 2})
    assert config != Configuration.of({"tile": 2, "block_size_x": 32})  # order is part of it
    assert {config: "first"}[Configuration(("block_size_x", "tile"), (32, 2))] == "first"
    assert repr(config) == "Configuration(block_size_x=32, tile=2)"
    assert config.describe() == "block_size_x=32 tile=2"
    with pytest.raises(AttributeError):
        config._values = (1, 1)  # type: ignore[misc]
    with pytest.raises(KeyError):
        config["x"]
    with pytest.raises(SpaceError, match="names a parameter twice"):
        Configuration(("a", "a"), (1, 2))
    with pytest.raises(SpaceError, match="2 names but 1 values"):
        Configuration(("a", "b"), (1,))


# ----------------------------------------------------------------------------- search spaces


def _brute_force(tune_params: dict[str, list[object]], keep: object) -> list[tuple[object, ...]]:
    """The product filtered afterwards: what Kernel Tuner's brute-force builder does."""
    names = list(tune_params)
    return [values for values in itertools.product(*tune_params.values())
            if keep(dict(zip(names, values, strict=True)))]  # type: ignore[operator]


TUNE_PARAMS: dict[str, list[object]] = {
    "block_size_x": [16, 32, 48, 64, 128],
    "block_size_y": [1, 2, 4, 8],
    "tile_size_x": [1, 2, 3, 4],
    "use_shmem": [0, 1],
}


def _space(*restrictions: str) -> SearchSpace:
    return search_space(tunables_from_tune_params(TUNE_PARAMS), restrictions)


def test_enumeration_is_kernel_tuners_product_order_with_restrictions_applied() -> None:
    space = _space("block_size_x * block_size_y <= 256", "use_shmem == 0 or tile_size_x > 1",
                   "32 <= block_size_x * block_size_y * tile_size_x <= 512")

    def keep(p: dict[str, int]) -> bool:
        return (p["block_size_x"] * p["block_size_y"] <= 256
                and (p["use_shmem"] == 0 or p["tile_size_x"] > 1)
                and 32 <= p["block_size_x"] * p["block_size_y"] * p["tile_size_x"] <= 512)

    expected = _brute_force(TUNE_PARAMS, keep)
    assert [c.as_tuple() for c in space.configurations] == expected
    assert space.size == len(expected) == len(space)
    assert space.product_size == 5 * 4 * 4 * 2
    assert all(c.names == space.names for c in space)
    assert space.configurations[0] in space
    assert Configuration.of({"block_size_x": 128, "block_size_y": 8, "tile_size_x": 4,
                             "use_shmem": 1}) not in space


def test_without_restrictions_the_space_is_the_whole_product() -> None:
    space = _space()
    assert [c.as_tuple() for c in space] == list(itertools.product(*TUNE_PARAMS.values()))


def test_a_restriction_that_divides_by_zero_lets_the_configuration_pass() -> None:
    # kernel_tuner.util.check_restrictions catches ZeroDivisionError and keeps the configuration.
    space = search_space([parse_tune_option("t=1..4")], ["12 % (t - 2) == 0"])
    assert [c["t"] for c in space] == [1, 2, 3, 4]
    space = search_space([parse_tune_option("t=1..5")], ["13 % (t - 2) == 1"])
    assert [c["t"] for c in space] == [2, 4, 5]


def test_restrictions_use_truthiness_like_kernel_tuner() -> None:
    space = search_space([parse_tune_option("t=0..3")], ["t % 2"])
    assert [c["t"] for c in space] == [1, 3]


def test_a_constant_restriction() -> None:
    assert _space("1 > 2").size == 0
    assert _space("2 > 1").size == _space().size


def test_unknown_names_in_a_restriction_are_named_with_the_known_parameters() -> None:
    with pytest.raises(ExpressionError) as caught:
        _space("block_size_x * blok_size_y <= 1024")
    error = caught.value
    assert "unknown parameter 'blok_size_y'" in error.reason
    assert "known parameters: block_size_x, block_size_y, tile_size_x, use_shmem" in error.reason
    assert "did you mean 'block_size_y'?" in error.reason
    assert error.column == 16


def test_a_restriction_that_fails_to_evaluate_names_the_configuration() -> None:
    space = search_space([parse_tune_option("mode=a,b"), parse_tune_option("n=1,2")],
                         ["mode < n"])
    with pytest.raises(ExpressionError, match="not supported between 'str' and 'int'"
                                              r" \(with mode='a', n=1\)"):
        space.configurations  # noqa: B018


def test_duplicate_tunables_are_refused() -> None:
    with pytest.raises(SpaceError, match="tunable a is given twice"):
        search_space([Tunable("a", (1,)), Tunable("a", (2,))])


def test_a_space_without_tunables_has_one_empty_configuration() -> None:
    space = search_space([])
    assert space.configurations == (Configuration((), ()),)


def test_configuration_from_values() -> None:
    space = _space()
    config = space.configuration({"use_shmem": 1, "tile_size_x": 2, "block_size_y": 4,
                                  "block_size_x": 16})
    assert config.names == space.names
    with pytest.raises(SpaceError, match="unknown parameter 'tile'"):
        space.configuration({"tile": 1})
    with pytest.raises(SpaceError, match="no value for block_size_y"):
        space.configuration({"block_size_x": 16, "tile_size_x": 2, "use_shmem": 0})
    assert space.satisfies(config)
    assert not _space("use_shmem == 0").satisfies(config)


def test_large_spaces_are_refused_before_they_exhaust_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tunables_module, "MAX_CONFIGURATIONS", 1000)
    space = search_space([parse_tune_option("a=1..100"), parse_tune_option("b=1..100")])
    with pytest.raises(SpaceError, match="more than 1000 configurations"):
        space.configurations  # noqa: B018


# ----------------------------------------------------------------------------- sampling


def test_splitmix64_reproduces_the_published_reference_sequence() -> None:
    # Rosetta Code, "Pseudo-random numbers/Splitmix64": the first five outputs for seed 1234567.
    generator = SplitMix64(1234567)
    assert [generator.next() for _ in range(5)] == [
        6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431,
        16408922859458223821,
    ]


def test_sampling_is_deterministic_stable_and_without_replacement() -> None:
    space = search_space([parse_tune_option("a=1..200"), parse_tune_option("b=1..100")],
                         ["(a + b) % 3 != 0"])
    assert space.size == 13_333
    first = space.sample(25, seed=7)
    assert first == space.sample(25, seed=7)
    assert first != space.sample(25, seed=8)
    assert len(set(first)) == 25
    order = {config: position for position, config in enumerate(space)}
    assert [order[c] for c in first] == sorted(order[c] for c in first)  # in the space's order
    # Fixed for all time: the generator is ours, not Python's `random`.
    assert [c.as_tuple() for c in space.sample(4, seed=1)] == [
        (40, 73), (122, 42), (141, 41), (189, 41),
    ]


def test_sampling_more_than_the_space_gives_the_space() -> None:
    space = _space("block_size_x == 16")
    assert space.sample(10_000, seed=3) == space.configurations
    assert space.sample(0, seed=3) == ()
    with pytest.raises(SpaceError, match="non-negative integer"):
        space.sample(-1, seed=3)
    with pytest.raises(SpaceError, match="seed must be an integer"):
        space.sample(3, seed=1.5)  # type: ignore[arg-type]


def test_a_space_is_enumerated_once_however_often_it_is_sampled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []
    enumerate_space = tunables_module._enumerate

    def counting(space: SearchSpace) -> tuple[Configuration, ...]:
        calls.append(space)
        return enumerate_space(space)

    monkeypatch.setattr(tunables_module, "_enumerate", counting)
    space = search_space([parse_tune_option("a=1..200"), parse_tune_option("b=1..100")])
    assert space.size == 20_000
    for seed in range(5):
        assert len(space.sample(100, seed)) == 100
    assert len(calls) == 1


def test_chosen_indices_are_distinct_ascending_and_spread_out() -> None:
    chosen = choose_indices(10_000, 5_000, seed=3)
    assert len(set(chosen)) == 5_000 and chosen == sorted(chosen)
    assert chosen[0] >= 0 and chosen[-1] < 10_000
    per_tenth = [sum(1 for i in chosen if i // 1000 == tenth) for tenth in range(10)]
    assert all(430 <= count <= 570 for count in per_tenth), per_tenth
    assert choose_indices(5, 5, seed=0) == [0, 1, 2, 3, 4]


def test_a_configuration_pickled_in_another_process_hashes_as_one_made_here() -> None:
    """Analysis workers hand configurations to the language server; string hashes differ
    between processes, so the hash is computed again where the pickle is read."""
    import pickle
    import subprocess
    import sys

    program = (
        "import pickle, sys; from flipflop.space.tunables import Configuration; "
        "made = Configuration(('block_size_x', 'tile'), (256, 4)); "
        "sys.stdout.buffer.write(pickle.dumps(made))"
    )
    made_there = subprocess.run(
        [sys.executable, "-c", program],
        check=True, capture_output=True, env={"PYTHONHASHSEED": "1", **_path_only()},
    ).stdout
    read_here = pickle.loads(made_there)
    here = Configuration(("block_size_x", "tile"), (256, 4))
    assert read_here == here and hash(read_here) == hash(here)
    assert {here: "found"}[read_here] == "found"


def _path_only() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}
