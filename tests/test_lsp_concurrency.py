"""A big analysis in flight, over a real LSP session: the server keeps answering requests about
other documents, and a newer save of the big document stops the older run.

The big document is the fp16/bf16 KV-cache attention kernel of the corpus instantiated for eight
configurations (~2 MB of PTX with thousands of inline-asm scopes): nvcc takes seconds, and so do
parsing and modelling its kernels afterwards. Which of the two phases a run is in is read from
the process table: while nvcc, cicc or ptxas run below the server, it is compiling; once none
does, the analysis is in Python code (where a worker thread would hold the interpreter lock).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lsp_fixtures.harness import (
    HEADS,
    RecordingClient,
    big_attention_source,
    change_and_save,
    descendants,
    diagnostics_for,
    open_document,
    running_server,
    wait_until,
)

pytestmark = pytest.mark.usefixtures("cuda_toolchain")

LAUNCH_LINE = 19  # 0-based line of `scale_heads<<<kNumHeads, 1024>>>` in heads.cu
_TOOLS = ("nvcc", "cicc", "ptxas", "cudafe++", "gcc", "cc1plus", "fatbinary")


def _server_pid(client: RecordingClient) -> int:
    server = client._server  # pygls keeps the server subprocess here
    assert server is not None
    return server.pid


def _compiling(client: RecordingClient) -> bool:
    return any(name.startswith(_TOOLS) for _, name in descendants(_server_pid(client)))


def _analysing(client: RecordingClient, name: str) -> bool:
    """A work-done progress for `name` has begun and not ended."""
    for reports in client.progress_reports.values():
        begun = [r for r in reports if isinstance(r, lsp.WorkDoneProgressBegin)]
        ended = [r for r in reports if isinstance(r, lsp.WorkDoneProgressEnd)]
        if begun and not ended and name in (begun[0].message or ""):
            return True
    return False


def _published(client: RecordingClient, uri: str) -> list[int | None]:
    return [p.version for p in client.published if p.uri == uri]


def _stopped(client: RecordingClient) -> list[str]:
    return [m.message for m in client.log_messages if "stopped the analysis" in m.message]


async def _in_python_phase(client: RecordingClient, name: str) -> None:
    """Wait until the analysis of `name` has compiled and is parsing and modelling."""
    await wait_until(lambda: _analysing(client, name), f"the analysis of {name} to start")
    await wait_until(lambda: _compiling(client), "nvcc to start")
    await wait_until(lambda: not _compiling(client), "nvcc and ptxas to finish")
    assert _analysing(client, name), "the analysis ended with the compilers; make it bigger"


async def test_other_documents_are_answered_while_a_big_analysis_runs(tmp_path: Path) -> None:
    small = tmp_path / "heads.cu"
    small.write_text(HEADS.read_text())
    big = big_attention_source(tmp_path)
    async with running_server("visual-studio-code") as client:
        small_uri = open_document(client, small, small.read_text())
        await diagnostics_for(client, small_uri, version=1)
        big_uri = open_document(client, big, big.read_text())
        await _in_python_phase(client, big.name)

        document = lsp.TextDocumentIdentifier(uri=small_uri)
        position = lsp.Position(line=LAUNCH_LINE, character=6)
        hover = await client.text_document_hover_async(
            lsp.HoverParams(text_document=document, position=position)
        )
        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=document)
        )
        # answered, with the small file's numbers, before the big analysis has finished
        assert _published(client, big_uri) == [] and _analysing(client, big.name)
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        assert "Recommended block **" in hover.contents.value
        assert lenses is not None and len(lenses) == 1

        published = await diagnostics_for(client, big_uri, version=1)
        assert all(d.source == "flipflop" for d in published.diagnostics)
        assert not _stopped(client)


@pytest.mark.parametrize("phase", ["compiling", "modelling"])
async def test_a_newer_save_stops_the_older_run(tmp_path: Path, phase: str) -> None:
    big = big_attention_source(tmp_path)
    text = big.read_text()
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, big, text)
        if phase == "compiling":
            await wait_until(lambda: _analysing(client, big.name), "the analysis to start")
            await wait_until(lambda: _compiling(client), "nvcc to start")
        else:
            await _in_python_phase(client, big.name)
        change_and_save(client, uri, text.replace("0.125f", "0.0625f"), version=2)

        await diagnostics_for(client, uri, version=2)
        assert _published(client, uri) == [2]  # nothing ever came of version 1
        assert _stopped(client) == [f"stopped the analysis of {big.name} version 1: superseded"]
        # the stopped run left no compiler behind
        assert not _compiling(client)
