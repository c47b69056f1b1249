"""Line scanner: the fast path for the statements that make up almost all of a PTX file.

nvcc writes one statement per line. Lines that are a single complete instruction, a label or a
`.loc` are read here with regular expressions built from the grammar's own terminals; so are the
lines of inline-asm scopes (`{`, `.reg` declarations, instructions, `}`, several on one line);
each distinct opcode, operand and line spelling is interpreted once and reused; the data lines of
debug sections, which make nothing in the IR, are checked and skipped. Every other line (module
and function headers, other declarations, call sequences) goes to the Lark grammar unchanged, at
the same line and column. Whenever the fast path is unsure, it hands the line to the grammar, so
the grammar decides what is valid.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from lark import Lark
from lark.exceptions import LarkError

from flipflop.ir import (
    Guard,
    Immediate,
    Instruction,
    Operand,
    Register,
    SourceLoc,
    Symbol,
    UnknownStatement,
    Vector,
    split_opcode,
)
from flipflop.ptx import values
from flipflop.ptx.builder import guard_of, string_value, unknown_opcode_message
from flipflop.ptx.grammar import ptx_parser, terminal_regex
from flipflop.ptx.isa import (
    KNOWN_DIRECTIVES,
    KNOWN_OPCODES,
    NEWLINE_TERMINATED_DIRECTIVES,
)
from flipflop.ptx.scopes import GRAMMAR, PART_OF_STATEMENT, SCANNED, ScopeSpan, ScopeStack
from flipflop.ptx.statements import RegisterMark, register_mark

_new_tuple = tuple.__new__  # builds a NamedTuple without the Python-level __new__ wrapper


@dataclass(frozen=True)
class Syntax:
    """Compiled regular expressions of the fast path, each assembled from grammar terminals."""

    instruction: re.Pattern[str]
    loc: re.Pattern[str]
    label: re.Pattern[str]
    statement_start: re.Pattern[str]
    piece: re.Pattern[str]
    declarator: re.Pattern[str]
    section_data: re.Pattern[str]
    operand: re.Pattern[str]
    vector_element: re.Pattern[str]
    plain_register: re.Pattern[str]
    special_register: re.Pattern[str]
    file: re.Pattern[str]
    parser: Lark


@lru_cache(maxsize=1)
def fast_syntax() -> Syntax:
    opcode = terminal_regex("OPCODE")
    guard = terminal_regex("GUARD")
    label = terminal_regex("LABEL")
    special = terminal_regex("SPECIAL_REGISTER")
    register = terminal_regex("REGISTER")
    ident = terminal_regex("IDENT")
    integer = terminal_regex("INT")
    float_hex = terminal_regex("FLOAT_HEX")
    decimal = terminal_regex("FLOAT_DECIMAL")
    string = terminal_regex("STRING")
    type_name = terminal_regex("TYPE")
    vector_type = terminal_regex("VECTOR_TYPE")
    blank = r"[ \t]*"
    value = rf"(?:{integer}|{ident})"
    section_value = rf"{value}(?:{blank}[+-]{blank}{value})*"
    comment = r"(?://[^\n]*)?"
    # what INT reads as the same decimal value; longer numbers are left to the grammar
    decimal_int = "(0|[1-9][0-9]{0,18})"
    number = (
        rf"(?P<negative>-)?{blank}(?:(?P<float_hex>{float_hex})|(?P<decimal>{decimal})"
        rf"|(?P<integer>{integer}))"
    )
    operand = (
        rf"{blank}(?:(?P<special>{special})|(?P<register>{register})|{number}|(?P<sink>_)"
        rf"|(?P<symbol>{ident})"
        rf"|(?P<address>\[{blank}(?:(?P<base_register>{register})|(?P<base_symbol>{ident})"
        rf"|(?P<base_integer>{integer})){blank}(?:(?P<offset_sign>[+-]){blank}"
        rf"(?P<offset_negative>-)?{blank}(?P<offset>{integer}))?{blank}\])"
        rf"|(?P<pair>(?P<pair_first>(?!{special}){register}|{ident}){blank}\|{blank}"
        rf"(?P<pair_second>{register}|{ident}))"
        rf"|(?P<negation>!{blank}(?:(?P<negated_register>{register})"
        rf"|(?P<negated_symbol>{ident})))"
        rf"|(?P<expression>(?P<offset_symbol>{ident}){blank}(?P<symbol_sign>[+-]){blank}"
        rf"(?P<symbol_offset>{integer}))"
        rf"){blank}"
    )
    vector_element = (
        rf"{blank}(?:(?P<register>{register})|{number}|(?P<sink>_)|(?P<symbol>{ident})){blank}"
    )
    return Syntax(
        # one instruction on its line, alone or as the only statement of a `{ }` scope (inline
        # asm such as cuda_fp16.h's `{  cvt.rn.f16.f32 %rs1, %f2;}`)
        instruction=re.compile(
            rf"{blank}(\{{{blank})?(?:({guard})[ \t]+)?({opcode})(?:[ \t]+([^;\"/()\n]*))?"
            rf"{blank};{blank}(?(1)\}}{blank}){comment}"
        ),
        loc=re.compile(
            rf"{blank}\.loc[ \t]+{decimal_int}[ \t]+{decimal_int}[ \t]+{decimal_int}"
            rf"(?:{blank},{blank}function_name[ \t]+{ident}{blank},{blank}inlined_at[ \t]+"
            rf"{decimal_int}[ \t]+{decimal_int}[ \t]+{decimal_int})?{blank}{comment}"
        ),
        label=re.compile(rf"{blank}({label}){blank}{comment}"),
        statement_start=re.compile(
            rf"{blank}(?:(?:{guard})[ \t]+)?(?:({label})|({opcode})|(\.[A-Za-z_][A-Za-z0-9_]*))"
        ),
        # one statement or brace of a line that holds several (inline asm scopes)
        piece=re.compile(
            rf"{blank}(?:(?P<open>\{{)|(?P<close>\}})"
            rf"|\.reg(?![A-Za-z0-9_$]){blank}(?:(?P<vector>{vector_type}){blank})?"
            rf"(?P<type>{type_name})(?P<declarators>[^;{{}}\"/]*);"
            rf"|(?P<label>{label})"
            rf"|(?:(?P<guard>{guard})[ \t]+)?(?P<opcode>{opcode})"
            rf"(?:[ \t]+(?P<operands>[^;\"/()\n]*))?{blank};"
            rf"|(?P<comment>//[^\n]*))"
        ),
        declarator=re.compile(
            rf"{blank}({register}|{ident}){blank}(?:<{blank}({integer}){blank}>{blank})?"
        ),
        # a label and/or one data statement of a `.section` body, complete on its line
        section_data=re.compile(
            rf"{blank}(?:{label}{blank})?(?:{type_name}[ \t]+{section_value}"
            rf"(?:{blank},{blank}{section_value})*{blank})?{comment}"
        ),
        operand=re.compile(operand),
        vector_element=re.compile(vector_element),
        plain_register=re.compile(register),
        special_register=re.compile(special),
        file=re.compile(rf"^{blank}\.file[ \t]+{decimal_int}[ \t]+({string})", re.MULTILINE),
        parser=ptx_parser(),
    )


@dataclass(frozen=True)
class Scan:
    """What the line scanner found, in PTX line order."""

    structure_text: str  # the lines left for the grammar, at their original line numbers
    events: list[Instruction | str]  # fast instructions and labels (a label is its name)
    event_lines: list[int]
    loc_lines: list[int]  # lines of the `.loc` directives read by the fast path
    loc_values: list[SourceLoc]
    unknown: list[UnknownStatement]
    files: dict[int, str]  # the `.file` table the fast path stamped source positions with
    registers: list[RegisterMark]  # `.reg` declarations read by the fast path
    scopes: list[ScopeSpan]  # scopes in which the fast path read bare registers or labels


def module_files(text: str) -> dict[int, str]:
    """The `.file` table, read ahead: nvcc writes it after the functions that refer to it."""
    pattern = fast_syntax().file
    return {int(index): string_value(path) for index, path in pattern.findall(text)}


class _LineState:
    """Where a line falls relative to multi-line constructs; only changed by grammar lines,
    except for the scopes the fast path opens and closes."""

    __slots__ = (
        "busy",
        "in_comment",
        "pending",
        "scopes",
        "section_data",
        "section_depth",
        "section_open",
    )

    def __init__(self) -> None:
        self.scopes = ScopeStack()  # braces open outside `.section`s
        self.pending = False  # inside a statement that started on an earlier line
        self.in_comment = False  # inside /* ... */
        self.section_depth: int | None = None  # brace depth inside a `.section`, else None
        self.section_open = False
        self.section_data = False  # inside a section's braces, after a complete statement
        self.busy = False  # any of the above: the next line belongs to the grammar


_CODE_PIECES = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/|/\*.*')


def _code_only(line: str, state: _LineState) -> str:
    """The line without strings and comments; opens or closes a /* */ comment in `state`."""
    if state.in_comment:
        end = line.find("*/")
        if end < 0:
            return ""
        state.in_comment = False
        line = line[end + 2 :]

    def replace(match: re.Match[str]) -> str:
        piece = match.group()
        if piece.startswith("/*") and not piece.endswith("*/"):
            state.in_comment = True
            return " "
        return '""' if piece.startswith('"') else " "

    return _CODE_PIECES.sub(replace, line)


def _follow(line: str, number: int, state: _LineState) -> None:
    """Update `state` after a line that went to the grammar."""
    _follow_code(_code_only(line, state).strip(), number, state)
    state.busy = state.pending or state.in_comment or state.section_depth is not None


def _follow_code(code: str, number: int, state: _LineState) -> None:
    if not code:
        return
    if state.section_depth is None and code.startswith(".section"):
        state.section_depth = 0
        state.section_open = False
    if state.section_depth is not None:
        state.section_depth += code.count("{") - code.count("}")
        state.section_open = state.section_open or "{" in code
        state.section_data = state.section_open and not code.endswith((",", "+", "-"))
        if state.section_open and state.section_depth <= 0:
            state.section_depth = None
            state.section_data = False
            state.pending = False
        return
    if "{" in code or "}" in code:
        state.scopes.follow_grammar(code, number, not state.pending)
    else:
        state.scopes.last_char = code[-1]
    ends_statement = code[-1] in ";{}:"
    state.pending = not ends_statement and not (
        code.startswith(NEWLINE_TERMINATED_DIRECTIVES) and not state.pending
    )


class _OperandReader:
    """Reads operand lists, each distinct spelling once; the grammar reads what regexes cannot."""

    def __init__(self, syntax: Syntax) -> None:
        self._operand = syntax.operand.fullmatch
        self._element = syntax.vector_element.fullmatch
        self._plain_register = syntax.plain_register.fullmatch
        self._special_register = syntax.special_register.fullmatch
        self._parser = syntax.parser
        self._pieces: dict[str, Operand | None] = {}  # None: only the grammar can judge it

    def read_list(self, text: str) -> tuple[Operand, ...] | None:
        """Operands of an instruction, or None when the grammar must judge the line."""
        if "{" in text:
            pieces = _TOP_LEVEL_OPERAND.findall(text)
            if ",".join(pieces) != text:  # a brace or bracket that does not close
                return None
        else:
            pieces = text.split(", ")  # nvcc's spelling; anything else is split at each comma
            if len(pieces) != text.count(",") + 1:
                pieces = text.split(",")
        cache = self._pieces
        operands = tuple(map(cache.get, pieces))
        if None not in operands:
            return operands  # type: ignore[return-value]
        for piece in pieces:
            if piece not in cache:
                cache[piece] = self._read(piece)
            if cache[piece] is None:
                return None
        return tuple(map(cache.__getitem__, pieces))  # type: ignore[arg-type]

    def _read(self, text: str) -> Operand | None:
        stripped = text.strip(" \t")  # what the grammar skips: not every Unicode space
        if self._plain_register(stripped) and not self._special_register(stripped):
            return Register(stripped)
        try:
            match = self._operand(text)
            if match is not None:
                return _operand_from(match)
            if stripped.startswith("{") and stripped.endswith("}"):
                elements: list[Operand] = []
                for element_text in stripped[1:-1].split(","):
                    element = self._element(element_text)
                    if element is None:
                        return self._by_grammar(text)
                    elements.append(_operand_from(element))
                return Vector(tuple(elements))
        except values.IntegerOutOfRange:
            return None  # the grammar reports it, at its position
        return self._by_grammar(text)

    def _by_grammar(self, text: str) -> Operand | None:
        try:
            operand: Operand = cast(Operand, self._parser.parse(text, start="operand"))
        except LarkError:
            return None
        return operand


_TOP_LEVEL_OPERAND = re.compile(r"(?:\[[^\]]*\]|\{[^}]*\}|[^,\[{])+")


def _operand_from(match: re.Match[str]) -> Operand:
    """The operand a fast-path match denotes, built as the grammar's transformer builds it."""
    kind = match.lastgroup
    if kind == "register":
        return values.register(match.group(kind))
    if kind == "special":
        return values.special_register(match.group(kind))
    if kind == "integer":
        return values.integer_immediate(match.group(kind), match.group("negative") is not None)
    if kind == "float_hex":
        return values.float_hex_immediate(match.group(kind), match.group("negative") is not None)
    if kind == "decimal":
        return values.decimal_immediate(match.group(kind), match.group("negative") is not None)
    if kind == "sink":
        return values.SINK
    if kind == "symbol":
        return values.symbol(match.group(kind))
    if kind == "address":
        return _address_from(match)
    if kind == "pair":
        first, second = match.group("pair_first", "pair_second")
        return values.predicate_pair(_pair_part(first), _pair_part(second))
    if kind == "negation":
        register_name, symbol_name = match.group("negated_register", "negated_symbol")
        if register_name is not None:
            return values.negated(values.register(register_name))
        return values.negated(values.symbol(symbol_name))
    name, sign, offset = match.group("offset_symbol", "symbol_sign", "symbol_offset")
    return values.symbol_offset(name, sign == "-", offset)


