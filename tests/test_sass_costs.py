"""The SASS cost table: its provenance, its coverage of what nvcc writes, known answers, that it
still matches a fresh measurement, and that the features count issue slots the way SASS does.

The table (`calibration/data/sass_costs.json`) is made by `calibration/scripts/sass_costs.py`
from real ptxas and nvdisasm output; these tests use the same functions on the same tools.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from corpus_ptx import CorpusCompiler, arches_of, corpus_compiler, corpus_files
from flipflop.analysis import extract_features, sass
from flipflop.analysis import opclass as oc
from flipflop.ir import split_opcode
from flipflop.launch import LaunchShape
from flipflop.ptx import parse_ptx
from flipflop.toolchain import Toolchain
from machine_code import load_script

__all__ = ["corpus_compiler"]  # the session fixture, used by name below

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "calibration" / "scripts" / "sass_costs.py"
TABLE = ROOT / "calibration" / "data" / "sass_costs.json"
KERNELS = Path(__file__).parent / "sass_kernels"
ARCHES = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")


def _script() -> ModuleType:
    return load_script(SCRIPT, "sass_costs_script")


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return _script()


@pytest.fixture(scope="module")
def tools(script: ModuleType) -> object:
    try:
        return script.find_tools()
    except script.MeasureError as error:
        pytest.fail(f"ptxas/nvdisasm missing; run scripts/setup.sh (dev extra): {error}")


# --------------------------------------------------------------------------- the table


def test_table_names_its_source_and_covers_every_architecture() -> None:
    document = json.loads(TABLE.read_text(encoding="utf-8"))
    assert document["command"].startswith("python calibration/scripts/sass_costs.py")
    assert len(document["commit"].split()[0]) == 40
    assert document["ptxas"].startswith("13.") and document["nvdisasm"].startswith("13.")
    assert tuple(document["arches"]) == ARCHES
    for arch, forms in document["arches"].items():
        assert len(forms) >= 200, arch
        for spelling, entry in forms.items():
            # Issue slots are the sum of the pipes; every number is per PTX instruction.
            assert entry["slots"] == pytest.approx(sum(entry["pipes"].values()), abs=1e-6)
            assert entry["slots"] == pytest.approx(sum(entry["sass"].values()), abs=1e-6)
            assert entry["slots"] >= 0.0, (arch, spelling)
    # The shipped copy is the committed file (a link inside the package).
    assert sass.load_table().header["commit"] == document["commit"]


def test_ieee_division_is_many_instructions_with_one_mufu_on_sm_86() -> None:
    cost = sass.issue_cost("div.rn.f32", "sm_86")
    assert cost is not None
    pipes = dict(zip(sass.PIPES, cost.pipes, strict=True))
    assert cost.slots >= 6.0
    assert pipes["sfu"] == 1.0 and pipes["fp32"] >= 5.0
    # FLOPs keep Nsight Compute's convention: the division is one FLOP, whatever it issues.
    counts = oc.classify("div", ("rn", "f32"), "sm_86")
    assert counts[oc.FP32_FLOPS] == 1.0 and counts[oc.INSTRUCTIONS] == 1.0
    assert counts[oc.ISSUE_SLOTS] == cost.slots and counts[oc.SFU_PIPE] == 1.0


def test_other_known_expansions() -> None:
    def slots(spelling: str, arch: str) -> float:
        cost = sass.issue_cost(spelling, arch)
        assert cost is not None, (spelling, arch)
        return cost.slots

    for arch in ARCHES:
        assert slots("div.s64", arch) > 40  # a called subroutine, counted on its fast path
        assert slots("div.u32", arch) > 10
        assert slots("div.rn.f64", arch) > slots("div.rn.f32", arch)
        assert slots("fma.rn.f32", arch) == 1.0
        # A 64-bit add is a pair with a carry, except where sm_120 has IADD.64.
        assert slots("add.s64", arch) == (1.0 if arch == "sm_120" else 2.0)
        assert slots("cvt.u32.u64", arch) == 0.0  # the low register of the pair
        assert slots("ex2.approx.ftz.f32", arch) == 1.0
    # A spelling without an entry keeps one slot on its PTX pipe.
    counts = oc.classify("add", ("rz", "ftz", "f32"), "sm_86")
    assert counts[oc.ISSUE_SLOTS] == 1.0 and counts[oc.FP32_PIPE] == 1.0


def test_nearest_architecture_and_canonical_spellings() -> None:
    assert sass.table_arch(("sm_86",)) == "sm_86"
    assert sass.table_arch(("sm_87",)) == "sm_86"
    assert sass.table_arch(("sm_90a",)) == "sm_90"
    assert sass.table_arch(("sm_103",)) == "sm_100"
    assert sass.table_arch(("sm_121",)) == "sm_120"
    assert sass.table_arch(("sm_70",)) == "sm_75"
    assert sass.table_arch(("debug",)) == ""
    assert sass.canonical_spelling("setp.ge.s32") == "setp.lt.s32"
    assert sass.canonical_spelling("setp.ne.b32") == "setp.lt.u32"
    assert sass.canonical_spelling("setp.gtu.ftz.f32") == "setp.lt.ftz.f32"
    assert sass.canonical_spelling("add.u64") == "add.s64"
    assert sass.canonical_spelling("mul.lo.u32") == "mul.lo.s32"
    assert sass.canonical_spelling("mul.wide.u32") == "mul.wide.u32"
    assert sass.canonical_spelling("selp.f32") == "selp.b32"
    assert sass.canonical_spelling("shr.b64") == "shr.u64"


_ARITHMETIC = (oc.FP32_INSTRUCTIONS, oc.FP64_INSTRUCTIONS, oc.FP16_INSTRUCTIONS, oc.INT_OPS,
               oc.CONVERSIONS, oc.SFU_OPS)  # fmt: skip


@pytest.mark.slow
def test_every_arithmetic_form_of_the_corpus_is_measured_or_documented(
    corpus_compiler: CorpusCompiler,
) -> None:
    missing: dict[str, set[str]] = {}
    seen: set[str] = set()
    for source in corpus_files():
        if "sm_86" not in arches_of(source):
            continue
        module = parse_ptx(corpus_compiler.ptx(source, "sm_86"), f"{source.stem}.sm_86.ptx")
        for function in module.functions:
            for block in function.blocks:
                for instruction in block.instructions:
                    spelling = instruction.full_opcode
                    counts = oc.classify(*split_opcode(spelling))
                    if not any(counts[i] for i in _ARITHMETIC):
                        continue
                    seen.add(spelling)
                    documented = any(
                        spelling == name or spelling.startswith(name + ".")
                        for name in sass.SINGLE_INSTRUCTION
                    )
                    if sass.issue_cost(spelling, "sm_86") is None and not documented:
                        missing.setdefault(spelling, set()).add(source.name)
    assert len(seen) > 50  # the corpus really exercised the table
    assert not missing, f"arithmetic forms neither measured nor documented: {missing}"


# --------------------------------------------------------------------------- staleness


# One form per kind of measurement: a slow-path branch, a called subroutine, a conversion, a
# 64-bit result, a 16-bit result, a sign-free canonical form.
_REMEASURED = (("div.rn.f32", "sm_86"), ("div.s64", "sm_75"), ("cvt.rn.f32.s32", "sm_90"),
               ("sqrt.rn.f64", "sm_120"), ("cvt.rn.f16.f32", "sm_89"), ("add.s64", "sm_80"),
               ("selp.b32", "sm_100"))  # fmt: skip


def test_a_fresh_measurement_equals_the_committed_table(
    script: ModuleType, tools: object
) -> None:
    document = json.loads(TABLE.read_text(encoding="utf-8"))
    if document["ptxas"] != tools.ptxas_version:  # type: ignore[attr-defined]
        pytest.skip(
            f"the table was measured with ptxas {document['ptxas']}, this machine has "
            f"{tools.ptxas_version}: regenerate it with calibration/scripts/sass_costs.py"  # type: ignore[attr-defined]
        )
    for spelling, arch in _REMEASURED:
        form = script.FORMS_BY_SPELLING[spelling]
        cost = script.measure(form, arch, tools, document["steps"])
        assert cost.to_json() == document["arches"][arch][spelling], (spelling, arch)


def test_fast_path_skips_a_conditional_slow_path_and_counts_a_called_subroutine(
    script: ModuleType, tools: object
) -> None:
    division = script.FORMS_BY_SPELLING["div.rn.f32"]
    listing = script.sass_of(script.ptx_kernel(division, "f32", "sm_86", 1), "sm_86", tools)
    functions = script.parse_sass(listing)
    assert len(functions) == 2  # the kernel and the slow-path subroutine it may call
    fast = script.fast_path(functions, "chain")
    assert not any(opcode.startswith("CALL") for opcode in fast)
    wide = script.FORMS_BY_SPELLING["div.s64"]
    listing = script.sass_of(script.ptx_kernel(wide, "s64", "sm_86", 1), "sm_86", tools)
    fast = script.fast_path(script.parse_sass(listing), "chain")
    assert fast["CALL.REL.NOINC"] == 1 and fast["RET.REL.NODEC"] == 1
    assert sum(fast.values()) > 60


# --------------------------------------------------------------------------- the pnpoly effect


def _per_point(
    toolchain: Toolchain, script: ModuleType, tools: object, tile: int, folder: Path
) -> tuple[float, float, float]:
    """(issue slots, PTX instructions, SASS instructions) per point and polygon edge."""
    source = KERNELS / "tiled_division.cu"
    ptx = folder / f"tiled_{tile}.ptx"
    subprocess.run(
        [str(toolchain.nvcc), "-ptx", "-lineinfo", "-arch=sm_86", f"-DTILE={tile}",
         str(source), "-o", str(ptx)],
        check=True, capture_output=True,
    )  # fmt: skip
    text = ptx.read_text(encoding="utf-8")
    module = parse_ptx(text, str(ptx))
    features = extract_features(module, module.kernels[0].name)
    n, edges = features.parameter_names[3], features.parameter_names[4]
    shape = LaunchShape(block=(256, 1, 1), grid=(64, 1, 1))
    points = 256 * 64 * tile
    one = features.counts(shape, {n: points, edges: 600})
    two = features.counts(shape, {n: points, edges: 1200})
    slots = (two["issue_slots"] - one["issue_slots"]) / 600 / tile
    instructions = (two["instructions"] - one["instructions"]) / 600 / tile
    loops = script.loop_fast_paths(script.parse_sass(script.sass_of(text, "sm_86", tools)),
                                   module.kernels[0].name)  # fmt: skip
    assert len(loops) == 1  # the edge loop; the tile loops are unrolled
    return slots, instructions, sum(loops[0].values()) / tile


def test_tiling_amortizes_the_division_as_in_sass(
    cuda_toolchain: Toolchain, script: ModuleType, tools: object, tmp_path: Path
) -> None:
    small, large = (_per_point(cuda_toolchain, script, tools, tile, tmp_path) for tile in (1, 20))
    slots_ratio, ptx_ratio, sass_ratio = (a / b for a, b in zip(small, large, strict=True))
    # SASS: the division's ten instructions are shared by 20 points in the large tile.
    assert sass_ratio > 2.0
    assert slots_ratio == pytest.approx(sass_ratio, rel=0.25)
    # Counting PTX instructions sees much less of it: that was the wrong ranking.
    assert abs(slots_ratio - sass_ratio) < abs(ptx_ratio - sass_ratio)
    # And per point the slots are the SASS instructions, not just their ratio.
    for slots, _, sass_count in (small, large):
        assert slots == pytest.approx(sass_count, rel=0.3)
