"""The block-shape constraint stage on real kernels: each corpus file in
`tests/corpus/constraints/` is compiled with nvcc and analysed, and the shapes its code supports
are asserted, with the class of evidence behind them and what the advice then does.

Block-generic kernels (grid-stride loops, blockDim-sized buffers, 2-D stencils indexed from
blockDim, kernels whose threads past a run-time bound idle) must keep their advice: no candidate
shape of theirs may be ruled out by the code (the false "fixed" rate is asserted to be zero).
"""

from __future__ import annotations

import gzip
import random
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

from flipflop.constraints import (
    BlockConstraints,
    SpaceConflicts,
    apply_annotation,
    block_constraints,
    configuration_conflicts,
    read_source,
    template_values,
)
from flipflop.constraints.model import Requirement
from flipflop.findings import findings
from flipflop.formats.kernel_tuner_cache import load_cache_json
from flipflop.gpu.profiles import load_profile
from flipflop.launch import Dim3
from flipflop.model import candidate_blocks
from flipflop.options import AnalysisOptions
from flipflop.pipeline import analyze
from flipflop.results import AnalysisResult, KernelReport
from flipflop.source import parse_source
from flipflop.source.annotations import parse_annotation
from flipflop.source.model import Position, Range, TemplateParameter

pytestmark = pytest.mark.usefixtures("cuda_toolchain")

CORPUS = Path(__file__).parent / "corpus"
CONSTRAINTS = CORPUS / "constraints"


@cache
def analysed(path: Path) -> AnalysisResult:
    return analyze(path, None, AnalysisOptions())


def kernel_of(result: AnalysisResult, name: str) -> KernelReport:
    (kernel,) = [k for k in result.kernels if name in k.info.display_name]
    return kernel


@dataclass(frozen=True)
class Expected:
    file: str
    kernel: str
    evidence: str  # the class of at least one requirement that rules shapes out
    fixed: Dim3 | None = None  # the one shape the code allows at the launch
    allowed: tuple[Dim3, ...] = ()
    ruled_out: tuple[Dim3, ...] = ()
    unsure: bool = False
    says: tuple[str, ...] = ()  # words the summary must hold (source facts, lines)
    conflict: bool = False
    reasons: tuple[str, ...] = field(default=())


CASES = [
    # literal ties
    Expected("jacobi_tile16.cu", "jacobi_tile16", "literal", fixed=(16, 16, 1),
             says=("tile[18][18] at line 7", "`threadIdx.x == 15` at line 17")),
    Expected("unrolled_fixed_threads.cu", "axpy_four", "literal", fixed=(64, 1, 1),
             says=("blockDim.x is never read",)),
    Expected("stride_over_shared.cu", "pair_sums", "literal",
             allowed=((256, 1, 1), (128, 1, 1)), ruled_out=((288, 1, 1), (512, 1, 1)),
             says=("buffer[512] at line 7",)),
    # compile-time ties
    Expected("sgemm_shared_block.cu", "sgemm_shared_block", "compile-time", fixed=(1024, 1, 1),
             says=("`threadIdx.x / BLOCKSIZE` at line 13",)),
    Expected("sgemm_blocktile_2d.cu", "sgemm_blocktile_2d", "compile-time", fixed=(256, 1, 1),
             says=("threadIdx.x % (BN / TN)",)),
    Expected("define_tile.cu", "matmul_tiles", "compile-time", fixed=(16, 16, 1),
             says=("a_tile[16][16] at line 11",)),
    Expected("reduce_template_blocksize.cu", "reduce_unrolled", "compile-time",
             fixed=(256, 1, 1), says=("`blockSize` = 256",)),
    Expected("cub_block_reduce.cu", "sum_blocks", "compile-time", fixed=(128, 1, 1),
             says=("cub::BlockReduce<float, THREADS>",)),
    Expected("cub_block_scan_2d.cu", "scan_tiles", "compile-time", fixed=(32, 4, 1),
             says=("32×4×1 threads",)),
    Expected("cg_tiled_partition16.cu", "tile_sums", "compile-time",
             allowed=((48, 1, 1), (256, 1, 1)), ruled_out=((40, 1, 1), (24, 1, 1))),
    # explicit checks
    Expected("layernorm_warp_assert.cu", "layernorm_warp_rows", "check",
             allowed=((32, 4, 1), (32, 8, 1), (32, 1, 1)), ruled_out=((64, 2, 1), (256, 4, 1)),
             says=("`blockDim.x == WARP_SIZE` at line 9",)),
    Expected("early_return_check.cu", "histogram_256", "check", fixed=(256, 1, 1)),
    Expected("early_return_check.cu", "pairs_of_groups", "check",
             allowed=((128, 1, 1), (192, 1, 1)), ruled_out=((96, 1, 1), (160, 1, 1))),
    # algorithmic requirements
    Expected("reduce_halving.cu", "reduce_halving", "algorithm",
             allowed=((128, 1, 1), (512, 1, 1)), ruled_out=((192, 1, 1), (928, 1, 1))),
    Expected("warp_shuffle_full_mask.cu", "block_sums", "algorithm",
             allowed=((96, 1, 1),), ruled_out=((100, 1, 1),)),
    Expected("ignores_y.cu", "scale_rows", "algorithm", allowed=((256, 1, 1),),
             ruled_out=((64, 4, 1), (32, 2, 1)), conflict=True),
    # annotations
    Expected("annotated_pow2.cu", "bitonic_block", "annotation",
             allowed=((256, 1, 1), (1024, 1, 1)), ruled_out=((384, 1, 1), (96, 1, 1))),
    # what FlipFlop cannot read: unsure, the launch stays
    Expected("runtime_check_unsure.cu", "gather_rows", "", unsure=True),
    Expected("inline_asm_ntid.cu", "asm_stride", "", unsure=True),
]