def _pair_part(text: str) -> Operand:
    if text == "_":
        return values.SINK
    return values.register(text) if text.startswith("%") else values.symbol(text)


def _address_from(match: re.Match[str]) -> Operand:
    register_name, symbol_name, integer_text = match.group(
        "base_register", "base_symbol", "base_integer"
    )
    base: Register | Symbol | Immediate
    if register_name is not None:
        base = values.register(register_name)
    elif symbol_name is not None:
        base = values.symbol(symbol_name)
    else:
        base = values.integer_immediate(integer_text, False)
    offset = 0
    sign, negative, offset_text = match.group("offset_sign", "offset_negative", "offset")
    if offset_text is not None:
        offset = values.integer_value(offset_text)
        if negative is not None:
            offset = -offset
        if sign == "-":
            offset = -offset
    return values.address(base, offset)


# What a line of several pieces holds, in order (see `read_pieces` in `scan`).
_OPEN, _CLOSE, _REGISTERS, _LABEL, _INSTRUCTION = range(5)
_PIECE_KINDS = {
    "open": _OPEN,
    "close": _CLOSE,
    "declarators": _REGISTERS,
    "label": _LABEL,
    "opcode": _INSTRUCTION,
    "operands": _INSTRUCTION,
}
Pieces = tuple[tuple[Any, ...], ...]


