"""Reading CUDA source: kernels, launch bounds, launches, folding, coverage and annotations."""

from __future__ import annotations

from pathlib import Path

import pytest

from flipflop.launch import ProblemSize
from flipflop.source import LaunchSite, SourceFile, parse_source, problem_size
from flipflop.source.annotations import parse_annotation
from flipflop.source.model import Position, Range
from flipflop.source.positions import LineIndex

SAMPLES = Path(__file__).parent / "source_samples"
CORPUS = Path(__file__).parent / "corpus"


@pytest.fixture(scope="module")
def forms() -> SourceFile:
    return parse_source((SAMPLES / "launch_forms.cu").read_text())


def launch_at(source: SourceFile, line: int) -> LaunchSite:
    """The launch on a 1-based line, as an editor shows it."""
    (site,) = [s for s in source.launches if s.line == line - 1]
    return site


def test_kernels_and_their_parameters(forms: SourceFile) -> None:
    names = [k.name for k in forms.kernels]
    assert names == ["scale", "bounded_one", "bounded_two", "bounded_macro", "templated", "grid2d"]
    scale = forms.kernel("scale")
    assert scale is not None and scale.is_definition
    assert [(p.name, p.type) for p in scale.parameters] == [("x", "float*"), ("n", "int")]
    assert scale.line == 17
    assert scale.name_range.start == Position(17, 16)
    templated = forms.kernel("templated")
    assert templated is not None
    assert [(p.name, p.kind) for p in templated.template_parameters] == [
        ("T", "type"), ("BLOCK_SIZE", "value")]
    assert templated.range.start.line == 26  # the range starts at `template <...>`


def test_launch_bounds_with_one_two_and_macro_arguments(forms: SourceFile) -> None:
    bounds = {k.name: k.launch_bounds for k in forms.kernels}
    assert bounds["scale"] is None
    one, two, macro, templated = (bounds["bounded_one"], bounds["bounded_two"],
                                  bounds["bounded_macro"], bounds["templated"])
    assert one is not None and (one.max_threads, one.min_blocks) == (256, None)
    assert two is not None and (two.max_threads, two.min_blocks) == (256, 4)
    assert two.arguments == ("256", "4")
    assert forms.text[two.range.start_byte:two.range.end_byte] == "__launch_bounds__(256, 4)"
    assert macro is not None and macro.macro == "BOUNDS"
    assert (macro.max_threads, macro.min_blocks) == (512, 2)
    assert templated is not None and templated.max_threads is None
    assert templated.unresolved == ("BLOCK_SIZE",)


def test_three_argument_launch_bounds_fold_despite_the_grammar() -> None:
    source = parse_source("__global__ void __launch_bounds__(128, 2, 4) k(float* x) {}\n")
    bounds = source.kernels[0].launch_bounds
    assert bounds is not None
    assert (bounds.max_threads, bounds.min_blocks, bounds.max_cluster) == (128, 2, 4)


def test_macro_bounds_are_not_reported_as_syntax_errors(forms: SourceFile) -> None:
    assert forms.syntax_errors == ()


@pytest.mark.parametrize(
    ("line", "block", "threads_expression"),
    [
        (33, 256, "n"),  # (n + 255) / 256
        (34, 256, "n"),  # (n + BLOCK - 1) / BLOCK, #define
        (35, 128, "n"),  # ceil_div(n, kThreads), static constexpr
        (36, 64, "n"),  # DIV_UP(n, 64) with dim3(64)
        (37, 128, "n"),  # iDivUp(n, 32 * WARPS_PER_BLOCK)
        (38, 64, "n"),  # nested parentheses, enumerator
        (39, 512, "n"),  # (n + 511) >> 9
        (40, 65, "n"),  # (n - 1) / B + 1, enumerator without a value
        (42, 128, "n"),  # template kernel
    ],
)
def test_one_dimensional_ceil_div_forms_cover_n(forms: SourceFile, line: int, block: int,
                                                threads_expression: str) -> None:
    site = launch_at(forms, line)
    assert site.block_folded.value == (block, 1, 1)
    x_axis = site.grid_axes[0]
    assert x_axis.kind == "covers"
    assert x_axis.rounding == "ceil"
    assert x_axis.threads_expression == threads_expression
    assert site.grid_folded.unresolved == ("n",)
    assert problem_size(site, {"n": 1000}) == ProblemSize(threads=(1000, 1, 1))