GENERIC = [
    (CONSTRAINTS / "generic_grid_stride.cu", "clamp_all"),
    (CONSTRAINTS / "generic_blockdim_smem.cu", "block_max"),
    (CONSTRAINTS / "generic_stencil_2d.cu", "five_point"),
    (CONSTRAINTS / "generic_guarded_rows.cu", "normalise_rows"),
    (CORPUS / "saxpy.cu", "saxpy"),
    (CORPUS / "vector_add.cu", "vector_add"),
    (CORPUS / "dynamic_smem.cu", "block_scan"),
    (CORPUS / "stencil_2d.cu", "jacobi_2d"),
    (CORPUS / "softmax_thread_per_row.cu", "softmax_thread_rows"),
    (CORPUS / "sgemm_naive.cu", "sgemm_naive"),
    (CORPUS / "transpose_naive.cu", "transpose_naive"),
    (CORPUS / "guard_idle_threads.cu", "integrate_oscillators"),
    (CORPUS / "conv2d.cu", "convolve_2d"),
]


def launch_constraints(case: Expected) -> tuple[KernelReport, BlockConstraints]:
    kernel = kernel_of(analysed(CONSTRAINTS / case.file), case.kernel)
    constraints = kernel.primary.advice.constraints
    assert constraints is not None
    return kernel, constraints


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.file}:{c.kernel}")
def test_the_code_decides_the_legal_block_shapes(case: Expected) -> None:
    kernel, constraints = launch_constraints(case)
    advice = kernel.primary.advice
    if case.unsure:
        assert constraints.unsure, constraints
        # Unsure: nothing but the launch as written is evaluated, and it is kept.
        assert advice.current is not None
        assert advice.recommendation.block == advice.current.block
        assert advice.kept_as_written is not None and "unsure" in advice.kept_as_written
        return
    assert any(r.evidence == case.evidence for r in constraints.requirements), constraints
    if case.fixed is not None:
        assert constraints.fixed_shape() == case.fixed
        assert "fixes the block" in constraints.summary()
    for block in case.allowed:
        assert constraints.allows(block), (block, constraints.violations(block))
    for block in case.ruled_out:
        assert not constraints.allows(block), block
    for words in case.says:
        assert words in constraints.summary(), constraints.summary()
    # Every evaluated configuration meets the code's requirements: the recommendation, the
    # Pareto front and the recommended set.
    for prediction in advice.predictions:
        assert constraints.allows(prediction.block), prediction.block
    assert bool(constraints.conflicts) == case.conflict


@pytest.mark.parametrize("case", [c for c in CASES if c.fixed is not None],
                         ids=lambda c: f"{c.file}:{c.kernel}")
