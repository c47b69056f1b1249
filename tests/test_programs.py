"""Whole programs, compiled by the real nvcc: how each launch is read (block, grid, where the
size came from, what it waits for) when kernels, launches and sizes are spread over a program.

The corpus files under `tests/corpus/programs/` are written the way real code is: a runner with
`dim3` set up above each launch and sizes passed down from `main`, templates instantiated from
a `switch` over block sizes, grids decided at run time, kernels in included headers,
cooperative groups in a kernel launched 1-D, a block that only covers a row of known width.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from functools import cache
from pathlib import Path
from typing import Any

import pytest

PROGRAMS = Path(__file__).parent / "corpus" / "programs"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

pytestmark = pytest.mark.usefixtures("cuda_toolchain")


def _run(path: Path, *args: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "analyze", str(path), *args],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run.stdout


@cache
def _json(path: Path, *args: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(_run(path, "--format", "json", *args))
    return parsed


def _kernel(report: dict[str, Any], display_start: str) -> dict[str, Any]:
    found = [k for k in report["kernels"] if k["display_name"].startswith(display_start)]
    assert len(found) == 1, [k["display_name"] for k in report["kernels"]]
    return found[0]


def _launches(kernel: dict[str, Any]) -> list[dict[str, Any]]:
    return [kernel["launch"], *kernel["other_launches"]]


def _guess_names(launch: dict[str, Any]) -> list[str]:
    return [a["name"] for a in launch["assumptions"]]


# ------------------------------------------------------------------ a multi-kernel runner


def test_runner_launches_read_dim3_set_up_above_them_with_sizes_from_main() -> None:
    report = _json(PROGRAMS / "sgemm_runner.cu")
    expected = {
        # kernel: (block, grid or threads, line of the launch)
        "mm_naive(": ((32, 32, 1), ("threads", [4096, 4096, 1]), 76),
        "void mm_coalesced<32>(": ((1024, 1, 1), ("grid", [128, 128, 1]), 83),
        "void mm_shared_tiles<32>(": ((1024, 1, 1), ("grid", [128, 128, 1]), 91),
        "void mm_column_strip<64, 64, 8, 8>(": ((512, 1, 1), ("grid", [64, 64, 1]), 103),
    }
    assert len(report["kernels"]) == len(expected)
    for start, (block, (key, size), line) in expected.items():
        kernel = _kernel(report, start)
        [launch] = _launches(kernel)
        # `dim3 blockDim(32 * 32)`, `dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32))` with M and N
        # passed from main through run_kernel: the launch site says it all.
        assert tuple(launch["block"]) == block, start
        assert launch[key] == size, start
        assert launch["line"] == line
        assert launch["problem_size_from"] == "launch site"
        assert launch["problem_size_assumed"] is False
        assert launch["needs"] == []
        # K arrives from main too: no loop waits for it.
        assert not [name for name in _guess_names(launch) if name.startswith("kernel argument")]
        assert kernel["recommendation"]["energy_saving_vs_current"] is not None


def test_a_kernel_from_an_included_header_is_matched_to_its_launch_here() -> None:
    kernel = _kernel(_json(PROGRAMS / "sgemm_runner.cu"), "void mm_column_strip<")
    assert kernel["source"]["file"].endswith("sgemm_runner_kernels.cuh")
    assert kernel["launch"]["line"] == 103
    assert kernel["features"]["source_parameters"] == ["M", "N", "K", "alpha", "A", "B", "beta",
                                                       "C"]


# ------------------------------------------------------------------ runtime grids


def test_a_grid_decided_at_run_time_names_what_it_needs_and_the_annotation() -> None:
    path = PROGRAMS / "runtime_grids.cu"
    report = _json(path)
    softmax = _kernel(report, "head_softmax(")["launch"]
    # `dim3 grid_dim(B, NH)`: fixed whatever the block, but B and NH come from a caller that is
    # not in this file. The default is a fixed grid too, and it says so.
    assert softmax["problem_size_from"] == "default" and softmax["problem_size_assumed"]
    assert softmax["grid"] == [64, 64, 1] and softmax["block"] == [256, 1, 1]
    assert softmax["needs"] == ["B", "NH"]
    [size] = [a for a in softmax["assumptions"] if a["kind"] == "problem size"]
    assert size["annotation"] == "// flipflop: B=… NH=…"
    assert "the grid needs `B` and `NH`, not known in this file" in size["assumed"]

    bias = _kernel(report, "add_bias(")
    inside, in_main = sorted(_launches(bias), key=lambda launch: launch["line"])
    assert inside["block"] is None  # `block_size` is a parameter nothing here passes
    assert inside["needs"] == ["N", "C", "block_size"]
    assert in_main["block"] == [256, 1, 1]
    # `const int n = argc > 1 ? atoi(argv[1]) : 1024`: the variable, not `argc`, is asked for.
    assert in_main["needs"] == ["n"]
    assert in_main["threads"] == [1 << 20, 1, 1]

    table = _run(path, "--kernel", "add_bias")
    assert ("  launch at line 64: 1048576 threads assumed (the default: the grid needs `N`, `C`"
            " and `block_size`, not known in this file; give them with `// flipflop: N=… C=…"
            " block_size=…` above the launch)") in table
    assert "time, energy and traffic below are for this assumed size" in table
    assert ("    block as written: `block_size` is not known in this file; give it with"
            " `// flipflop: block_size=…` above the launch") in table
    assert "at the assumed size" in table


def test_the_annotation_the_report_asks_for_pins_the_launch(tmp_path: Path) -> None:
    source = (PROGRAMS / "runtime_grids.cu").read_text()
    pinned = tmp_path / "runtime_grids.cu"
    pinned.write_text(
        source.replace("    head_softmax<<<",
                       "    // flipflop: B=8 NH=12 T=1024\n    head_softmax<<<")
        .replace("    add_bias<<<grid_size",
                 "    // flipflop: N=4096 C=768 block_size=128\n    add_bias<<<grid_size")
    )  # fmt: skip
    (tmp_path / "runtime_grids_kernels.cuh").write_text(
        (PROGRAMS / "runtime_grids_kernels.cuh").read_text()
    )
    report = _json(pinned)
    softmax = _kernel(report, "head_softmax(")["launch"]
    assert softmax["grid"] == [8, 12, 1]
    assert softmax["problem_size_from"] == "annotation"
    assert softmax["needs"] == ["B", "NH"] and not softmax["problem_size_assumed"]
    # What is left to guess is the one loop the analysis cannot count.
    assert [a["kind"] for a in softmax["assumptions"]] == ["trip count"]
    bias = min(_launches(_kernel(report, "add_bias(")), key=lambda launch: launch["line"])
    assert bias["block"] == [128, 1, 1]
    assert bias["threads"] == [4096 * 768, 1, 1]


def test_guesses_about_a_header_kernel_use_its_source_parameter_names() -> None:
    path = PROGRAMS / "runtime_grids.cu"
    kernel = _kernel(_json(path), "void row_means<128>(")
    [argument] = [a for a in kernel["launch"]["assumptions"] if a["kind"] == "parameter"]
    assert argument["name"] == "kernel argument C"
    assert argument["annotation"] == "// flipflop: C=…"
    table = _run(path, "--kernel", "row_means")
    assert "_param_" not in table
    assert "Pin it with `// flipflop: C=…` above the launch." in table


# ------------------------------------------------------------------ switch-instantiated templates


def test_each_template_instance_gets_only_the_launch_that_instantiates_it() -> None:
    report = _json(PROGRAMS / "reduce_switch.cu", "--kernel", "reduce_many_per_thread")
    kernels = report["kernels"]
    assert len(kernels) == 3 * 11 * 2  # int, float, double × 11 block sizes × n a power of two
    sizes = {"int": 4, "float": 4, "double": 8}
    lines: dict[tuple[int, bool], set[int]] = {}
    for kernel in kernels:
        match = re.match(r"void reduce_many_per_thread<(\w+), (\d+)u, (true|false)>",
                         kernel["display_name"])
        assert match, kernel["display_name"]
        element, block, pow2 = match[1], int(match[2]), match[3] == "true"
        assert kernel["other_launches"] == []  # one `case` of one `switch`, not all 22
        launch = kernel["launch"]
        # `case 256:` of `switch (threads)` with `dim3 block(threads, 1, 1)` above the switch.
        assert launch["block"] == [block, 1, 1]
        # `(threads <= 32) ? 2 * threads * sizeof(T) : threads * sizeof(T)`, T the instance's.
        scratch = 2 * block if block <= 32 else block
        assert launch["dynamic_smem_bytes"] == scratch * sizes[element]
        # The grid is the caller's `blocks`, not in this file.
        assert launch["needs"] == ["blocks"] and launch["problem_size_from"] == "default"
        assert "// flipflop: blocks=…" in [a["annotation"] for a in launch["assumptions"]]
        lines.setdefault((block, pow2), set()).add(launch["line"])
    # The same launch line for every element type, one line per (block, pow2).
    assert all(len(found) == 1 for found in lines.values())
    assert len({line for found in lines.values() for line in found}) == 22


def test_a_variable_reassigned_before_some_launches_folds_where_it_reaches() -> None:
    report = _json(PROGRAMS / "reduce_switch.cu", "--kernel", "reduce_warp_first")
    for kernel in report["kernels"]:
        match = re.match(r"void reduce_warp_first<(\w+), (\d+)u", kernel["display_name"])
        assert match
        size = 8 if match[1] == "double" else 4
        # `smemSize = ((threads / 32) + 1) * sizeof(T);` in `default:` reaches these launches.
        assert kernel["launch"]["dynamic_smem_bytes"] == (int(match[2]) // 32 + 1) * size
        assert not [a for a in kernel["launch"]["assumptions"]
                    if a["kind"] == "dynamic shared memory"]


def test_loops_bounded_by_the_block_size_are_counted() -> None:
    table = _run(PROGRAMS / "reduce_switch.cu", "--kernel", "reduce_interleaved")
    # `for (gap = 1; gap < blockDim.x; gap *= 2)`: no trip count is guessed any more.
    assert "trip count" not in table
    assert "read from memory" not in table
    smem = re.findall(r"dynamic shared memory \(`smemSize` (.*?)\) — ", table)
    # The block is `threads`, a parameter: the shared memory depends on it, said once.
    assert smem and all(note.startswith("is not a constant (it depends on threads)")
                        for note in smem), smem


# ------------------------------------------------------------------ cooperative groups, 1-D


def test_cooperative_groups_launched_1d_are_not_taken_as_2d() -> None:
    kernel = _kernel(_json(PROGRAMS / "cooperative_1d.cu"), "block_sums(")
    launch = kernel["launch"]
    assert kernel["features"]["uses_tid_y"]  # cg reads every thread index component
    assert launch["block"] == [256, 1, 1]
    assert launch["threads"] == [1 << 20, 1, 1] and launch["problem_size_assumed"]
    assert launch["needs"] == ["n"]
    assert all(config["block"][1:] == [1, 1] for config in kernel["configs"])
    assert kernel["recommendation"]["block"][1:] == [1, 1]


# ------------------------------------------------------------------ host constants as arguments


def test_a_row_guard_of_known_width_lets_smaller_blocks_in_and_ff001_fire() -> None:
    path = PROGRAMS / "row_guard.cu"
    kernel = _kernel(_json(path), "normalize_rows(")
    launch = kernel["launch"]
    assert launch["grid"] == [16384, 1, 1] and launch["block"] == [1024, 1, 1]
    blocks = {config["block"][0] for config in kernel["configs"]}
    # `const int width = 128` passed to the kernel: blocks of 128 threads and up write the row.
    assert {128, 256, 512}.issubset(blocks)
    excluded = {e["block"][0]: e["reason"] for e in kernel["excluded"]}
    assert set(excluded) >= {32, 64, 96} and 128 not in excluded
    assert "write 25% of the output" in excluded[32]
    assert kernel["recommendation"]["block"][0] < 1024
    sarif = json.loads(_run(path, "--format", "sarif"))
    [ff001] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "FF001"]
    assert ff001["locations"][0]["physicalLocation"]["region"]["startLine"] == 24


def test_the_example_reads_the_sequence_length_it_passes() -> None:
    kernel = _json(EXAMPLES / "attention.cu")["kernels"][0]
    names = _guess_names(kernel["launch"])
    assert not [name for name in names if "seq_len" in name], names


# ------------------------------------------------------------------ progress on the terminal


def test_the_terminal_shows_kernels_analysed_as_a_progress_bar() -> None:
    """On a terminal (stdout and stderr both ttys), a tqdm bar counts the kernels."""
    controller, terminal = pty.openpty()
    # A terminal of 24 rows and 120 columns (a new pseudo-terminal has none, and tqdm draws
    # a bar as wide as the terminal).
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "flipflop.cli", "analyze", str(PROGRAMS / "sgemm_runner.cu")],
        stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, close_fds=True,
    )  # fmt: skip
    os.close(terminal)
    seen = bytearray()
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 600)
            if not ready:
                break
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
    finally:
        process.wait(timeout=600)
        os.close(controller)
    text = seen.decode("utf-8", errors="replace")
    assert process.returncode == 0, text
    assert re.search(r"analysing kernels: +\d+%.*\| *4/4 ", text), text[-2000:]