def scan(text: str, fast: bool = True, files: dict[int, str] | None = None) -> Scan:
    """Split `text` into fast-path statements and lines for the grammar.

    With `fast=False` every statement goes to the grammar (used to check that both paths agree).
    Unknown instructions and directives of a newer ISA are set aside here in both modes.
    """
    syntax = fast_syntax()
    if files is None:
        files = module_files(text)
    match_instruction = syntax.instruction.fullmatch
    match_loc = syntax.loc.fullmatch
    match_label = syntax.label.fullmatch
    match_piece = syntax.piece.match
    match_declarator = syntax.declarator.fullmatch
    match_section = syntax.section_data.fullmatch
    reader = _OperandReader(syntax)
    read_list = reader.read_list
    operand_lists: dict[str, tuple[Operand, ...] | None] = {}
    # opcode spelling -> (base, modifiers, spelling); base "" marks an opcode of a newer ISA
    opcodes: dict[str, tuple[str, tuple[str, ...], str]] = {}
    guards: dict[str, Guard] = {}
    locs: dict[str, SourceLoc] = {}
    piece_lines: dict[str, Pieces | None] = {}

    events: list[Instruction | str] = []
    event_lines: list[int] = []
    loc_lines: list[int] = []
    loc_values: list[SourceLoc] = []
    unknown: list[UnknownStatement] = []
    registers: list[RegisterMark] = []
    grammar_lines: list[tuple[int, str]] = []
    state = _LineState()
    scopes = state.scopes
    current_loc: SourceLoc | None = None
    unknown_start: tuple[int, int, str, str] | None = None  # line, column, text so far, message

    def opcode_spec(opcode_text: str) -> tuple[str, tuple[str, ...], str]:
        spec = opcodes.get(opcode_text)
        if spec is None:
            base, modifiers = split_opcode(opcode_text)
            spelling = sys.intern(opcode_text)
            spec = opcodes[opcode_text] = (
                (base, modifiers, spelling) if base in KNOWN_OPCODES else ("", (), "")
            )
        return spec

    def read_pieces(line: str) -> Pieces | None:
        """The braces and statements of a line, or None when the grammar must read it."""
        code = line.rstrip()
        pieces: list[tuple[Any, ...]] = []
        position, end = 0, len(code)
        while position < end:
            match = match_piece(code, position)
            if match is None:
                return None
            position = match.end()
            kind = _PIECE_KINDS.get(match.lastgroup or "")
            if kind is None:  # a comment runs to the end of the line
                continue
            if kind == _OPEN:
                pieces.append((_OPEN, match.start("open") + 1))
            elif kind == _CLOSE:
                pieces.append((_CLOSE,))
            elif kind == _REGISTERS:
                declarators: list[tuple[str, int | None]] = []
                for declarator_text in match.group("declarators").split(","):
                    declarator = match_declarator(declarator_text)
                    if declarator is None:
                        return None
                    name, count = declarator.groups()
                    try:
                        declarators.append(
                            (name, None if count is None else values.integer_value(count))
                        )
                    except values.IntegerOutOfRange:
                        return None
                pieces.append((_REGISTERS, match.group("type")[1:], tuple(declarators)))
            elif kind == _LABEL:
                pieces.append((_LABEL, match.group("label").rstrip(":").rstrip()))
            else:
                guard_text, opcode_text, operand_text = match.group("guard", "opcode", "operands")
                spec = opcode_spec(opcode_text)
                if not spec[0]:
                    return None  # a newer ISA's instruction: the grammar reports it
                operands: tuple[Operand, ...] | None = ()
                if operand_text:
                    operands = operand_lists.get(operand_text)
                    if operands is None:
                        operands = operand_lists[operand_text] = read_list(operand_text)
                    if operands is None:
                        return None
                guard = guard_of(guard_text) if guard_text else None
                pieces.append((_INSTRUCTION, spec, operands, guard))
        return tuple(pieces)

    def fits(pieces: Pieces) -> bool:
        """Whether the pieces may be read here: scopes open only inside function bodies and
        close only scopes the fast path opened; nothing inside a vector or an initializer."""
        opened = 0  # scopes opened on this line and still open
        closed = 0  # scopes of earlier lines this line closes
        for piece in pieces:
            kind = piece[0]
            if kind == _CLOSE:
                if opened:
                    opened -= 1
                elif scopes.kind_below(closed) == SCANNED:
                    closed += 1
                else:
                    return False
            elif not opened:
                enclosing = scopes.kind_below(closed)
                if kind in (_OPEN, _REGISTERS):
                    if enclosing not in (SCANNED, GRAMMAR):
                        return False
                elif enclosing == PART_OF_STATEMENT:
                    return False
            if kind == _OPEN:
                opened += 1
        return True

    for number, line in enumerate(text.split("\n"), 1):
        if unknown_start is not None:
            start_line, start_column, joined, message = unknown_start
            joined = f"{joined} {line.strip()}"
            if ";" in line:
                unknown.append(UnknownStatement(joined, start_line, start_column, message))
                unknown_start = None
            else:
                unknown_start = (start_line, start_column, joined, message)
            continue
        if state.busy:
            # debug sections' data (`.b8 95`, a line each) makes nothing in the IR: once the
            # section is open, complete data lines need not go through the grammar
            if fast and state.section_data and not state.in_comment and match_section(line):
                continue
            grammar_lines.append((number, line))
            _follow(line, number, state)
            continue
        if fast and scopes.in_body:
            loc = locs.get(line)
            if loc is not None:
                current_loc = loc
                loc_lines.append(number)
                loc_values.append(loc)
                continue
            match = match_instruction(line)
            if match is not None:
                guard_text, opcode_text, operand_text = match.group(2, 3, 4)
                spec = opcodes.get(opcode_text)
                if spec is None:
                    spec = opcode_spec(opcode_text)
                if spec[0]:
                    if operand_text:
                        operands = operand_lists.get(operand_text)
                        if operands is None:
                            operands = operand_lists[operand_text] = read_list(operand_text)
                    else:
                        operands = ()
                    if operands is not None:
                        if guard_text:
                            guard = guards.get(guard_text)
                            if guard is None:
                                guard = guards[guard_text] = guard_of(guard_text)
                        else:
                            guard = None
                        events.append(
                            _new_tuple(
                                Instruction,
                                (spec[0], spec[1], operands, guard, current_loc, number, spec[2]),
                            )
                        )
                        event_lines.append(number)
                        continue
            elif ".loc" in line:
                loc_match = match_loc(line)
                if loc_match is not None:
                    index, source_line, column = loc_match.group(1, 2, 3)
                    loc = SourceLoc(files.get(int(index), ""), int(source_line), int(column))
                    locs[line] = current_loc = loc
                    loc_lines.append(number)
                    loc_values.append(loc)
                    continue
            else:
                label_match = match_label(line)
                if label_match is not None:
                    label = label_match.group(1).rstrip(":").rstrip()
                    events.append(label)
                    event_lines.append(number)
                    scopes.declare_label(label)
                    continue
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if fast and scopes.in_body:
            if line in piece_lines:
                pieces = piece_lines[line]
            else:
                pieces = piece_lines[line] = read_pieces(line)
            if pieces is not None and fits(pieces):
                for piece in pieces:
                    kind = piece[0]
                    if kind == _INSTRUCTION:
                        spec, operands, guard = piece[1], piece[2], piece[3]
                        events.append(
                            _new_tuple(
                                Instruction,
                                (spec[0], spec[1], operands, guard, current_loc, number, spec[2]),
                            )
                        )
                        event_lines.append(number)
                    elif kind == _OPEN:
                        scopes.open_scanned(number, piece[1])
                    elif kind == _CLOSE:
                        scopes.close_scanned(number)
                    elif kind == _REGISTERS:
                        mark = register_mark(piece[1], list(piece[2]), number)
                        registers.append(mark)
                        scopes.declare(mark.bare_names, mark.bare_ranges)
                    else:
                        events.append(piece[1])
                        event_lines.append(number)
                        scopes.declare_label(piece[1])
                continue
        unknown_message = _unknown_message(stripped, syntax, scopes.depth > 0)
        if unknown_message is not None:
            message = unknown_message
            column = len(line) - len(line.lstrip()) + 1
            if ";" in stripped or stripped.startswith("."):  # complete on its line
                unknown.append(UnknownStatement(stripped, number, column, message))
            else:  # an instruction continued on the next lines, up to its ';'
                unknown_start = (number, column, stripped, message)
            continue
        grammar_lines.append((number, line))
        _follow(line, number, state)

    if unknown_start is not None:
        unknown.append(UnknownStatement(unknown_start[2], *unknown_start[:2], unknown_start[3]))
    scopes.finish()
    return Scan(
        _structure_text(grammar_lines, scopes.handed_over),
        events,
        event_lines,
        loc_lines,
        loc_values,
        unknown,
        files,
        registers,
        scopes.spans,
    )


