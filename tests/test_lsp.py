"""End-to-end tests of the language server over stdio, with real nvcc on real .cu files.

Each test starts `python -m flipflop.lsp --stdio` and talks to it with pytest-lsp's client using
the capabilities VS Code and Neovim announce.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from flipflop.rules import RULES
from flipflop.units import format_energy, format_shape, format_time
from lsp_fixtures.harness import (
    HEADS,
    PRESETS,
    RecordingClient,
    apply_edits,
    change_and_save,
    diagnostics_for,
    open_document,
    running_server,
)

pytestmark = pytest.mark.usefixtures("cuda_toolchain")

LAUNCH_LINE = 19  # 0-based line of `scale_heads<<<kNumHeads, 1024>>>` in heads.cu
GPU_NAME = "NVIDIA GeForce RTX 3070"  # the default profile, rtx3070


def _heads_copy(directory: Path, name: str = "heads.cu") -> Path:
    target = directory / name
    target.write_text(HEADS.read_text())
    return target


def _ff001(params: lsp.PublishDiagnosticsParams) -> lsp.Diagnostic:
    found = [d for d in params.diagnostics if d.code == "FF001"]
    assert len(found) == 1, [d.message for d in params.diagnostics]
    return found[0]


def _cli_json(path: Path, *args: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "flipflop.cli", "analyze", str(path), "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    parsed: dict[str, Any] = json.loads(run.stdout)
    return parsed


def _plain(value: Any) -> Any:
    """A custom request's result as JSON types (the client hands objects back as named tuples)."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


async def _code_actions(
    client: RecordingClient, uri: str, diagnostic: lsp.Diagnostic
) -> list[lsp.CodeAction]:
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(
                diagnostics=[diagnostic], only=[lsp.CodeActionKind.QuickFix]
            ),
        )
    )
    assert result is not None
    return [a for a in result if isinstance(a, lsp.CodeAction)]


@pytest.mark.parametrize("preset", PRESETS)
async def test_wasteful_launch_is_diagnosed_and_its_fix_applies(
    preset: str, tmp_path: Path
) -> None:
    source = _heads_copy(tmp_path)
    text = source.read_text()
    async with running_server(preset) as client:
        uri = open_document(client, source, text)
        published = await diagnostics_for(client, uri, version=1)
        diagnostic = _ff001(published)
        assert diagnostic.source == "flipflop"
        assert diagnostic.severity == lsp.DiagnosticSeverity.Warning
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href == RULES["FF001"].href
        assert diagnostic.code_description.href.endswith("docs/rules/FF001.md")
        assert GPU_NAME in diagnostic.message
        # The saving with the model's error on it, at the default 80% level.
        assert re.search(r"could use \d+% \(\d+% to \d+% at 80%\) less energy with block \d+",
                         diagnostic.message)
        # The diagnostic sits on the block argument of the launch.
        assert diagnostic.range.start.line == LAUNCH_LINE
        launch_line = text.splitlines()[LAUNCH_LINE]
        start, end = diagnostic.range.start.character, diagnostic.range.end.character
        assert launch_line[start:end] == "1024"

        actions = await _code_actions(client, uri, diagnostic)
        assert actions, "no quick fix offered"
        assert all(a.kind == lsp.CodeActionKind.QuickFix for a in actions)
        preferred = [a for a in actions if a.is_preferred]
        assert len(preferred) == 1
        edit = preferred[0].edit
        assert edit is not None and edit.document_changes
        change = edit.document_changes[0]
        assert isinstance(change, lsp.TextDocumentEdit)
        assert change.text_document.uri == uri
        assert change.text_document.version == 1
        text_edits = [e for e in change.edits if isinstance(e, lsp.TextEdit)]
        fixed = apply_edits(text, text_edits)
        block = re.search(r"Use block (\d+)", preferred[0].title)
        assert block is not None
        assert f"scale_heads<<<kNumHeads, {block.group(1)}>>>" in fixed

        # The fixed file compiles with the real nvcc ...
        source.write_text(fixed)
        compiled = subprocess.run(
            ["nvcc", "-ptx", "-arch=sm_86", str(source), "-o", str(tmp_path / "fixed.ptx")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert compiled.returncode == 0, compiled.stderr
        # ... and its new analysis no longer reports the launch.
        change_and_save(client, uri, fixed, version=2)
        again = await diagnostics_for(client, uri, version=2)
        assert not [d for d in again.diagnostics if d.code in ("FF001", "FF009", "FF010")]


async def test_a_saving_within_the_model_error_is_held_back_and_said_so(tmp_path: Path) -> None:
    source = tmp_path / "modest_saving.cu"
    source.write_text((Path(__file__).parent / "corpus" / "confidence" / "modest_saving.cu")
                      .read_text())
    line = next(i for i, text in enumerate(source.read_text().splitlines()) if "<<<" in text)
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, source, source.read_text())
        published = await diagnostics_for(client, uri, version=1)
        assert not [d for d in published.diagnostics if d.code == "FF001"]
        hover = await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            position=lsp.Position(line=line, character=6)))
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        markdown = hover.contents.value
        assert "Recommended block **256**" in markdown and "the launch as written." in markdown
        assert re.search(r"Block \d+ is predicted to use \d+% \(-?\d+% to \d+% at 80%\) less "
                         r"energy than the launch as written: within the model's error",
                         markdown), markdown
    async with running_server("visual-studio-code", settings={"confidence": "off"}) as client:
        uri = open_document(client, source, source.read_text())
        published = await diagnostics_for(client, uri, version=1)
        assert [d for d in published.diagnostics if d.code == "FF001"]