def test_a_fixed_block_keeps_the_launch_and_says_why(case: Expected) -> None:
    result = analysed(CONSTRAINTS / case.file)
    kernel, _ = launch_constraints(case)
    launch = kernel.primary
    assert launch.current_block == case.fixed
    assert launch.advice.recommendation.block == case.fixed
    kept = launch.advice.kept_as_written
    assert kept is not None and kept.startswith("the code fixes the block at")
    assert any("launch as written is kept" in r for r in launch.advice.recommendation.reasons)
    assert not [f for f in findings(result) if f.code == "FF001" and f.kernel == kernel.info.name]


def test_a_launch_that_breaks_a_proven_requirement_is_reported() -> None:
    result = analysed(CONSTRAINTS / "ignores_y.cu")
    (finding,) = [f for f in findings(result) if f.code == "FF014"]
    assert finding.line == 16 and finding.range is not None
    assert "block.y == 1" in finding.message and "threadIdx.y is never read" in finding.message
    # The advice moves to a 1-D block, which does the work once.
    advice = result.kernels[0].primary.advice
    assert advice.recommendation.block[1:] == (1, 1)


def test_an_annotation_that_contradicts_the_code_is_a_warning_and_is_not_used() -> None:
    result = analysed(CONSTRAINTS / "annotation_conflict.cu")
    ff014 = [f for f in findings(result) if f.code == "FF014"]
    assert [f.line for f in ff014] == [5]
    assert "`blockDim.x == 16` at line 8" in ff014[0].message
    constraints = result.kernels[0].constraints
    assert all(r.evidence != "annotation" for r in constraints.requirements)
    assert not constraints.allows((32, 32, 1))


@pytest.mark.parametrize(("path", "name"), GENERIC, ids=lambda v: getattr(v, "name", v))
def test_block_generic_kernels_keep_their_candidates(path: Path, name: str) -> None:
    kernel = kernel_of(analysed(path), name)
    advice = kernel.primary.advice
    constraints = advice.constraints
    assert constraints is not None and not constraints.unsure and not constraints.conflicts
    profile = load_profile("rtx3070")
    two_d = kernel.features.uses_tid_y
    for block in candidate_blocks(profile, two_d=two_d, three_d=kernel.features.uses_tid_z):
        assert constraints.allows(block), (block, constraints.violations(block))
    assert not [e for e in advice.excluded if e.reason.startswith(("the code", "FlipFlop is"))]


def test_the_false_fixed_rate_on_block_generic_kernels_is_zero() -> None:
    fixed = [
        name for path, name in GENERIC
        if kernel_of(analysed(path), name).primary.advice.kept_as_written is not None
    ]
    assert fixed == [], f"false 'fixed' on {len(fixed)}/{len(GENERIC)} block-generic kernels"


def test_dead_branches_of_an_instance_do_not_count() -> None:
    # `if (blockSize >= 512 && tid < 256) … sdata[tid + 256]` is dead in the 256 instance: it
    # must not bound the block by the 256-entry array.
    kernel = kernel_of(analysed(CONSTRAINTS / "reduce_template_blocksize.cu"), "reduce_unrolled")
    bounds = [r for r in kernel.constraints.requirements if r.relation == "<="]
    assert [r.value for r in bounds] == [256]


def test_template_values_come_from_the_instance_name() -> None:
    parameters = (TemplateParameter("T", "type", "typename"),
                  TemplateParameter("BLOCK", "value", "int"),
                  TemplateParameter("SMALL", "value", "bool"),
                  TemplateParameter("BYTES", "value", "unsigned char"))
    name = "void k<float, 256u, true, (unsigned char)3>(float const*, int)"
    assert template_values(parameters, name) == {"BLOCK": 256, "SMALL": 1, "BYTES": 3}


def _annotation(text: str) -> tuple[BlockConstraints, tuple[str, ...]]:
    range_ = Range(Position(4, 0), Position(4, len(text)), 0, len(text))
    annotation = parse_annotation(text, range_)
    assert annotation is not None
    return block_constraints(None, None, annotation), annotation.errors


def test_annotations_state_what_the_code_does_not_show() -> None:
    constraints, errors = _annotation("// flipflop: block_x=pow2 block_threads%64==0")
    assert errors == ()
    assert constraints.allows((256, 1, 1)) and constraints.allows((64, 2, 1))
    assert not constraints.allows((192, 1, 1)) and not constraints.allows((32, 1, 1))
    assert {r.evidence for r in constraints.requirements} == {"annotation"}
    fixed, _ = _annotation("// flipflop: block=16x16")
    assert fixed.fixed_shape() == (16, 16, 1)
    generic, _ = _annotation("// flipflop: block=any")
    assert generic.declared_generic
    _, errors = _annotation("// flipflop: block_x%0==0")
    assert errors and "positive multiple" in errors[0]