def _unknown_message(stripped: str, syntax: Syntax, in_body: bool) -> str | None:
    """Why a statement is unknown (a newer ISA's instruction or directive), else None.

    Instructions are only looked for inside function bodies and directives only on a line of
    their own, so that text which is not PTX at all is left to the grammar to reject.
    """
    start = syntax.statement_start.match(stripped)
    if start is None:
        return None
    label, opcode, directive = start.groups()
    if label is not None:
        return None
    if opcode is not None:
        if not in_body or split_opcode(opcode)[0] in KNOWN_OPCODES:
            return None
        return unknown_opcode_message(opcode)
    if directive is not None and directive not in KNOWN_DIRECTIVES and stripped.endswith(";"):
        return f"unknown directive '{directive}' (not in PTX ISA 9.0; written for a newer ISA?)"
    return None


def _structure_text(
    grammar_lines: list[tuple[int, str]], handed_over: dict[int, list[int]]
) -> str:
    """The grammar's lines at their own line numbers, with the opening braces of scopes the
    fast path read but a grammar line closed, each at its own column."""
    if handed_over:
        braces = [(number, _braces_at(columns)) for number, columns in handed_over.items()]
        grammar_lines = sorted(grammar_lines + braces)
    parts: list[str] = []
    previous = 1
    for number, line in grammar_lines:
        parts.append("\n" * (number - previous))
        parts.append(line)
        previous = number
    return "".join(parts)


def _braces_at(columns: list[int]) -> str:
    line = ""
    for column in sorted(columns):
        line += " " * (column - 1 - len(line)) + "{"
    return line
