"""The language server outlives every failure: a missing or hanging nvcc, bad settings, huge,
broken, binary or unsaved documents. Each failure becomes a diagnostic or a message, and the
server keeps answering requests afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from flipflop.rules import RULES
from lsp_fixtures.harness import (
    HEADS,
    REPO,
    RecordingClient,
    change_and_save,
    diagnostics_for,
    environment_without_nvcc,
    open_document,
    running_server,
    wait_until,
)

HANGING_NVCC = REPO / "tests" / "fake_tools" / "hanging_nvcc"
needs_nvcc = pytest.mark.usefixtures("cuda_toolchain")


async def _still_answers(client: RecordingClient, uri: str) -> None:
    """Hover and code lens requests return (nothing to show) instead of hanging or failing."""
    document = lsp.TextDocumentIdentifier(uri=uri)
    hover = await client.text_document_hover_async(
        lsp.HoverParams(text_document=document, position=lsp.Position(line=7, character=18))
    )
    assert hover is None
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(text_document=document))
    assert not lenses


def _single_toolchain_failure(published: lsp.PublishDiagnosticsParams) -> lsp.Diagnostic:
    assert len(published.diagnostics) == 1, [d.message for d in published.diagnostics]
    diagnostic = published.diagnostics[0]
    assert diagnostic.code == "FF010"
    assert diagnostic.source == "flipflop"
    assert diagnostic.severity == lsp.DiagnosticSeverity.Error
    assert diagnostic.code_description is not None
    assert diagnostic.code_description.href == RULES["FF010"].href
    return diagnostic


def _errors_shown(client: RecordingClient) -> list[str]:
    return [m.message for m in client.messages if m.type == lsp.MessageType.Error]


async def _saved_twice(client: RecordingClient, uri: str, text: str) -> None:
    """A second save of other text: the failure stays one diagnostic and is not shown again."""
    change_and_save(client, uri, text + "\n", version=2)
    again = await diagnostics_for(client, uri, version=2)
    _single_toolchain_failure(again)


async def test_nvcc_path_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "cuda" / "bin" / "nvcc"
    text = HEADS.read_text()
    async with running_server("visual-studio-code", settings={"nvccPath": str(missing)}) as client:
        uri = open_document(client, tmp_path / "heads.cu", text)
        diagnostic = _single_toolchain_failure(await diagnostics_for(client, uri, version=1))
        assert str(missing) in diagnostic.message
        assert "flipflop.nvccPath" in diagnostic.message  # says how to fix it
        await _still_answers(client, uri)
        await _saved_twice(client, uri, text)
        assert len(_errors_shown(client)) == 1
        assert str(missing) in _errors_shown(client)[0]


async def test_environment_without_any_nvcc(tmp_path: Path) -> None:
    command, env = environment_without_nvcc(tmp_path)
    text = HEADS.read_text()
    async with running_server("neovim", env=env, command=command) as client:
        uri = open_document(client, tmp_path / "heads.cu", text)
        diagnostic = _single_toolchain_failure(await diagnostics_for(client, uri, version=1))
        assert diagnostic.message.startswith("nvcc not found")
        assert "pip install 'flipflop[nvcc]'" in diagnostic.message
        await _still_answers(client, uri)
        await _saved_twice(client, uri, text)
        assert len(_errors_shown(client)) == 1


def _stop_fake_compiler(child_pid_file: Path) -> None:
    """Kill the fake compiler's process group: a server that exits while discovery still waits
    on `nvcc --version` leaves it behind."""
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        os.killpg(os.getpgid(int(child_pid_file.read_text())), signal.SIGKILL)


async def test_hanging_nvcc_times_out(tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    env = dict(os.environ, FLIPFLOP_TEST_CHILD_PID=str(child_pid_file))
    settings = {"nvccPath": str(HANGING_NVCC), "compileTimeout": 2}
    text = HEADS.read_text()
    try:
        async with running_server("visual-studio-code", settings=settings, env=env) as client:
            uri = open_document(client, tmp_path / "heads.cu", text)
            diagnostic = _single_toolchain_failure(await diagnostics_for(client, uri, version=1))
            assert "within 2 s" in diagnostic.message
            assert "flipflop.compileTimeout" in diagnostic.message
            _stop_fake_compiler(child_pid_file)
            await _still_answers(client, uri)
            await _saved_twice(client, uri, text)
            assert len(_errors_shown(client)) == 1
    finally:
        _stop_fake_compiler(child_pid_file)


@needs_nvcc
async def test_bad_settings_are_reported_and_defaults_used(tmp_path: Path) -> None:
    settings = {
        "gpu": "gtx-9999",
        "slack": "a lot",
        "maxFileSize": -5,
        "compileTimeout": 0,
        "inlayHints": "yes",
        "someFutureKey": 3,
    }
    async with running_server("visual-studio-code", settings=settings) as client:
        uri = open_document(client, tmp_path / "heads.cu", HEADS.read_text())
        published = await diagnostics_for(client, uri, version=1)
        warnings = [m.message for m in client.messages if m.type == lsp.MessageType.Warning]
        for key in ("gpu", "slack", "maxFileSize", "compileTimeout", "inlayHints"):
            assert any(m.startswith(f"flipflop.{key}:") for m in warnings), (key, warnings)
        assert not any("someFutureKey" in m for m in warnings)
        assert any("gtx-9999" in m and "rtx3070" in m for m in warnings)
        # The analysis ran with the defaults: the default GPU and a 5% slack.
        ff001 = next(d for d in published.diagnostics if d.code == "FF001")
        assert "NVIDIA GeForce RTX 3070" in ff001.message
        assert "within 5% of the fastest" in ff001.message


@needs_nvcc
async def test_settings_from_initialization_options(tmp_path: Path) -> None:
    options = {"flipflop": {"gpu": "h100-sxm", "minSaving": 0.5}}
    async with running_server("neovim", initialization_options=options) as client:
        uri = open_document(client, tmp_path / "heads.cu", HEADS.read_text())
        published = await diagnostics_for(client, uri, version=1)
        ff001 = next(d for d in published.diagnostics if d.code == "FF001")
        assert "H100" in ff001.message


@needs_nvcc
async def test_files_above_the_size_limit_are_skipped_with_a_notice(tmp_path: Path) -> None:
    padding = "// padding\n" * 200
    text = HEADS.read_text() + padding
    async with running_server("visual-studio-code", settings={"maxFileSize": 1024}) as client:
        uri = open_document(client, tmp_path / "big.cu", text)
        published = await diagnostics_for(client, uri, version=1)
        assert list(published.diagnostics) == []
        notices = [m.message for m in client.messages if "maxFileSize" in m.message]
        assert len(notices) == 1 and "big.cu" in notices[0]
        # Within the limit again, it is analysed.
        change_and_save(client, uri, HEADS.read_text(), version=2)
        small = await diagnostics_for(client, uri, version=2)
        assert any(d.code == "FF001" for d in small.diagnostics)


@needs_nvcc
async def test_compile_error_is_reported_at_its_line(tmp_path: Path) -> None:
    text = HEADS.read_text().replace(
        "row[i] = row[i] * scale[head];", "row[i] = row[i] * scale[head] + undefined_name;"
    )
    line = next(n for n, t in enumerate(text.splitlines()) if "undefined_name" in t)
    async with running_server("neovim") as client:
        uri = open_document(client, tmp_path / "broken.cu", text)
        published = await diagnostics_for(client, uri, version=1)
        errors = [d for d in published.diagnostics if d.code == "FF009"]
        assert errors, [d.message for d in published.diagnostics]
        assert errors[0].severity == lsp.DiagnosticSeverity.Error
        assert errors[0].range.start.line == line
        assert "undefined_name" in errors[0].message
        await _still_answers(client, uri)


@needs_nvcc
async def test_untitled_spaced_and_binary_documents(tmp_path: Path) -> None:
    spaced = tmp_path / "my kernels (v2)" / "heads copy.cu"
    spaced.parent.mkdir()
    spaced.write_text(HEADS.read_text())
    garbage = bytes(range(256)).decode("latin-1") * 4
    async with running_server("visual-studio-code") as client:
        spaced_uri = open_document(client, spaced, spaced.read_text())
        untitled_uri = open_document(client, "untitled:Untitled-1", HEADS.read_text())
        binary_uri = open_document(client, tmp_path / "garbage.cu", garbage)

        spaced_result = await diagnostics_for(client, spaced_uri, version=1)
        assert any(d.code == "FF001" for d in spaced_result.diagnostics)
        untitled_result = await diagnostics_for(client, untitled_uri, version=1)
        assert any(d.code == "FF001" for d in untitled_result.diagnostics)
        binary_result = await diagnostics_for(client, binary_uri, version=1)
        assert binary_result.diagnostics
        assert all(d.code in ("FF009", "FF010") for d in binary_result.diagnostics)
        assert any(d.severity == lsp.DiagnosticSeverity.Error for d in binary_result.diagnostics)

        # The server is alive and still serves the good documents.
        hover = await client.text_document_hover_async(
            lsp.HoverParams(
                text_document=lsp.TextDocumentIdentifier(uri=spaced_uri),
                position=lsp.Position(line=19, character=6),
            )
        )
        assert hover is not None
        await _still_answers(client, binary_uri)


async def test_save_of_a_document_never_opened(tmp_path: Path) -> None:
    ghost = (tmp_path / "ghost.cu").as_uri()
    async with running_server("visual-studio-code") as client:
        client.text_document_did_save(
            lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=ghost))
        )
        await wait_until(
            lambda: any("ghost.cu" in m.message for m in client.log_messages),
            "a log line about the unreadable document",
        )
        await _still_answers(client, ghost)



@needs_nvcc
async def test_ptxas_rejection_is_reported_at_the_inline_asm(tmp_path: Path) -> None:
    # nvcc passes inline asm through unchecked; ptxas for sm_75 then rejects an sm_80 instruction.
    text = (
        "__global__ void waits(float* out)\n"
        "{\n"
        '    asm volatile("cp.async.wait_all;\\n" ::);\n'
        "    out[threadIdx.x] = 1.0f;\n"
        "}\n"
    )
    async with running_server("visual-studio-code", settings={"gpu": "quadro-rtx5000"}) as client:
        uri = open_document(client, tmp_path / "waits.cu", text)
        published = await diagnostics_for(client, uri, version=1)
        errors = [d for d in published.diagnostics if d.code == "FF009"]
        assert len(errors) == 1, [d.message for d in published.diagnostics]
        assert errors[0].range.start.line == 2
        assert "ptxas" in errors[0].message and "sm_80" in errors[0].message
        await _still_answers(client, uri)
