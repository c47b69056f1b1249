"""The parser reads 100% of the corpus PTX, for every architecture, and counts what the text has."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus_ptx import CorpusCompiler, corpus_cases, corpus_compiler
from flipflop.ir import (
    Address,
    Instruction,
    Module,
    Negated,
    Operand,
    PredicatePair,
    Symbol,
    Vector,
)
from flipflop.ptx import parse_ptx

__all__ = ["corpus_compiler"]  # the session fixture, used by name below

CASES = corpus_cases()
CASE_IDS = [f"{path.stem}-{arch}" for path, arch in CASES]

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRINGS = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_LINE_DIRECTIVES = re.compile(r"^[ \t]*\.(?:loc|file)\b[^\n]*$", re.MULTILINE)
_FUNCTION_HEADER = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_LEADING_LABEL = re.compile(r"^\s*[A-Za-z_$][\w$]*\s*:(?!:)")
_BRACES_AND_SPACE = "{} \t\r\n"


def instructions_by_text(ptx: str) -> dict[str, int]:
    """Instruction statements per function, counted from the text alone, without the parser.

    In each function body, every ';'-terminated statement that is not a directive or a
    declaration is an instruction (labels and scope braces in front of it are dropped).
    """
    text = _LINE_DIRECTIVES.sub("", _COMMENTS.sub("", _STRINGS.sub('""', ptx)))
    counts: dict[str, int] = {}
    for header in _FUNCTION_HEADER.finditer(text):
        position = header.end()
        if text[position:].lstrip().startswith("("):
            position = text.index(")", position) + 1
        brace, semicolon = text.find("{", position), text.find(";", position)
        if brace < 0 or 0 <= semicolon < brace:
            continue  # a prototype without a body
        depth, end = 0, brace
        for end in range(brace, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                break
        count = 0
        for statement in text[brace + 1 : end].split(";"):
            statement = statement.strip(_BRACES_AND_SPACE)
            while (label := _LEADING_LABEL.match(statement)) is not None:
                statement = statement[label.end() :].strip(_BRACES_AND_SPACE)
            if statement and not statement.startswith("."):
                count += 1
        counts[header.group(1)] = count
    return counts


def instructions_by_parser(module: Module) -> dict[str, int]:
    return {f.name: f.instruction_count for f in module.functions if f.has_body}


@pytest.mark.slow
@pytest.mark.parametrize(("source", "arch"), CASES, ids=CASE_IDS)
def test_corpus_parses_completely(corpus_compiler: CorpusCompiler, source: Path, arch: str) -> None:
    ptx = corpus_compiler.ptx(source, arch)
    module = parse_ptx(ptx, f"{source.stem}.{arch}.ptx")

    assert module.unknown_statements == ()
    assert module.target[0] == arch
    assert module.kernels, "every corpus file defines at least one kernel"
    assert instructions_by_parser(module) == instructions_by_text(ptx)
    for function in module.functions:
        for block in function.blocks:
            # a block ends only at its last instruction
            assert not any(
                instruction.opcode in ("bra", "ret", "exit")
                for instruction in block.instructions[:-1]
            )
            assert all(isinstance(i, Instruction) and i.ptx_line > 0 for i in block.instructions)


@pytest.mark.slow
@pytest.mark.parametrize(("source", "arch"), CASES, ids=CASE_IDS)
def test_fast_path_agrees_with_the_grammar(
    corpus_compiler: CorpusCompiler, source: Path, arch: str
) -> None:
    ptx = corpus_compiler.ptx(source, arch)
    # compared as text: operands are tuples, and Register("p") == Symbol("p") as tuples
    assert repr(parse_ptx(ptx, fast=True)) == repr(parse_ptx(ptx, fast=False))


# Names a function body declares that the IR does not keep: call-sequence parameters and
# call prototypes.
_BODY_NAMES = re.compile(
    r"^\s*\.param\b[^;]*?([A-Za-z_$][\w$]*)\s*(?:\[\d*\])?\s*;"
    r"|^\s*([A-Za-z_$][\w$]*)\s*:\s*\.callprototype",
    re.MULTILINE,
)


def symbols(operand: Operand) -> Iterator[str]:
    if isinstance(operand, Symbol):
        yield operand.name
    elif isinstance(operand, Address):
        yield from symbols(operand.base)
    elif isinstance(operand, Vector):
        for element in operand.elements:
            yield from symbols(element)
    elif isinstance(operand, (Negated, PredicatePair)):
        for part in operand:
            yield from symbols(part)


@pytest.mark.slow
@pytest.mark.parametrize(("source", "arch"), CASES, ids=CASE_IDS)
def test_every_symbol_names_a_declaration(
    corpus_compiler: CorpusCompiler, source: Path, arch: str
) -> None:
    """Inline asm names the registers it declares without '%' (CUB's `r0|p`, CUTLASS's
    `[remAddr32]`, cuda_fp16.h's `{low,high}`): those come out as registers, so every symbol
    left names a label, a variable, a parameter or a function."""
    ptx = corpus_compiler.ptx(source, arch)
    module = parse_ptx(ptx)
    module_names = {v.name for v in module.globals} | {f.name for f in module.functions}
    module_names.add("WARP_SZ")  # PTX's predefined warp size constant (`warpSize`)
    module_names |= {name for pair in _BODY_NAMES.findall(ptx) for name in pair if name}
    for function in module.functions:
        declared = (*function.params, *function.returns, *function.locals)
        names = module_names | {variable.name for variable in declared}
        names |= {block.label for block in function.blocks if block.label is not None}
        for block in function.blocks:
            for instruction in block.instructions:
                for operand in instruction.operands:
                    undeclared = set(symbols(operand)) - names
                    assert not undeclared, (function.name, instruction.ptx_line, undeclared)


@pytest.mark.slow
def test_source_positions_point_into_the_corpus_file(corpus_compiler: CorpusCompiler) -> None:
    source = Path(__file__).parent / "corpus" / "saxpy.cu"
    module = parse_ptx(corpus_compiler.ptx(source, "sm_80"))
    source_lines = len(source.read_text(encoding="utf-8").splitlines())
    located = [
        instruction.loc
        for function in module.functions
        for block in function.blocks
        for instruction in block.instructions
        if instruction.loc is not None and instruction.loc.file.endswith("saxpy.cu")
    ]
    assert located
    assert all(0 <= loc.line <= source_lines for loc in located)
    assert any(loc.line > 0 for loc in located)


def test_the_text_count_sees_every_statement_kind() -> None:
    ptx = """
.version 9.0
.target sm_80
.address_size 64
.func f(.param .b32 a);
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>;
    .loc 1 2 3
    ld.param.u64 %rd1, [p];
$L__BB0_1:
    @%p1 bra $L__BB0_1;
    { // callseq 0, 0
    .param .b32 param0;
    st.param.b32 [param0], %r1;
    call.uni f, (param0);
    } // callseq 0
    { .reg.b32 t; mov.b32 t, %r1; }
    ret;
}
"""
    assert instructions_by_text(ptx) == {"k": 6}
    module = parse_ptx(ptx)
    assert instructions_by_parser(module) == {"k": 6}
