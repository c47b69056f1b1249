"""Quick-fix edits: applied to real CUDA text, re-parsed, and compiled with nvcc."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from flipflop.launch import Dim3
from flipflop.source import (
    Fix,
    LaunchSite,
    Refusal,
    SourceFile,
    apply_edits,
    parse_source,
    rewrite_launch,
    set_launch_bounds,
)

SAMPLES = Path(__file__).parent / "source_samples"
CORPUS = Path(__file__).parent / "corpus"


def launch_at(source: SourceFile, line: int) -> LaunchSite:
    (site,) = [s for s in source.launches if s.line == line - 1]
    return site


def rewritten(text: str, line: int, block: Dim3) -> tuple[str, LaunchSite]:
    """Apply the launch fix for the launch on `line`; return the new text and re-parsed launch."""
    source = parse_source(text)
    fix = rewrite_launch(source, launch_at(source, line), block)
    assert isinstance(fix, Fix), fix
    new_text = apply_edits(text, fix.edits)
    return new_text, launch_at(parse_source(new_text), line)


def line_of(text: str, line: int) -> str:
    return text.splitlines()[line - 1].strip()


@pytest.fixture(scope="module")
def forms() -> str:
    return (SAMPLES / "launch_forms.cu").read_text()


@pytest.mark.parametrize(
    ("line", "block", "expected"),
    [
        (33, (128, 1, 1), "scale<<<(n + 127) / 128, 128>>>(x, n);"),
        (35, (64, 1, 1), "scale<<<ceil_div(n, 64), 64>>>(x, n);"),
        (36, (32, 4, 1), "scale<<<DIV_UP(n, 32), dim3(32, 4)>>>(x, n);"),
        (37, (256, 1, 1), "scale<<<iDivUp(n, 256), 256>>>(x, n);"),
        (38, (96, 1, 1), "scale<<<((n + (96 - 1)) / 96), 96>>>(x, n);"),
        (39, (128, 1, 1), "scale<<<(n + 127) >> 7, 128>>>(x, n);"),
        (39, (96, 1, 1), "scale<<<(n + 95) / 96, 96>>>(x, n);"),
        (40, (128, 1, 1), "scale<<<(n - 1) / 128 + 1, 128>>>(x, n);"),
        (54, (64, 1, 1), "scale<<<dim3{(unsigned)heads, 1, 1}, dim3{64}>>>(x, n);"),
    ],
)
def test_launch_rewrites_keep_the_work_covered(forms: str, line: int, block: Dim3,
                                               expected: str) -> None:
    before = launch_at(parse_source(forms), line)
    new_text, after = rewritten(forms, line, block)
    assert line_of(new_text, line) == expected
    assert after.block_folded.value == block
    assert after.grid_axes[0].kind == before.grid_axes[0].kind
    assert after.grid_axes[0].threads_expression == before.grid_axes[0].threads_expression
    # Nothing but the launch's own line changed.
    changed = [i for i, (a, b) in enumerate(zip(forms.splitlines(), new_text.splitlines(),
                                                strict=True)) if a != b]
    assert changed == [line - 1]


def test_macro_block_is_rewritten_at_its_definition(forms: str) -> None:
    new_text, after = rewritten(forms, 34, (512, 1, 1))
    assert "#define BLOCK 512" in new_text
    assert line_of(new_text, 34) == line_of(forms, 34)
    assert after.block_folded.value == (512, 1, 1)
    assert after.grid_axes[0].kind == "covers"


def test_dim3_declaration_and_grid_follow(forms: str) -> None:
    new_text, after = rewritten(forms, 46, (32, 4, 1))
    assert "  dim3 block(32, 4);" in new_text.splitlines()
    assert "dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);" \
        in new_text
    assert after.block_folded.value == (32, 4, 1)
    assert [a.kind for a in after.grid_axes[:2]] == ["covers", "covers"]


def test_const_int_declaration_used_by_loop_launch(forms: str) -> None:
    new_text, after = rewritten(forms, 51, (512, 1, 1))
    assert "  const int threads = 512;" in new_text.splitlines()
    assert after.block_folded.value == (512, 1, 1)
    assert after.in_loop and after.grid_axes[0].kind == "covers"


def test_template_argument_that_is_the_block_size_follows(forms: str) -> None:
    new_text, after = rewritten(forms, 42, (256, 1, 1))
    assert line_of(new_text, 42) == "templated<float, 256><<<(n + 255) / 256, 256>>>(x, n);"
    assert after.template_arguments == ("float", "256")


def test_raising_past_launch_bounds_updates_them() -> None:
    text = (
        "__global__ void __launch_bounds__(256, 2) k(float* x, int n) {}\n"
        "void f(float* x, int n) { k<<<(n + 255) / 256, 256>>>(x, n); }\n"
    )
    new_text, after = rewritten(text, 2, (512, 1, 1))
    assert new_text.startswith("__global__ void __launch_bounds__(512, 2) k(")
    assert after.block_folded.value == (512, 1, 1)


def test_a_block_variable_used_elsewhere_is_replaced_at_the_launch_only() -> None:
    text = (
        "__global__ void k(float* x) {}\n"
        "void f(float* x, int n) {\n"
        "  int threads = 256;\n"
        "  k<<<(n + threads - 1) / threads, threads>>>(x);\n"
        "  k<<<1, threads>>>(x);\n"
        "}\n"
    )
    new_text, after = rewritten(text, 4, (128, 1, 1))
    assert line_of(new_text, 4) == "k<<<(n + 128 - 1) / 128, 128>>>(x);"
    assert line_of(new_text, 3) == "int threads = 256;"
    assert line_of(new_text, 5) == "k<<<1, threads>>>(x);"
    assert after.grid_axes[0].kind == "covers"


@pytest.mark.parametrize(
    ("text", "block", "reason"),
    [
        (  # the shared-memory size follows the same variable
            "__global__ void k(float* x) {}\n"
            "void f(float* x, int n) {\n"
            "  int threads = 256;\n"
            "  k<<<(n + 255) / 256, threads, threads * sizeof(float)>>>(x);\n"
            "  k<<<1, threads>>>(x);\n"
            "}\n",
            (128, 1, 1), "shared memory",
        ),
        (  # a scalar declaration cannot hold a 2-D block
            "__global__ void k(float* x) {}\n"
            "void f(float* x, int n) { const int threads = 256; k<<<n, threads>>>(x); }\n",
            (16, 16, 1), "needs dim3",
        ),
        (  # the block is the caller's parameter
            "__global__ void k(float* x) {}\n"
            "void f(float* x, int n, int threads) { k<<<n, threads>>>(x); }\n",
            (128, 1, 1), "not a constant",
        ),
        (  # the kernel's tile size and the block are one constant
            "#define TILE 16\n"
            "__global__ void k(float* x) { __shared__ float t[TILE][TILE]; }\n"
            "void f(float* x, int n) {\n"
            "  dim3 b(TILE, TILE);\n"
            "  k<<<dim3(n / TILE, n / TILE), b>>>(x);\n"
            "}\n",
            (32, 8, 1), "TILE",
        ),
        (  # rounding down cannot be kept exact for a block that does not divide the old one
            "__global__ void k(float* x) {}\n"
            "void f(float* x, int n) { k<<<n / 128, 128>>>(x); }\n",
            (96, 1, 1), "rounds down",
        ),
        (  # template argument equal to the block, purpose unknown
            "template <int ITEMS> __global__ void k(float* x) {}\n"
            "void f(float* x, int n) { k<256><<<(n + 255) / 256, 256>>>(x); }\n",
            (128, 1, 1), "template argument",
        ),
        (  # grid divides by a multiple of the block (items per thread)
            "__global__ void k(float* x) {}\n"
            "void f(float* x, int n) { k<<<(n + 1023) / 1024, 256>>>(x); }\n",
            (128, 1, 1), "multiple of the block",
        ),
    ],
)
def test_unsafe_rewrites_are_refused(text: str, block: Dim3, reason: str) -> None:
    source = parse_source(text)
    result = rewrite_launch(source, source.launches[0], block)
    assert isinstance(result, Refusal)
    assert reason in result.reason


def test_same_block_and_invalid_blocks_are_refused(forms: str) -> None:
    source = parse_source(forms)
    site = launch_at(source, 33)
    assert isinstance(rewrite_launch(source, site, (256, 1, 1)), Refusal)
    assert isinstance(rewrite_launch(source, site, (2048, 1, 1)), Refusal)
    assert isinstance(rewrite_launch(source, site, (0, 1, 1)), Refusal)


def test_launch_bounds_insert_update_and_refuse(forms: str) -> None:
    source = parse_source(forms)
    inserted = set_launch_bounds(source, "scale", 256, 4)
    assert isinstance(inserted, Fix)
    text = apply_edits(forms, inserted.edits)
    assert "__global__ void __launch_bounds__(256, 4) scale(float* x, int n) {" in text
    bounds = parse_source(text).kernel("scale")
    assert bounds is not None and bounds.launch_bounds is not None
    assert (bounds.launch_bounds.max_threads, bounds.launch_bounds.min_blocks) == (256, 4)

    updated = set_launch_bounds(source, "bounded_two", 512)
    assert isinstance(updated, Fix)
    assert "__launch_bounds__(512, 4) bounded_two" in apply_edits(forms, updated.edits)

    via_macro = set_launch_bounds(source, "bounded_macro", 128, 1)
    assert isinstance(via_macro, Fix)
    assert "__global__ void __launch_bounds__(128, 1) bounded_macro" in apply_edits(
        forms, via_macro.edits)

    templated = set_launch_bounds(source, "templated", 256)
    assert isinstance(templated, Refusal) and "template parameter" in templated.reason
    assert isinstance(set_launch_bounds(source, "missing", 256), Refusal)


def test_edits_on_unicode_lines_land_on_the_right_characters() -> None:
    text = (SAMPLES / "unicode_columns.cu").read_text()
    new_text, after = rewritten(text, 3, (256, 1, 1))
    assert line_of(new_text, 3) == "void go(float* x) { /* 😀😀 */ kernel_plain<<<4, 256>>>(x); }"
    assert after.block_folded.value == (256, 1, 1)


def test_corpus_rewrites_reparse_to_the_new_block() -> None:
    files = sorted(CORPUS.glob("*.cu"))
    assert len(files) >= 25, "tests/corpus is part of the repository"
    fixed = refused = 0
    for path in files:
        text = path.read_text()
        source = parse_source(text)
        for site in source.launches:
            result = rewrite_launch(source, site, (64, 1, 1))
            if isinstance(result, Refusal):
                refused += 1
                assert result.reason
                continue
            fixed += 1
            after = launch_at(parse_source(apply_edits(text, result.edits)), site.line + 1)
            assert after.block_folded.value == (64, 1, 1), (path.name, site.line)
            for before_axis, after_axis in zip(site.grid_axes, after.grid_axes, strict=True):
                if before_axis.kind == "covers":
                    assert after_axis.kind == "covers", (path.name, site.line)
                    assert after_axis.threads_expression == before_axis.threads_expression
    assert fixed > refused


@pytest.mark.usefixtures("cuda_toolchain")
def test_rewritten_file_still_compiles(forms: str, tmp_path: Path) -> None:
    text = forms
    for line, block in ((33, (128, 1, 1)), (36, (32, 4, 1)), (39, (128, 1, 1)),
                        (42, (256, 1, 1)), (46, (32, 4, 1)), (51, (512, 1, 1))):
        text, _ = rewritten(text, line, block)
    bounds = set_launch_bounds(parse_source(text), "scale", 512, 2)
    assert isinstance(bounds, Fix)
    text = apply_edits(text, bounds.edits)
    path = tmp_path / "rewritten.cu"
    path.write_text(text)
    result = subprocess.run(
        ["nvcc", "-ptx", "-arch=sm_80", "-o", str(tmp_path / "out.ptx"), str(path)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert ".maxntid 512, 1, 1" in (tmp_path / "out.ptx").read_text()
