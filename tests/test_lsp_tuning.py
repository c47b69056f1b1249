"""A kernel with compile-time tunables in the editor: the space's code lens, hover and the
quick fix that rewrites the #define defaults, over stdio with pytest-lsp and real compilers."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from flipflop.source import parse_source
from lsp_fixtures.harness import diagnostics_for, open_document, running_server

pytestmark = pytest.mark.usefixtures("cuda_toolchain")

SOURCE = (Path(__file__).parent / "tunable" / "tunable_scale.cu").read_text().replace(
    "// flipflop: tune block_size_x=32..1024:32 tile_size=1,2,4,8",
    "// flipflop: tune block_size_x=64,256,1024 tile_size=1,8",
)


async def test_a_tunable_kernel_gets_a_lens_a_hover_and_a_defaults_fix(tmp_path: Path) -> None:
    path = tmp_path / "tunable_scale.cu"
    path.write_text(SOURCE)
    settings = {"gpu": "rtx3090", "minSaving": 0.0}
    async with running_server("visual-studio-code", settings=settings) as client:
        uri = open_document(client, path, SOURCE)
        published = await diagnostics_for(client, uri, version=1)
        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        )
        assert lenses, "a code lens above the tunable kernel"
        (lens,) = lenses
        assert lens.command is not None
        assert "energy-optimal block_size_x=" in lens.command.title
        assert "of 6 configurations worth measuring" in lens.command.title

        kernel_line = next(i for i, line in enumerate(SOURCE.splitlines())
                           if "__global__" in line)
        hover = await client.text_document_hover_async(
            lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                            position=lsp.Position(line=kernel_line, character=30))
        )
        assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
        markdown = hover.contents.value
        assert "Search space: 6 configurations of 2 tunables" in markdown
        assert "| block\\_size\\_x tile\\_size (block) |" in markdown

        fixes = [d for d in published.diagnostics if d.code == "FF013"]
        if not fixes:
            # The defaults (256, 1) are already the recommendation: nothing to fix.
            assert "block_size_x=256, tile_size=1" in lens.command.title
            return
        (finding,) = fixes
        actions = await client.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=finding.range,
                context=lsp.CodeActionContext(diagnostics=[finding]),
            )
        )
        assert actions
        preferred = next(a for a in actions if isinstance(a, lsp.CodeAction) and a.is_preferred)
        assert preferred.edit is not None and preferred.edit.document_changes
        change = preferred.edit.document_changes[0]
        assert isinstance(change, lsp.TextDocumentEdit)
        lines = SOURCE.splitlines(keepends=True)
        for edit in sorted(change.edits, key=lambda e: (e.range.start.line,
                                                        e.range.start.character), reverse=True):
            assert isinstance(edit, lsp.TextEdit)
            line = lines[edit.range.start.line]
            lines[edit.range.start.line] = (line[: edit.range.start.character] + edit.new_text
                                            + line[edit.range.end.character :])
        fixed = parse_source("".join(lines))
        defaults = {d.name: d.value for d in fixed.definitions if d.is_default}
        assert "block_size_x=" + defaults["block_size_x"] in lens.command.title
        assert "tile_size=" + defaults["tile_size"] in lens.command.title