def test_template_launch_keeps_its_arguments(forms: SourceFile) -> None:
    site = launch_at(forms, 42)
    assert site.kernel == "templated"
    assert site.template_arguments == ("float", "128")
    assert site.kernel_name_range.start == Position(41, 2)


def test_comments_between_tokens_and_shared_memory(forms: SourceFile) -> None:
    site = launch_at(forms, 41)
    assert site.grid.text == "heads"
    assert site.block.text == "96"
    assert site.shared_memory is not None and site.shared_memory.text == "sizeof(float) * 96"
    assert site.shared_memory_folded.value == 384
    axis = site.grid_axes[0]
    assert (axis.kind, axis.value, axis.unresolved) == ("fixed", None, ("heads",))
    assert problem_size(site, {"heads": 12}) == ProblemSize(grid=(12, 1, 1))
    assert problem_size(site) is None


def test_stream_argument(forms: SourceFile) -> None:
    site = launch_at(forms, 34)
    assert site.stream is not None and site.stream.text == "stream"
    assert site.shared_memory_folded.value == 0


def test_dim3_variables_resolve_through_their_declarations(forms: SourceFile) -> None:
    site = launch_at(forms, 46)
    assert site.block_folded.value == (16, 8, 1)  # namespace constexpr and class member
    assert [a.kind for a in site.grid_axes] == ["covers", "covers", "fixed"]
    assert [a.threads_expression for a in site.grid_axes[:2]] == ["width", "height"]
    assert problem_size(site, {"width": 1920, "height": 1080}) == ProblemSize(
        threads=(1920, 1080, 1))
    declared = {d.name: d for d in forms.declarations}
    assert declared["block"].folded.value == (16, 8, 1)
    assert declared["block"].function == "run"
    assert declared["block"].value_text == "(cfg::kTile, Launch::kRows)"


def test_launch_inside_a_loop_through_integer_variables(forms: SourceFile) -> None:
    site = launch_at(forms, 51)
    assert site.in_loop
    assert site.block_folded.value == (256, 1, 1)
    assert site.grid_axes[0].kind == "covers"
    assert not launch_at(forms, 33).in_loop


def test_multiple_launches_of_one_kernel(forms: SourceFile) -> None:
    assert len(forms.launches_of("scale")) == 11
    assert len({s.config_range.start_byte for s in forms.launches_of("scale")}) == 11


def test_annotation_applies_to_the_next_launch(forms: SourceFile) -> None:
    site = launch_at(forms, 54)
    assert site.block_folded.value == (32, 2, 1)
    assert site.annotation is not None
    assert site.annotation.threads == (1048576, 1, 1)
    assert site.annotation.params == (("n", 1048576),)
    assert problem_size(site) == ProblemSize(threads=(1048576, 1, 1))
    assert all(s.annotation is None for s in forms.launches if s is not site)


def test_annotation_syntax_and_errors() -> None:
    where = Range(Position(0, 0), Position(0, 0), 0, 0)
    note = parse_annotation("// flipflop: grid=64,8 n_steps=128 threads=1M smem=0x400", where)
    assert note is not None
    assert note.grid == (64, 8, 1)
    assert note.threads == (1 << 20, 1, 1)
    assert note.dynamic_smem_bytes == 1024
    assert note.params == (("n_steps", 128),)
    assert "grid= or threads=" in note.errors[0]
    bad = parse_annotation("// flipflop: block=abc oops", where)
    assert bad is not None and len(bad.errors) == 2
    assert parse_annotation("// an ordinary comment", where) is None


def test_consecutive_and_trailing_annotations() -> None:
    text = (
        "__global__ void k(int n) {}\n"
        "void f(int n) {\n"
        "  // flipflop: grid=64\n"
        "  // flipflop: n_steps=8\n"
        "  k<<<n, 128>>>(n);\n"
        "  k<<<n, 256>>>(n);  // flipflop: threads=4096\n"
        "}\n"
    )
    first, second = parse_source(text).launches
    assert first.annotation is not None and first.annotation.grid == (64, 1, 1)
    assert first.annotation.params == (("n_steps", 8),)
    assert second.annotation is not None and second.annotation.threads == (4096, 1, 1)