def test_block_any_overrides_what_was_only_inferred_but_not_what_is_proven() -> None:
    inferred = Requirement("x", "==", None, "literal", ("threadIdx.x indexes data",),
                           proven=False)
    proven = Requirement("x", "pow2", None, "algorithm", ("a halving loop at line 3",))
    range_ = Range(Position(0, 0), Position(0, 10), 0, 10)
    annotation = parse_annotation("// flipflop: block=any", range_)
    assert annotation is not None
    result = apply_annotation(BlockConstraints((inferred, proven)), annotation)
    assert result.requirements == (proven,)
    assert result.conflicts and "block=any" in result.conflicts[0].what


def test_tuned_values_that_break_the_code_are_warned_about() -> None:
    result = analysed(CONSTRAINTS / "tuned_reduce_pow2.cu")
    (kernel,) = result.kernels
    space = kernel.primary.space
    assert space is not None
    (warning,) = space.constraint_warnings
    assert warning.startswith("2 of 5 configurations break what the code needs")
    assert "block.x a power of two" in warning and "at line 14" in warning
    ff014 = [f for f in findings(result) if f.code == "FF014"]
    assert [f.message for f in ff014] == [warning[0].upper() + warning[1:]]
    # The space is the user's, the advice is safe: 96 and 192 are shown in the warning and
    # ruled out of the recommendation with the reason.
    advice = kernel.primary.advice
    assert {p.params for p in advice.predictions} == {
        (("block_size_x", size),) for size in (64, 128, 256)}
    ruled_out = {e.params: e.reason for e in advice.excluded}
    assert set(ruled_out) == {(("block_size_x", 96),), (("block_size_x", 192),)}
    assert all("block.x a power of two" in reason for reason in ruled_out.values())
    assert advice.recommendation.prediction.params in {
        (("block_size_x", size),) for size in (64, 128, 256)}


MEASURED = Path(__file__).resolve().parents[1] / "calibration" / "data" / "measured"
MEASURED_KERNELS = [
    ("convolution", "convolution.cu", "convolution_kernel", "RTX_3090.json.gz", None),
    ("convolution_milo", "convolution.cu", "convolution_kernel", "A6000.json.gz", None),
    ("pnpoly", "pnpoly.cu", "cn_pnpoly", "RTX_3090.json.gz", None),
    ("expdist", "expdist.cu", "ExpDist", "RTX_A4000.json.gz", None),
    ("wmma_gemm", "kernels/gemm_kernel_float.cu", "wmma_complex_gemm_opt",
     "RTX_4000_Ada.json.gz", 32),
]


@pytest.mark.parametrize("folder,file,kernel,cache,block_x", MEASURED_KERNELS,
                         ids=[m[0] for m in MEASURED_KERNELS])
def test_measured_tunable_kernels_raise_no_warning(
    folder: str, file: str, kernel: str, cache: str, block_x: int | None
) -> None:
    """Every configuration of these spaces ran on a real GPU: none breaks what its code needs,
    so a warning would be false."""
    text = (MEASURED / folder / file).read_text(errors="replace")
    with gzip.open(MEASURED / folder / cache, "rt", encoding="utf-8") as stream:
        data, _ = load_cache_json(stream.read(), cache)
    assert isinstance(data, dict)
    keys = data["tune_params_keys"]
    measured = [e for e in data["cache"].values() if isinstance(e.get("time"), (int, float))]
    configurations = []
    for entry in random.Random(1).sample(measured, 60):
        env = {k: entry[k] for k in keys if isinstance(entry.get(k), int)}
        block = (block_x or env.get("block_size_x", 1), env.get("block_size_y", 1),
                 env.get("block_size_z", 1))
        configurations.append((env, block, str(env)))
    source_kernel = parse_source(text).kernel(kernel)
    assert source_kernel is not None and source_kernel.is_definition
    assert configuration_conflicts(read_source(text), source_kernel, configurations) == \
        SpaceConflicts()
