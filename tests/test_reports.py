"""What a person reads from `flipflop analyze` on real kernels, compiled by the real nvcc: tied
shapes collapse into one row, drivers of one source line merge, guessed inputs are ranked with
the annotation that pins them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flipflop.rules import RULES

CORPUS = Path(__file__).parent / "corpus"
REPO = Path(__file__).resolve().parents[1]
WARP_PER_ROW = CORPUS / "softmax_warp_per_row.cu"  # launch at line 43
THREAD_PER_ROW = CORPUS / "softmax_thread_per_row.cu"  # loops at lines 14, 18, 21
SAXPY = CORPUS / "saxpy.cu"  # launch at line 16

pytestmark = pytest.mark.usefixtures("cuda_toolchain")

_ROW = re.compile(r"^    (\d+(?:×\d+){0,2}) +(default|\d+ W) ")
_TIE = re.compile(r"^      (\d+) shapes tie within 1% at (.+?) / (.+?) \((.+)\), (.+)$")


def _analyze(path: Path, *args: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "analyze", str(path), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def _json(path: Path, *args: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(_analyze(path, "--format", "json", *args))
    return parsed


def _block(config: dict[str, Any]) -> str:
    x, y, z = config["block"]
    return str(x) if y == z == 1 else (f"{x}×{y}" if z == 1 else f"{x}×{y}×{z}")


def test_warp_per_row_softmax_shows_one_line_for_the_shapes_that_tie() -> None:
    # A 2-D problem, so that 2-D and 3-D blocks are candidates: the launch is written 1-D, and
    # without a size the kernel (cooperative groups read every thread index) is taken as 1-D.
    problem = ("--threads", "1024,1024")
    table = _analyze(WARP_PER_ROW, *problem).splitlines()
    [kernel] = _json(WARP_PER_ROW, *problem)["kernels"]
    configs = kernel["configs"]
    rows = [line for line in table if _ROW.match(line)]
    ties = [_TIE.match(line) for line in table if _TIE.match(line)]
    assert len(configs) > 100  # every 1-D, 2-D and 3-D candidate shape
    assert 3 <= len(rows) <= 8, "\n".join(table)
    # The big group: every 1-D and 2-D power-of-two shape predicts the same for a warp per row.
    big = next(t for t in ties if "any 2-D split" in t[4])
    assert re.fullmatch(r"\d+…\d+ threads in powers of two, any 2-D split", big[4]), big[4]
    group = int(big[1])
    members = [c for c in configs if c.get("tie_group") == 0]
    assert group == len(members) >= 10
    assert {c["block"][2] for c in members} == {1}
    fastest = min(members, key=lambda c: c["time_s"])
    for member in members:
        assert member["time_s"] <= fastest["time_s"] * 1.01
        low, high = sorted((member["energy_j"], fastest["energy_j"]))
        assert high <= low * 1.01
    # The current launch, NVIDIA's choice and the recommendation keep rows of their own.
    labelled = " ".join(table)
    for label in ("current", "NVIDIA heuristic", "recommended"):
        assert label in labelled
    current = next(line for line in table if line.rstrip().endswith("recommended, current"))
    assert current.split()[0] == _block(kernel["current"]) == "256"
    heuristic = kernel["baseline"]["occupancy_heuristic"]
    assert any(r.split()[0] == _block(heuristic) and "NVIDIA" in r for r in rows)
    # Every front configuration is on a row or in a group shown by one.
    shown_groups = {
        c.get("tie_group") for c in configs
        if any(r.split()[0] == _block(c) and c["power_limit_w"] is None for r in rows)
    }  # fmt: skip
    for config in configs:
        if config["pareto"]:
            assert config.get("tie_group") in shown_groups or any(
                r.split()[0] == _block(config) for r in rows
            )
    # --all lists every configuration, the members of a group marked with it.
    everything = [line for line in _analyze(WARP_PER_ROW, "--all", *problem).splitlines()
                  if _ROW.match(line)]
    assert len(everything) == len(configs)
    # (the table counts groups from 1, JSON's `tie_group` from 0)
    assert sum(bool(re.search(r"\btie 1$", line)) for line in everything) == group


def test_loop_per_row_softmax_has_one_driver_per_source_line() -> None:
    table = _analyze(THREAD_PER_ROW).splitlines()
    start = table.index("  energy drivers:")
    drivers = table[start + 1 :]
    strided = [line for line in drivers if "strided" in line]
    # Three loops over the row: the max (line 15), the sum (line 19), the write (line 22).
    at = [re.search(r"at line (\d+)", line) for line in strided]
    lines = [match[1] for match in at if match is not None]
    assert lines[0] == "22" and sorted(lines[1:]) == ["15", "19"], strided
    assert "strided loads and stores at line 22 (" in strided[0]
    assert len(set(drivers)) == len(drivers)
    [kernel] = _json(THREAD_PER_ROW)["kernels"]
    keys = [(d["kind"], tuple(d["lines"])) for d in kernel["drivers"]]
    assert len(keys) == len(set(keys)) <= 8
    shares = [d["share"] for d in kernel["drivers"]]
    assert shares == sorted(shares, reverse=True)
    line_22 = next(d for d in kernel["drivers"] if d["lines"] == [22] and d["kind"] == "coalescing")
    line_15 = next(d for d in kernel["drivers"] if d["lines"] == [15])
    # The write loop reads the row and writes it: twice the accesses of the max loop.
    assert line_22["share"] == pytest.approx(2 * line_15["share"], rel=0.05)
    assert f"{line_22['share']:.0%}" in strided[0]
    # SARIF: one FF004 per source line, not one per PTX access.
    sarif = json.loads(_analyze(THREAD_PER_ROW, "--format", "sarif"))
    results = sarif["runs"][0]["results"]
    lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"]
             for r in results if r["ruleId"] == "FF004"]  # fmt: skip
    assert sorted(lines) == [15, 19, 22]


def test_guessed_inputs_are_ranked_under_the_recommendation_with_their_annotation(
    tmp_path: Path,
) -> None:
    table = _analyze(WARP_PER_ROW)
    section = table.split("  guessed inputs, the one the recommendation rests on most first:\n")
    assert len(section) == 2, table
    items = [line for line in section[1].splitlines() if line.startswith("    - ")]
    assert len(items) == 2
    size = next(item for item in items if item.startswith("    - problem size"))
    # Launched 1-D, the kernel is 1-D whatever cooperative groups read; the grid needs `rows`.
    assert size.startswith("    - problem size (1048576 threads, the default: the grid needs"
                           " `rows`, not known in this file)")
    assert "Pin it with `// flipflop: rows=…` above the launch." in size
    columns = next(item for item in items if item.startswith("    - kernel argument"))
    assert columns.startswith("    - kernel argument columns (its value is unknown: the loops at"
                              " lines 22, 28 and 33 assume 16 trips)")
    assert "Pin it with `// flipflop: columns=…` above the launch." in columns
    [kernel] = _json(WARP_PER_ROW)["kernels"]
    assumptions = kernel["launch"]["assumptions"]
    assert sorted(a["kind"] for a in assumptions) == ["parameter", "problem size"]
    # Ranked as printed: the first line is the first assumption.
    assert items[0].startswith(("    - problem size", "    - kernel argument"))
    assert (assumptions[0]["kind"] == "problem size") == items[0].startswith("    - problem")
    influence = [a["influence"] for a in assumptions]
    assert influence == sorted(influence, reverse=True)
    for assumption in assumptions:
        assert [v["variation"] for v in assumption["variations"]] in (
            ["4× larger", "4× smaller"], ["4× more trips", "4× fewer trips"]
        )
        assert all(v["recommendation"]["block"] for v in assumption["variations"])
    # Saying what the source does not: the guesses are gone.
    pinned = tmp_path / WARP_PER_ROW.name
    pinned.write_text(
        WARP_PER_ROW.read_text().replace(
            "    softmax_warp_rows<<<",
            "    // flipflop: threads=512,512 columns=1024\n    softmax_warp_rows<<<",
        )
    )
    [pinned_kernel] = _json(pinned)["kernels"]
    assert pinned_kernel["launch"]["problem_size_from"] == "annotation"
    assert pinned_kernel["launch"]["assumptions"] == []
    assert "guessed inputs" not in _analyze(pinned)


def test_a_guess_that_moves_the_pick_is_an_information_finding_on_the_launch() -> None:
    """SAXPY on an A100 with the 2^20-thread default: a problem 4× smaller fills too few waves
    for today's pick, so another block would be recommended."""
    # On the point predictions: the other block's saving is within the model's error.
    sarif = json.loads(_analyze(SAXPY, "--gpu", "a100-sxm4-80gb", "--format", "sarif",
                                "--min-saving", "0.001", "--confidence", "off"))
    run = sarif["runs"][0]
    rule = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "FF012")
    assert rule["helpUri"] == RULES["FF012"].href
    assert (REPO / "docs" / "rules" / "FF012.md").is_file()
    [result] = [r for r in run["results"] if r["ruleId"] == "FF012"]
    assert result["level"] == "note"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 16
    message = result["message"]["text"]
    assert re.match(r"The recommended block \d+ on NVIDIA A100-SXM4-80GB rests on a guess: "
                    r"problem size \(1048576 threads, the default", message), message
    assert re.search(r"4× (smaller|larger), block \d+ would be recommended instead \(block \d+"
                     r" would then use \d+% more energy\)", message), message
    # The grid covers `n` threads, a parameter of run_saxpy that nothing here calls.
    assert message.endswith("Pin it with `// flipflop: n=…` above the launch.")
    # The size given on the command line is no guess.
    given = json.loads(_analyze(SAXPY, "--gpu", "a100-sxm4-80gb", "--threads", "1048576",
                                "--format", "sarif", "--min-saving", "0.001"))
    assert not [r for r in given["runs"][0]["results"] if r["ruleId"] == "FF012"]
