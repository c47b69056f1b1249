"""Quick fixes on kernels whose code constrains the block, through a real LSP client: every code
action the server offers is applied, the edited file is compiled with nvcc, and the edited
launch is analysed again: it must meet what the kernel's code needs (no FF014, its block among
the shapes the code allows)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from cuda_toolchain import nvcc_for_tests
from flipflop.findings import findings
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from lsp_fixtures.harness import apply_edits, diagnostics_for, open_document, running_server

pytestmark = pytest.mark.usefixtures("cuda_toolchain")

CONSTRAINTS = Path(__file__).parent / "corpus" / "constraints"
# Constrained kernels whose launch the server may still improve (power of two, multiples, a
# bound, whole warps, a 1-D block), and ones it must leave alone (fixed or unsure).
IMPROVABLE = ("reduce_halving.cu", "ignores_y.cu", "stride_over_shared.cu",
              "early_return_check.cu", "warp_shuffle_full_mask.cu", "cg_tiled_partition16.cu",
              "annotated_pow2.cu", "layernorm_warp_assert.cu")
KEPT = ("jacobi_tile16.cu", "sgemm_shared_block.cu", "sgemm_blocktile_2d.cu", "define_tile.cu",
        "reduce_template_blocksize.cu", "cub_block_reduce.cu", "cub_block_scan_2d.cu",
        "unrolled_fixed_threads.cu", "runtime_check_unsure.cu", "inline_asm_ntid.cu")


async def _actions(path: Path) -> tuple[str, list[tuple[lsp.Diagnostic, lsp.CodeAction]]]:
    """The quick fixes offered on `path`, on the point predictions: every change the model
    would suggest, not only those larger than its error, so that each is checked."""
    text = path.read_text()
    async with running_server(settings={"confidence": "off"}) as client:
        uri = open_document(client, path, text)
        published = await diagnostics_for(client, uri, version=1)
        found = []
        for diagnostic in published.diagnostics:
            result = await client.text_document_code_action_async(lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=lsp.CodeActionContext(diagnostics=[diagnostic]),
            ))
            found.extend((diagnostic, a) for a in result or [] if isinstance(a, lsp.CodeAction))
        return text, found


def _edited(text: str, action: lsp.CodeAction) -> str:
    assert action.edit is not None and action.edit.document_changes
    edits: list[lsp.TextEdit] = []
    for change in action.edit.document_changes:
        assert isinstance(change, lsp.TextDocumentEdit)
        edits.extend(e for e in change.edits if isinstance(e, lsp.TextEdit))
    return apply_edits(text, edits)


def _compiles(path: Path, tmp_path: Path) -> None:
    run = subprocess.run(
        [nvcc_for_tests(), "-ptx", "-arch=sm_86", "-o", str(tmp_path / "out.ptx"), str(path)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("name", IMPROVABLE)
async def test_every_quick_fix_compiles_and_keeps_the_kernels_constraints(
    name: str, tmp_path: Path
) -> None:
    source = tmp_path / name
    source.write_text((CONSTRAINTS / name).read_text())
    text, actions = await _actions(source)
    for index, (diagnostic, action) in enumerate(actions):
        edited = tmp_path / f"fixed_{index}_{name}"
        edited.write_text(_edited(text, action))
        _compiles(edited, tmp_path)
        result = analyze(edited, None, AnalysisOptions())
        assert not [f for f in findings(result) if f.code == "FF014"
                    and f.line == diagnostic.range.start.line + 1], action.title
        for kernel in result.kernels:
            for launch in kernel.launches:
                constraints = launch.advice.constraints
                assert constraints is not None and launch.current_block is not None
                assert constraints.allows(launch.current_block), (action.title,
                                                                   constraints.summary())


async def test_an_improvable_constrained_launch_gets_a_fix() -> None:
    # The tree reduction launched with 256 threads is told to use another power of two.
    _, actions = await _actions(CONSTRAINTS / "reduce_halving.cu")
    titles = [a.title for d, a in actions if d.code == "FF001"]
    assert titles and all("Use block" in t for t in titles)


@pytest.mark.parametrize("name", KEPT)
async def test_no_block_change_is_offered_where_the_code_fixes_the_block(name: str) -> None:
    _, actions = await _actions(CONSTRAINTS / name)
    assert not [a.title for d, a in actions if d.code in ("FF001", "FF002")]