def test_utf16_columns_after_unicode_comments() -> None:
    text = (SAMPLES / "unicode_columns.cu").read_text()
    source = parse_source(text)
    (site,) = source.launches
    # `void go(float* x) { /* 😀😀 */ ` is 27 code points but 31 UTF-16 code units.
    assert site.kernel_name_range.start == Position(2, 31)
    line = text.splitlines()[2]
    utf16 = line.encode("utf-16-le")
    start = site.kernel_name_range.start.character * 2
    assert utf16[start:start + len("kernel_plain") * 2].decode("utf-16-le") == "kernel_plain"
    assert source.kernels[0].name_range.start == Position(1, 16)


def test_line_index_round_trips_positions() -> None:
    data = "a😀b\nxé\n".encode()
    index = LineIndex.of(data)
    b_offset = data.index(b"b")
    assert index.position(b_offset) == Position(0, 3)
    assert index.byte(Position(0, 3)) == b_offset
    assert index.position(data.index("é".encode()) + 2) == Position(1, 2)


def test_unknown_names_stay_symbolic() -> None:
    text = (
        "__global__ void k(int* x) {}\n"
        "void f(int* x, int rows, int block_size) {\n"
        "  int tpb = block_size;\n"
        "  k<<<rows * get_count(), tpb>>>(x);\n"
        "}\n"
    )
    (site,) = parse_source(text).launches
    assert site.block_folded.x is None
    assert site.block_folded.unresolved == ("block_size",)
    assert site.grid_folded.unresolved == ("rows", "get_count")


def test_reassigned_variables_do_not_fold() -> None:
    text = (
        "__global__ void k(int* x) {}\n"
        "void f(int* x, bool big) {\n"
        "  int threads = 128;\n"
        "  if (big) threads = 512;\n"
        "  k<<<4, threads>>>(x);\n"
        "}\n"
    )
    (site,) = parse_source(text).launches
    assert site.block_folded.x is None
    assert site.block_folded.unresolved == ("threads",)


def test_broken_code_still_yields_what_can_be_read() -> None:
    text = "__global__ void k(int* x) {}\nvoid f(int* x) {\n  k<<<4, 128>>>(x);\n  int y = ;\n"
    source = parse_source(text)
    assert source.syntax_errors
    assert [s.block_folded.value for s in source.launches] == [(128, 1, 1)]


def test_corpus_files_parse_with_their_launches() -> None:
    files = sorted(CORPUS.glob("*.cu"))
    assert len(files) >= 25, "tests/corpus is part of the repository"
    launches = 0
    for path in files:
        source = parse_source(path.read_text())
        assert source.syntax_errors == (), path.name
        assert source.kernels, path.name
        for site in source.launches:
            launches += 1
            assert site.block_folded.value is not None, (path.name, site.line)
            assert site.kernel in {k.name for k in source.kernels}, (path.name, site.kernel)
    assert launches >= len(files)


def test_corpus_launch_descriptions() -> None:
    path = CORPUS / "attention_tiled.cu"
    (site,) = parse_source(path.read_text()).launches
    # `dim3 block(QUERY_TILE);` parses as a function declaration; it is a constructor call.
    assert site.block_folded.value == (64, 1, 1)
    assert [a.kind for a in site.grid_axes] == ["covers", "fixed", "fixed"]
    assert site.grid_axes[1].unresolved == ("heads",)
    # Covers x, fixed y = 16 heads.
    assert problem_size(site, {"seq_len": 4096, "heads": 16}) == ProblemSize(
        axes=(("covers", 4096), ("fixed", 16), ("covers", 1))
    )


def test_results_do_not_depend_on_earlier_parses(forms: SourceFile) -> None:
    # tree-sitter returns captures in no promised order and reuses memory between trees;
    # parsing other files first must not change what this one folds to.
    for path in sorted(CORPUS.glob("*.cu"))[:6]:
        parse_source(path.read_text())
    again = parse_source(forms.text)
    assert again.macros == forms.macros
    assert [s.block_folded for s in again.launches] == [s.block_folded for s in forms.launches]
    assert dict(forms.macros)["WARPS_PER_BLOCK"] == "4"