async def test_hover_inlay_hints_and_lens_show_the_cli_numbers(tmp_path: Path) -> None:
    source = _heads_copy(tmp_path)
    report = _cli_json(source)
    kernel = report["kernels"][0]
    current = next(c for c in kernel["configs"] if c["block"] == kernel["launch"]["block"])
    recommendation = kernel["recommendation"]
    current_energy = format_energy(current["energy_j"])
    current_time = format_time(current["time_s"])
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, source, source.read_text())
        await diagnostics_for(client, uri, version=1)
        document = lsp.TextDocumentIdentifier(uri=uri)

        hover = await client.text_document_hover_async(
            lsp.HoverParams(
                text_document=document, position=lsp.Position(line=LAUNCH_LINE, character=6)
            )
        )
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        assert hover.contents.kind == lsp.MarkupKind.Markdown
        markdown = hover.contents.value
        assert GPU_NAME in markdown
        assert current_energy in markdown and current_time in markdown
        assert format_energy(recommendation["energy_j"]) in markdown
        assert f"Recommended block **{format_shape(tuple(recommendation['block']))}**" in markdown
        heuristic = kernel["baseline"]["occupancy_heuristic"]
        assert format_energy(heuristic["energy_j"]) in markdown

        hints = await client.text_document_inlay_hint_async(
            lsp.InlayHintParams(
                text_document=document,
                range=lsp.Range(start=lsp.Position(line=0, character=0),
                                end=lsp.Position(line=40, character=0)),
            )
        )
        assert hints is not None and len(hints) == 1
        hint = hints[0]
        assert hint.position.line == LAUNCH_LINE
        label = hint.label if isinstance(hint.label, str) else "".join(p.value for p in hint.label)
        assert current_energy in label and current_time in label

        # VS Code shows work-done progress while the file compiles.
        kinds = [
            [type(report).__name__ for report in reports]
            for reports in client.progress_reports.values()
        ]
        assert ["WorkDoneProgressBegin", "WorkDoneProgressEnd"] in kinds

        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=document)
        )
        assert lenses is not None and len(lenses) == 1
        assert lenses[0].command is not None
        title = lenses[0].command.title
        assert format_shape(tuple(recommendation["block"])) in title
        assert format_energy(recommendation["energy_j"]) in title


async def test_lenses_and_hints_follow_their_settings(tmp_path: Path) -> None:
    source = _heads_copy(tmp_path)
    settings = {"codeLens": False, "inlayHints": False}
    async with running_server("neovim", settings=settings) as client:
        uri = open_document(client, source, source.read_text())
        await diagnostics_for(client, uri, version=1)
        document = lsp.TextDocumentIdentifier(uri=uri)
        whole = lsp.Range(start=lsp.Position(line=0, character=0),
                          end=lsp.Position(line=40, character=0))

        async def lenses_and_hints() -> tuple[int, int]:
            lenses = await client.text_document_code_lens_async(
                lsp.CodeLensParams(text_document=document)
            )
            hints = await client.text_document_inlay_hint_async(
                lsp.InlayHintParams(text_document=document, range=whole)
            )
            return len(lenses or []), len(hints or [])

        assert await lenses_and_hints() == (0, 0)

        # Changing the settings re-analyses the open document and turns both back on.
        client.set_configuration({"codeLens": True, "inlayHints": True, "gpu": "a100-sxm4-80gb"},
                                 section="flipflop")
        before = len(client.published)
        client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={}))
        published = await diagnostics_for(client, uri, after=before)
        assert "A100" in _ff001(published).message
        assert await lenses_and_hints() == (1, 1)


