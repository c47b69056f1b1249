"""The PTX parser on hand-written samples that ptxas accepts, on malformed and newer-ISA input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flipflop.ir import (
    Address,
    Expression,
    Function,
    Immediate,
    Instruction,
    Module,
    Negated,
    PredicatePair,
    Register,
    RegisterDeclaration,
    Sink,
    SourceLoc,
    SpecialRegister,
    Symbol,
    Vector,
)
from flipflop.ptx import PtxSyntaxError, parse_ptx
from flipflop.toolchain import ToolchainError, find_toolchain

SAMPLES = Path(__file__).parent / "ptx_samples"
ACCEPTED_BY_PTXAS = {
    "statement_forms.ptx": "sm_80",
    "hopper_sm90a.ptx": "sm_90a",
    "blackwell_tcgen05.ptx": "sm_100a",
    "inline_asm_scopes.ptx": "sm_90a",
}


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def parse_sample(name: str) -> Module:
    return parse_ptx(sample(name), name)


def instructions(function: Function) -> list[Instruction]:
    return [i for block in function.blocks for i in block.instructions]


def at_line(function: Function, line: int) -> Instruction:
    (found,) = [i for i in instructions(function) if i.ptx_line == line]
    return found


def line_of(text: str, fragment: str) -> int:
    """1-based number of the first line, not a comment, that contains `fragment`."""
    return next(
        number
        for number, line in enumerate(text.split("\n"), 1)
        if fragment in line and not line.lstrip().startswith("//")
    )


# --------------------------------------------------------------------------- valid samples


@pytest.mark.parametrize(("name", "arch"), sorted(ACCEPTED_BY_PTXAS.items()))
def test_samples_are_real_ptx(name: str, arch: str, tmp_path: Path) -> None:
    import subprocess

    try:
        ptxas = find_toolchain().ptxas
    except ToolchainError:
        pytest.fail("the CUDA toolchain is missing; run scripts/setup.sh (flipflop[nvcc])")
    result = subprocess.run(
        [str(ptxas), f"-arch={arch}", str(SAMPLES / name), "-o", str(tmp_path / "out.cubin")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", sorted(ACCEPTED_BY_PTXAS))
def test_samples_parse_completely_and_both_paths_agree(name: str) -> None:
    module = parse_sample(name)
    assert module.unknown_statements == ()
    # compared as text: operands are tuples, and Register("p") == Symbol("p") as tuples
    assert repr(module) == repr(parse_ptx(sample(name), name, fast=False))


def test_module_header_and_globals() -> None:
    module = parse_sample("statement_forms.ptx")
    assert (module.version, module.target, module.address_size) == ("8.0", ("sm_80",), 64)
    assert module.files == {1: "/work/forms.cu", 2: "/usr/local/cuda/include/sm_30_intrinsics.hpp"}
    by_name = {v.name: v for v in module.globals}
    assert by_name["counter"].space == "global" and by_name["counter"].type == "u32"
    assert by_name["coeffs"].has_initializer and by_name["coeffs"].size_bytes == 16
    assert by_name["message_ptr"].has_initializer  # = generic($str)
    assert by_name["one"].has_initializer
    assert by_name["staging"].array_dims == (2, 64) and by_name["staging"].linkage == "visible"
    dynamic = by_name["dynamic_smem"]
    assert (dynamic.linkage, dynamic.array_dims, dynamic.align) == ("extern", (None,), 16)
    assert dynamic.size_bytes is None


def test_functions_params_and_directives() -> None:
    module = parse_sample("statement_forms.ptx")
    vprintf = module.function("vprintf")
    assert vprintf is not None and not vprintf.has_body and vprintf.linkage == "extern"
    assert [p.name for p in vprintf.returns] == ["func_retval0"]
    stop = module.function("stop")
    assert stop is not None and stop.directives.noreturn
    forms = module.function("forms")
    assert forms is not None and forms.is_kernel and module.kernels == (forms,)
    struct = forms.params[1]
    assert (struct.type, struct.array_dims, struct.align, struct.size_bytes) == ("b8", (24,), 8, 24)
    directives = forms.directives
    assert (directives.maxntid, directives.minnctapersm, directives.maxnreg) == ((256, 1, 1), 2, 64)
    assert directives.pragmas == ("nounroll",)
    assert RegisterDeclaration("pred", "%p", 4) in forms.registers
    assert RegisterDeclaration("b64", "%SP", 1) in forms.registers
    assert RegisterDeclaration("b16", "lo", 1) in forms.registers  # `.reg.b16 lo` in inline asm
    assert [v.name for v in forms.locals] == ["__local_depot1"]


def test_operand_forms() -> None:
    text = sample("statement_forms.ptx")
    forms = parse_ptx(text).function("forms")
    assert forms is not None

    def operands(fragment: str) -> tuple[object, ...]:
        return at_line(forms, line_of(text, fragment)).operands

    assert operands("%tid.x")[1] == SpecialRegister("tid.x")
    assert operands("%clock64")[1] == SpecialRegister("clock64")
    assert operands("%f3, 0f3F800000")[1] == Immediate(1.0, "0f3F800000")
    assert operands("0dBFF8")[1] == Immediate(-1.5, "0dBFF8000000000000")
    assert operands("%r6, -1")[1] == Immediate(-1, "-1")
    assert operands("0x10U")[1] == Immediate(16, "0x10U")
    assert operands("%r8, 017")[1] == Immediate(15, "017")  # octal, as in C
    assert operands("0b101")[1] == Immediate(5, "0b101")
    assert operands("%rd3, $str")[1] == Symbol("$str")
    assert operands("shfl.sync")[0] == PredicatePair(Register("%r10"), Register("%p1"))
    assert operands("and.pred")[2] == Negated(Register("%p1"))
    loaded, address = operands("ld.global.nc.v4")
    assert loaded == Vector((Register("%f4"), Register("%f5"), Sink(), Sink()))
    assert address == Address(Register("%rd5"), -16)  # [%rd5+-16]
    assert operands("[forms_param_1+16]")[1] == Address(Symbol("forms_param_1"), 16)
    assert operands("red.global")[0] == Address(Symbol("counter"), 0)
    assert operands("call.uni") == (
        Expression("(retval0)"),
        Symbol("vprintf"),
        Expression("(param0, param1)"),
    )


def test_inline_asm_names_registers_without_percent() -> None:
    text = sample("statement_forms.ptx")
    forms = parse_ptx(text).function("forms")
    assert forms is not None
    assert at_line(forms, line_of(text, "mov.b16 lo")).operands == (
        Register("lo"),
        Immediate(0x7FFF, "0x7FFFU"),
    )
    branch = at_line(forms, line_of(text, "@done bra skip"))
    assert branch.guard is not None and branch.guard.predicate == "done"
    assert branch.operands == (Symbol("skip"),)  # a label, not a register


def test_inline_asm_scopes_declare_bare_registers() -> None:
    text = sample("inline_asm_scopes.ptx")
    scopes = parse_ptx(text).function("scopes")
    assert scopes is not None

    def operands(fragment: str, index: int = 0) -> tuple[object, ...]:
        on_line = [i for i in instructions(scopes) if i.ptx_line == line_of(text, fragment)]
        return on_line[index].operands

    # CUB's warp scan, all on one line: every statement of the scope is an instruction
    warp_scan = [i for i in instructions(scopes) if i.ptx_line == line_of(text, "r0|p, %r1")]
    assert [i.full_opcode for i in warp_scan] == ["shfl.sync.up.b32", "add.u32", "mov.u32"]
    assert warp_scan[0].operands[0] == PredicatePair(Register("r0"), Register("p"))
    assert warp_scan[1].guard is not None and warp_scan[1].guard.predicate == "p"
    assert operands("lo|p, lo", 1)[0] == PredicatePair(Register("lo"), Register("p"))
    assert operands("mov.b64 {lo, hi}")[0] == Vector((Register("lo"), Register("hi")))
    assert operands("elect.sync _|P_OUT")[0] == PredicatePair(Sink(), Register("P_OUT"))
    assert operands("selp.b32 %r6")[3] == Register("P_OUT")
    assert operands("elect.sync %rx|%px")[0] == PredicatePair(Register("%rx"), Register("%px"))
    assert operands("[remote]")[1] == Address(Register("remote"), 0)
    assert operands("{hi16, lo16}")[1] == Vector((Register("hi16"), Register("lo16")))
    ranged = [i for i in instructions(scopes) if i.ptx_line == line_of(text, "t<2>")]
    assert [i.operands[0] for i in ranged] == [Register("t0"), Register("t1"), Register("%r11")]
    assert operands("mov.b32 narrow, wide") == (Register("narrow"), Register("wide"))
    # labels inside a scope stay labels, branch targets stay symbols; the wait loop is inlined
    # twice, and each copy's labels are its own (named after the line its scope opens on)
    labels = [block.label for block in scopes.blocks]
    waits = [n for n, line in enumerate(text.split("\n"), 1) if line.strip() == "LAB_WAIT:"]
    opens = [line - 2 for line in waits]  # `{` and `.reg` come before the label
    assert [label for label in labels if label and "@" in label] == [
        f"{name}@{line}" for line in opens for name in ("LAB_WAIT", "DONE")
    ]
    for line in opens:
        in_scope = [i for i in instructions(scopes) if line < i.ptx_line < line + 7]
        wait = [i for i in in_scope if i.opcode == "bra"]
        assert [i.operands for i in wait] == [
            (Symbol(f"DONE@{line}"),),
            (Symbol(f"LAB_WAIT@{line}"),),
        ]
    assert "SKIP" in labels  # a label declared once keeps its name
    assert operands("bra.uni SKIP", 1) == (Symbol("SKIP"),)
    declared = [(r.type, r.prefix, r.count) for r in scopes.registers]
    assert declared[:4] == [
        ("pred", "%p", 3),
        ("b32", "%r", 40),
        ("b64", "%rd", 8),
        ("u32", "r0", 1),
    ]
    assert ("b32", "t", 2) in declared
    assert declared[-2:] == [("b32", "unused", 1), ("b32", "spare", 1)]


def test_basic_blocks_split_at_labels_and_after_branches() -> None:
    forms = parse_sample("statement_forms.ptx").function("forms")
    assert forms is not None
    assert [block.label for block in forms.blocks] == [None, None, "skip", None, "$L__BB1_2"]
    assert [block.instructions[-1].opcode for block in forms.blocks] == [
        "bra",
        "add",
        "bra",
        "red",
        "ret",
    ]
    negated_branch = forms.blocks[2].instructions[-1]
    assert negated_branch.guard is not None
    assert (negated_branch.guard.predicate, negated_branch.guard.negated) == ("%p2", True)


def test_source_positions_follow_loc_including_inlined_code() -> None:
    text = sample("statement_forms.ptx")
    forms = parse_ptx(text).function("forms")
    assert forms is not None
    assert forms.blocks[0].instructions[0].loc == SourceLoc("/work/forms.cu", 10, 0)
    assert at_line(forms, line_of(text, "%tid.x")).loc == SourceLoc("/work/forms.cu", 12, 3)
    shuffle = at_line(forms, line_of(text, "shfl.sync"))
    assert shuffle.loc == SourceLoc("/usr/local/cuda/include/sm_30_intrinsics.hpp", 440, 9)
    call = at_line(forms, line_of(text, "call.uni"))
    assert call.loc == SourceLoc("/work/forms.cu", 20, 3)


def test_hopper_instructions() -> None:
    text = sample("hopper_sm90a.ptx")
    module = parse_ptx(text)
    tile = module.function("hopper_tile")
    assert tile is not None
    assert tile.directives.explicitcluster and tile.directives.reqnctapercluster == (2, 1, 1)
    assert tile.params[0].align == 64 and tile.params[0].array_dims == (128,)
    opcodes = {i.full_opcode for i in instructions(tile)}
    assert {
        "griddepcontrol.wait",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "setmaxnreg.inc.sync.aligned.u32",
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16",
        "fence.proxy.async.shared::cta",
        "barrier.cluster.arrive.release.aligned",
        "mapa.shared::cluster.u32",
    } <= opcodes
    tensor_copy = at_line(tile, line_of(text, "cp.async.bulk.tensor"))
    assert tensor_copy.modifiers[-1] == "mbarrier::complete_tx::bytes"
    assert tensor_copy.operands[1] == Expression("[%rd1, {%r3, %r4}]")
    wgmma = at_line(tile, line_of(text, "wgmma.mma_async"))
    assert wgmma.operands[0] == Vector(tuple(Register(f"%f{n}") for n in range(1, 5)))
    assert wgmma.operands[3] == Register("p")  # declared by `.reg .pred p;` in its scope
    assert at_line(tile, line_of(text, "%cluster_ctarank")).operands[1] == SpecialRegister(
        "cluster_ctarank"
    )


def test_blackwell_instructions() -> None:
    text = sample("blackwell_tcgen05.ptx")
    tile = parse_ptx(text).function("tcgen05_tile")
    assert tile is not None
    load = at_line(tile, line_of(text, "tcgen05.ld"))
    assert load.opcode == "tcgen05"
    assert load.modifiers == ("ld", "sync", "aligned", "32x32b", "x4", "b32")
    assert load.operands[1] == Address(Register("%r3"), 0)
    mma = at_line(tile, line_of(text, "tcgen05.mma"))
    assert mma.modifiers == ("mma", "cta_group::1", "kind::f16")
    assert at_line(tile, line_of(text, "elect.sync")).operands[0] == PredicatePair(
        Register("%r5"), Register("%p2")
    )
    assert at_line(tile, line_of(text, "0x08100490U")).operands[1].value == 0x08100490  # type: ignore[union-attr]
    assert tile.directives.reqntid == (128, 1, 1)


# --------------------------------------------------------------------------- a newer ISA


def test_statements_of_a_newer_isa_are_reported_and_the_rest_parses() -> None:
    text = sample("newer_isa.ptx")
    module = parse_ptx(text, "newer_isa.ptx")
    unknown = module.unknown_statements
    assert [(s.ptx_line, s.column) for s in unknown] == [
        (line_of(text, ".futuredirective"), 2),
        (line_of(text, "tcgen09.teleport"), 2),
        (line_of(text, "tcgen09.wormhole"), 2),
    ]
    assert "unknown directive '.futuredirective'" in unknown[0].message
    assert "unknown instruction 'tcgen09.teleport.sync.aligned.b32'" in unknown[1].message
    assert unknown[2].text.endswith("{%r1, %r2}, %r3;")  # spans three lines
    kernel = module.function("future_kernel")
    assert kernel is not None
    assert [i.opcode for i in instructions(kernel)] == ["ld", "mov", "add", "st", "ret"]
    assert repr(module) == repr(parse_ptx(text, fast=False))


# --------------------------------------------------------------------------- malformed input

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def kernel(body: str) -> str:
    return HEADER + ".visible .entry k()\n{\n" + body + "}\n"


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "grammar"])
@pytest.mark.parametrize(
    ("text", "line", "column", "message_pattern"),
    [
        (kernel("\tadd.s32 %r1, %r2 %r3;\n"), 6, 19, "unexpected '%r3'"),
        (kernel("\tadd.s32 %r1, %r2, %r3\n\tret;\n"), 7, 2, "unexpected 'ret'"),
        (kernel("\tmov.u32 %r1, 08;\n"), 6, 16, "unexpected '8'"),
        (kernel("\tld.global.f32 %f1, [%rd1;\n"), 6, 26, "unexpected ';'"),
        (kernel("\tret;\n").replace("}\n", ""), 6, 6, "unexpected end of file"),
        (HEADER + "\tadd.s32 %r1, %r2, %r3;\n", 4, 2, "outside a function body|'add.s32'"),
        (HEADER + "$L__BB0_1:\n", 4, 1, "outside a function body|'\\$L__BB0_1:'"),
        (".target sm_80\n", 1, 1, "unexpected '.target'; expected '.version'"),
        ("\x7fELF\x02\x01\x01garbage", 1, 1, "unexpected character"),
        (kernel("\tmov.u32 %r1, #3;\n"), 6, 15, "unexpected character '#'"),
        (kernel("\tmov.u32 %r1, " + "9" * 5000 + ";\n"), 6, 15, "5000 digits.*64 bits"),
        (kernel("\tld.u32 %r1, [%rd1+0x1" + "0" * 16 + "];\n"), 6, 20, "0x10+ does not fit"),
        (kernel("\t.loc 1 " + "7" * 30 + " 2\n"), 6, 9, "does not fit in 64 bits"),
    ],
    ids=[
        "missing-comma",
        "missing-semicolon",
        "bad-octal",
        "unclosed-bracket",
        "truncated",
        "instruction-outside-function",
        "label-outside-function",
        "no-version",
        "binary-garbage",
        "stray-character",
        "huge-decimal",
        "hex-over-64-bits",
        "huge-line-number",
    ],
)
def test_malformed_ptx_raises_with_position(
    text: str, line: int, column: int, message_pattern: str, fast: bool
) -> None:
    with pytest.raises(PtxSyntaxError) as raised:
        parse_ptx(text, "bad.ptx", fast=fast)
    error = raised.value
    assert (error.line, error.column) == (line, column), error.message
    assert re.search(message_pattern, error.message), error.message
    assert error.source_line == text.split("\n")[line - 1]
    assert error.filename == "bad.ptx"


def test_empty_ptx_is_a_syntax_error() -> None:
    with pytest.raises(PtxSyntaxError, match="empty PTX"):
        parse_ptx("  \n\n")


def test_windows_line_endings_parse_the_same() -> None:
    text = sample("statement_forms.ptx")
    assert parse_ptx(text.replace("\n", "\r\n")) == parse_ptx(text)


# --------------------------------------------------------------------------- fast path = grammar

ODD_OPERANDS = [
    "%clock",  # a special register ...
    "[%clock]",  # ... but only a register inside an address, a vector or after '|'
    "{%clock, _}",
    "%p|%clock",
    "%clock|%p",
    "!%clock",
    "!_",
    "[_]",
    "- 1",
    "-0x1U",
    "0f3F80000012",
    "1.5",
    "1e3",
    "08",
    "_",
    "_x",
    "%tid.w",
    "%tidx",
    "[%rd1 - 4]",
    "[%rd1+-0x4]",
    "[%rd1--4]",
    "[0x100]",
    "[sym + 8]",
    "sym-8",
    "{ %r1 , %r2 }",
    "{}",
    "[%rd1, {%r1, %r2}]",
    "%envreg3",
    "%pm0_64",
    "r0|p",  # bare names: registers that inline asm declares
    "_|P_OUT",
    "p|_",
    "r0|%p",
    "%clock|p",
    "p|%clock",
    "_x|p",
    "p | q",
    "{lo, hi}",
    "[remote]",
    "!p",
    "%r2\u2028",  # Unicode spaces are not PTX whitespace
    "\u00a0%r2",
    "18446744073709551615",
    "18446744073709551616",
    "%r2{ %r3",  # an opening brace that does not close, between two operands
    "%r2[ %r3",
    "%r2} %r3",
]


ODD_SCOPES = [
    "{ .reg .b32 a<2>; mov.b32 a0, 1; mov.b32 a1, a0; }",
    "{ .reg .b32 a<1>; mov.b32 a0, a; }",  # a<1> declares a0, not a
    "{ .reg .b32 x<010>; mov.b32 x7, x8; }",  # octal count: x0 .. x7
    "{ .reg .b32 x; } mov.b32 x, 1;",  # x is a register only inside its scope
    "{.reg.b16 h;\n mov.b16 h, 1;}",
    "{ { .reg .pred q; @q bra L; L: } }",
    "{\n{\n.reg .pred q;\n}\n@q bra L;\nL:\n}",
    "{ .reg .v4 .f32 v; mov.b32 %r1, 1; }",
    "{ .reg .b32 %r<0x10>; }",
    "{ .reg .b32 function_name; mov.b32 function_name, 1; }",
    "{ .reg .pred p; elect.sync _|p, -1; }",
    "{ .reg .b32 r; .reg .pred p; shfl.sync.up.b32 r|p, r, 1, 0, -1; }",
    "{ .reg .b32 lo, hi; mov.b64 {lo, hi}, %rd1; }",
    "{ .reg .b32 a; mov.b32 %r1, [a+4]; }",
    "{ .reg .pred p; setp.eq.u32 p, 1, 1; @!p bra.uni X; X: }",
    "{ .reg .b32 t; tcgen09.quantum t; }",  # a newer ISA's instruction inside a scope
    "{ .reg .b32 t;\n tcgen09.quantum t;\n}",
    "{ .reg .b32 a,\n b; mov.b32 a, b; }",
    "{ .reg .b32 a;\n mov.b32 a, 1; .reg .b32 b,\n c; }",
    "{ // callseq\n.param .b32 param0;\nst.param.b32 [param0], 1;\n}",
    "}",  # one brace too many
    "{",  # one brace too few
    "{ }}",
    "{ .reg .b32 a; mov.b32 a, 1;",
    ".reg .b32 x; mov.b32 x, 1;",
    "{ .reg .b32 ; }",
    "{ .reg .b32 a<>; }",
    "{ .reg a; }",
    "{ .reg .b32 a b; }",
    "{ .reg .b32 a, %clock; }",
    "{ .reg .b32 a; mov.b32 a, 1;; }",
    "{ LAB: mov.b32 %r1, 1; }",
    "{ @p LAB: }",
    "{ mov.b32 %r1, {1, 2}; }",
    "mov.b32 %r1, 1; }\n{",
    "{ .regx .b32 a; }",
    "{ .reg .b32 a; } // }",
    "{ .reg .b32 a; /* } */ }",
    '{ .reg .b32 a; .pragma "nounroll"; }',
    "{ L: bra L; }\n{ L: bra L; }",  # one label per copy of inlined asm
    "{\nL:\nbra L;\n}\n{\nL:\nbra L;\n}\nbra L;",
    "L:\n{ L: bra L; }\nbra L;",
    "{ { L: bra L; } L: bra L; }",
]


@pytest.mark.parametrize("body", ODD_SCOPES)
def test_fast_path_reads_odd_scopes_as_the_grammar_does(body: str) -> None:
    text = kernel(f"\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n{body}\n\tret;\n")
    outcomes: list[object] = []
    for fast in (True, False):
        try:
            outcomes.append(repr(parse_ptx(text, fast=fast)))
        except PtxSyntaxError as error:
            outcomes.append((error.line, error.column, error.message))
    assert outcomes[0] == outcomes[1]


ODD_SECTIONS = [
    "$L__info_string0:\n.b8 95\n.b8 0\n",
    ".b8 95,\n 90\n.b8 1\n",  # a statement continued on the next line
    ".b32 a +\n 4\n.b8 1\n",
    ".b64 $L__info_string0+8\n$L__x: .b8 7 // a comment\n",
    "/*\n.b8 1\n*/\n.b8 2\n",
    ".b8 08\n",
    ".b8 1 2\n",
    ".b8\n",
    ".b8 1, , 2\n",
    "$L__y:\n",
    ".b8 1\n}\n.b8 2\n",  # data after the section closed
    "",
]


@pytest.mark.parametrize("body", ODD_SECTIONS)
def test_fast_path_reads_odd_sections_as_the_grammar_does(body: str) -> None:
    text = kernel("\tret;\n") + f"\t.section\t.debug_str\n\t{{\n{body}\t}}\n"
    outcomes: list[object] = []
    for fast in (True, False):
        try:
            outcomes.append(repr(parse_ptx(text, fast=fast)))
        except PtxSyntaxError as error:
            outcomes.append((error.line, error.column, error.message))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("operand", ODD_OPERANDS)
def test_fast_path_reads_odd_operands_as_the_grammar_does(operand: str) -> None:
    text = kernel(f"\tmov.b32 \t%r1, {operand};\n\tret;\n")
    outcomes: list[object] = []
    for fast in (True, False):
        try:
            outcomes.append(repr(parse_ptx(text, fast=fast)))
        except PtxSyntaxError as error:
            outcomes.append((error.line, error.column, error.message))
    assert outcomes[0] == outcomes[1]
