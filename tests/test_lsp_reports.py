"""The same readable reports in the editor, over stdio with pytest-lsp's client and real nvcc:
tied shapes and guessed inputs in the hover and the chart, one driver finding per source line,
FF012 on a launch whose recommendation rests on a guess, one error for a missing header."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from flipflop.rules import RULES
from flipflop.toolchain import Toolchain
from flipflop.toolchain.discovery import toolkit_include_dirs
from lsp_fixtures.harness import diagnostics_for, open_document, running_server

CORPUS = Path(__file__).parent / "corpus"

pytestmark = pytest.mark.usefixtures("cuda_toolchain")


def _copy(tmp_path: Path, *relative: str) -> Path:
    for name in relative:
        target = tmp_path / Path(name).name
        shutil.copy(CORPUS / name, target)
    return tmp_path / Path(relative[0]).name


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


async def test_hover_and_chart_collapse_ties_and_rank_the_guesses(tmp_path: Path) -> None:
    source = _copy(tmp_path, "softmax_warp_per_row.cu")
    launch_line = 42  # 0-based: `softmax_warp_rows<<<grid, block>>>(...)`
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, source, source.read_text())
        await diagnostics_for(client, uri, version=1)
        hover = await client.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                position=lsp.Position(line=launch_line, character=8),
            )
        )
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        markdown = hover.contents.value
        table = [line for line in markdown.splitlines() if line.startswith("| ")]
        assert 4 <= len(table) <= 10, markdown  # header and a handful of rows, not 100+
        tie = next(line for line in table if "tied*" in line)
        more = re.match(r"\| \*\+(\d+) tied\* \| default \| [\d.–]+ µs \| [\d–]+ W \| ", tie)
        assert more, tie
        summary = re.search(r"\*Tied: (\d+) shapes tie within 1% at .*\((.+)\)\.\*", markdown)
        # Launched 1-D with a covered grid: 1-D shapes only, of many sizes.
        assert summary and re.fullmatch(r"(\d+ sizes from \d+ to \d+|\d+…\d+) threads",
                                        summary[2]), markdown
        # The group's shapes with rows of their own are the rest of it.
        assert int(summary[1]) > int(more[1]) >= 10
        assert any(line.startswith("| 256 (recommended, current") for line in table)
        assert any("(NVIDIA" in line for line in table)
        guesses = markdown.split("**Guessed inputs**", 1)[1].split("\n\n", 2)[1]
        items = guesses.splitlines()
        size = next(item for item in items if item.startswith("- problem size"))
        assert size.startswith("- problem size (1048576 threads, the default")
        assert "`// flipflop: rows=…`" in size
        columns = next(item for item in items if item.startswith("- kernel argument"))
        assert columns.startswith("- kernel argument columns")
        assert "`// flipflop: columns=…`" in columns

        chart = _plain(
            await client.protocol.send_request_async(
                "flipflop/kernelChart",
                {"textDocument": {"uri": uri},
                 "position": {"line": launch_line, "character": 8}},
            )
        )
        groups = chart["tie_groups"]
        assert groups and all("shapes tie within 1%" in text for text in groups)
        tied = [p for p in chart["points"] if "tie_group" in p]
        assert tied and all(0 <= p["tie_group"] < len(groups) for p in tied)
        first = [p for p in tied if p["tie_group"] == 0]
        assert groups[0].startswith(f"{len(first)} shapes tie within 1%")


async def test_drivers_of_one_line_are_one_diagnostic(tmp_path: Path) -> None:
    source = _copy(tmp_path, "softmax_thread_per_row.cu")
    async with running_server("neovim") as client:
        uri = open_document(client, source, source.read_text())
        published = await diagnostics_for(client, uri, version=1)
        uncoalesced = [d for d in published.diagnostics if d.code == "FF004"]
        assert sorted(d.range.start.line for d in uncoalesced) == [14, 18, 21]
        by_line = {d.range.start.line: d.message for d in uncoalesced}
        assert by_line[21].startswith("strided loads and stores at line 22 (")
        assert len({d.message for d in published.diagnostics}) == len(published.diagnostics)


async def test_a_launch_whose_pick_rests_on_a_guess_gets_ff012(tmp_path: Path) -> None:
    source = _copy(tmp_path, "saxpy.cu")
    # On the point predictions: the other block's saving is within the model's error.
    settings = {"gpu": "a100-sxm4-80gb", "minSaving": 0.001, "confidence": "off"}
    async with running_server("visual-studio-code", settings=settings) as client:
        uri = open_document(client, source, source.read_text())
        published = await diagnostics_for(client, uri, version=1)
        [finding] = [d for d in published.diagnostics if d.code == "FF012"]
        assert finding.severity == lsp.DiagnosticSeverity.Information
        assert finding.source == "flipflop"
        assert finding.code_description is not None
        assert finding.code_description.href == RULES["FF012"].href
        assert finding.range.start.line == 15  # the launch
        assert "rests on a guess: problem size" in finding.message
        assert "`// flipflop: n=…`" in finding.message


async def test_a_missing_library_header_is_one_error_with_its_remedy(
    tmp_path: Path, cuda_toolchain: Toolchain
) -> None:
    if any((d / "cublas_v2.h").is_file() for d in toolkit_include_dirs(cuda_toolchain)):
        pytest.skip(f"this CUDA installation ships cuBLAS ({cuda_toolchain.nvcc})")
    source = _copy(tmp_path, "missing_header/scale_rows.cu", "missing_header/blas_helpers.h")
    async with running_server("neovim") as client:
        uri = open_document(client, source, source.read_text())
        published = await diagnostics_for(client, uri, version=1)
        [error] = published.diagnostics
        assert error.code == "FF009"
        assert error.severity == lsp.DiagnosticSeverity.Error
        assert error.range.start.line == 2  # `#include "blas_helpers.h"`
        assert "cublas_v2.h not found (#include at blas_helpers.h:5" in error.message
        assert "pip install nvidia-cublas" in error.message
        assert "flipflop.includePaths" in error.message