async def test_save_storm_ends_with_the_last_version_only(tmp_path: Path) -> None:
    source = _heads_copy(tmp_path)
    text = source.read_text()
    blocks = [1024 - 32 * k for k in range(20)]
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, source, text)
        for version, block in enumerate(blocks, start=2):
            change_and_save(client, uri, text.replace("1024>>>", f"{block}>>>"), version)
        last_version = len(blocks) + 1
        final = await diagnostics_for(client, uri, version=last_version)
        assert f"<<<…, {blocks[-1]}>>>" in _ff001(final).message
        # Give any straggler the chance to arrive, then check nothing stale came after.
        analysed = await client.protocol.send_request_async(
            "flipflop/analyzeDocument", {"textDocument": {"uri": uri}}
        )
        assert analysed is not None
        ours = [p for p in client.published if p.uri == uri]
        versions = [p.version for p in ours]
        assert versions == sorted(versions), versions
        assert versions[-1] == last_version
        assert all(v == last_version for v in versions[versions.index(last_version):])
        # Superseded saves were cancelled rather than all analysed in turn.
        assert len(set(versions)) < len(blocks) + 1


async def test_did_close_clears_diagnostics(tmp_path: Path) -> None:
    source = _heads_copy(tmp_path)
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, source, source.read_text())
        first = await diagnostics_for(client, uri, version=1)
        assert first.diagnostics
        before = len(client.published)
        client.text_document_did_close(
            lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        )
        cleared = await diagnostics_for(client, uri, after=before)
        assert list(cleared.diagnostics) == []


async def test_custom_requests(tmp_path: Path) -> None:
    source = _heads_copy(tmp_path)
    async with running_server("visual-studio-code") as client:
        profiles = _plain(await client.protocol.send_request_async("flipflop/profiles", {}))
        ids = {p["id"] for p in profiles}
        assert {"rtx3070", "a100-sxm4-80gb", "h100-sxm"} <= ids
        assert all(p["name"] and p["arch"].startswith("sm_") for p in profiles)

        uri = open_document(client, source, source.read_text())
        await diagnostics_for(client, uri, version=1)
        analysed = _plain(
            await client.protocol.send_request_async(
                "flipflop/analyzeDocument", {"textDocument": {"uri": uri}}
            )
        )
        assert analysed["kernels"] == 1
        assert analysed["diagnostics"] >= 1

        chart = _plain(
            await client.protocol.send_request_async(
                "flipflop/kernelChart",
                {"textDocument": {"uri": uri}, "position": {"line": LAUNCH_LINE, "character": 4}},
            )
        )
        assert chart["kernel"].startswith("scale_heads")
        assert chart["gpu"]["id"] == "rtx3070"
        assert chart["current"]["block"] == [1024, 1, 1]
        # 32..1024 in steps of 32, less block 32: with one block per head of 64 values it
        # would skip half of each head, so the advisor excludes it.
        assert len(chart["points"]) == 31
        assert [32, 1, 1] not in [p["block"] for p in chart["points"]]
        assert any(p["pareto"] for p in chart["points"])
        assert chart["recommendation"]["energy_j"] <= chart["current"]["energy_j"]

        unknown = await client.protocol.send_request_async(
            "flipflop/analyzeDocument", {"textDocument": {"uri": "file:///nowhere/x.cu"}}
        )
        assert unknown is None


async def test_unsaved_edits_are_analysed_after_the_debounce(tmp_path: Path) -> None:
    source = _heads_copy(tmp_path)
    text = source.read_text()
    async with running_server("neovim", settings={"debounceMs": 1000}) as client:
        uri = open_document(client, source, text)
        await diagnostics_for(client, uri, version=1)
        for version, block in ((2, 256), (3, 512)):
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[
                        lsp.TextDocumentContentChangeWholeDocument(
                            text=text.replace("1024>>>", f"{block}>>>")
                        )
                    ],
                )
            )
        edited = await diagnostics_for(client, uri, version=3)
        assert "<<<…, 512>>>" in _ff001(edited).message
        assert 2 not in [p.version for p in client.published if p.uri == uri]
