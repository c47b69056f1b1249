"""The language server on a file of several kernels: work-done progress counts the kernels,
and the kernels where the person is looking are analysed, and published, first."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lsp_fixtures.harness import (
    change_and_save,
    diagnostics_for,
    open_document,
    running_server,
    wait_until,
)

PROGRAMS = Path(__file__).parent / "corpus" / "programs"
NAIVE_LAUNCH = 75  # 0-based: `mm_naive<<<gridDim, blockDim>>>(…)`, 80% over the best block
STRIP_LAUNCH = 102  # 0-based: `mm_column_strip<…><<<gridDim, blockDim>>>(…)`

pytestmark = pytest.mark.usefixtures("cuda_toolchain")


def _runner_copy(directory: Path) -> Path:
    for name in ("sgemm_runner.cu", "sgemm_runner_kernels.cuh"):
        shutil.copy(PROGRAMS / name, directory / name)
    return directory / "sgemm_runner.cu"


async def test_progress_counts_kernels_and_the_kernel_in_view_is_published_first(
    tmp_path: Path,
) -> None:
    source = _runner_copy(tmp_path)
    text = source.read_text()
    async with running_server("visual-studio-code") as client:
        uri = open_document(client, source, text)
        first = await diagnostics_for(client, uri, version=1)
        assert any(d.code == "FF001" and d.range.start.line == NAIVE_LAUNCH
                   for d in first.diagnostics)
        reports = [
            report for sent in client.progress_reports.values() for report in sent
            if isinstance(report, lsp.WorkDoneProgressReport)
        ]  # fmt: skip
        assert [r.message for r in reports] == [f"{n} of 4 kernels" for n in (1, 2, 3, 4)]
        assert [r.percentage for r in reports] == [25, 50, 75, 100]

        # The person looks at the last launch, then saves an edit.
        await client.text_document_hover_async(
            lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                            position=lsp.Position(line=STRIP_LAUNCH, character=8))
        )  # fmt: skip
        after = len(client.published)
        change_and_save(client, uri, text + "// edited\n", 2)

        def version_2() -> list[lsp.PublishDiagnosticsParams]:
            return [p for p in client.published[after:] if p.uri == uri and p.version == 2]

        await wait_until(lambda: len(version_2()) >= 2, "the early and the full diagnostics")
        early, full = version_2()[:2]
        # The first batch is the kernel launched where the person looked: mm_naive's finding
        # comes with the rest.
        assert not [d for d in early.diagnostics if d.range.start.line == NAIVE_LAUNCH]
        assert any(d.code == "FF001" and d.range.start.line == NAIVE_LAUNCH
                   for d in full.diagnostics)
        assert len(full.diagnostics) > len(early.diagnostics)
