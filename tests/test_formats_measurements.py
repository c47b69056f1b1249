"""The reader `validate` uses: the kind of measurement file is told from its content."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from flipflop.formats.errors import FormatError
from flipflop.formats.files import read_json
from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache
from flipflop.formats.measurements import kind_of, read_measured_space
from flipflop.formats.t1 import read_t1
from flipflop.formats.t4 import read_t4

REPOSITORY = Path(__file__).resolve().parents[1]
MEASURED = REPOSITORY / "calibration" / "data" / "measured"
T4 = REPOSITORY / "tests" / "data" / "t4" / "pnpoly_RTX_3090_results.json"
FLIPFLOP = REPOSITORY / "tests" / "data" / "synthetic-h200" / "workloads" / "vector_add.json"


def test_a_cache_is_read_as_a_cache() -> None:
    path = MEASURED / "pnpoly" / "RTX_2080_Ti.json.gz"
    assert read_measured_space(path) == read_kernel_tuner_cache(path)


def test_an_unfinished_cache_is_read_as_kernel_tuner_reads_it(tmp_path: Path) -> None:
    with gzip.open(MEASURED / "pnpoly" / "RTX_2080_Ti.json.gz", "rt") as handle:
        text = handle.read()
    cut = text[: text.index("\n", len(text) // 2)]  # entries end at line ends: drop the rest
    path = tmp_path / "partial.json"
    path.write_text(cut.rstrip().rstrip(","))
    measured = read_measured_space(path)
    assert not measured.complete
    assert 0 < len(measured.entries) < 4092


def test_t4_results_are_read_against_their_t1() -> None:
    t1 = read_t1(MEASURED / "pnpoly" / "T1.json")
    assert read_measured_space(T4, t1) == read_t4(T4, t1)
    with pytest.raises(FormatError, match=r"give the T1 file that describes it \(--t1\)"):
        read_measured_space(T4)


@pytest.mark.parametrize(("path", "message"), [
    (MEASURED / "pnpoly" / "T1.json", "a T1 file describes a kernel"),
    (FLIPFLOP, "a FlipFlop measurement file"),
    (REPOSITORY / "pyproject.toml", "not valid JSON"),
])
def test_other_files_are_named_for_what_they_are(path: Path, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        read_measured_space(path)


def test_kinds() -> None:
    assert kind_of(read_json(FLIPFLOP)) == "flipflop"
    assert kind_of(read_json(MEASURED / "convolution" / "T1.json")) == "t1"
    assert kind_of(read_json(T4)) == "t4"
    assert kind_of({"cache": {}, "tune_params_keys": []}) == "kernel_tuner_cache"
    assert kind_of([1]) is None and kind_of({"x": 1}) is None
