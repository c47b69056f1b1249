"""`parse_ptx`: PTX text to the IR of `flipflop.ir`."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from flipflop.ir import Module
from flipflop.ptx.assemble import build_module
from flipflop.ptx.errors import PtxSyntaxError
from flipflop.ptx.grammar import ptx_parser
from flipflop.ptx.scanner import scan
from flipflop.ptx.statements import ModuleParts

# How an expected terminal is named in an error message.
_TERMINAL_NAMES = {
    "OPCODE": "an instruction",
    "LABEL": "a label",
    "GUARD": "a guard predicate",
    "IDENT": "an identifier",
    "INT": "an integer",
    "FLOAT_HEX": "a float constant",
    "FLOAT_DECIMAL": "a float constant",
    "REGISTER": "a register",
    "SPECIAL_REGISTER": "a special register",
    "TYPE": "a type such as .b32",
    "VECTOR_TYPE": "a vector type such as .v4",
    "STRING": "a string",
    "VERSION_NUMBER": "a version number",
    "TARGET_NAME": "a target such as sm_90",
    "SECTION_NAME": "a section name",
    "ATTRIBUTE_NAME": "an attribute such as .managed",
    "$END": "end of file",
}
_MOST_EXPECTED_NAMED = 8


def parse_ptx(text: str, filename: str = "<ptx>", *, fast: bool = True) -> Module:
    """Parse PTX as nvcc writes it (and inline asm as people write it) into a `Module`.

    Raises `PtxSyntaxError` for malformed input. Instructions and directives of a newer PTX ISA
    do not stop the parse: they are listed in `Module.unknown_statements`. `fast=False` sends
    every statement through the grammar; the result is the same, only slower.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if not text.strip():
        raise PtxSyntaxError(
            "empty PTX: expected a '.version' directive", 1, 1, "", filename=filename
        )
    with _collector_paused():
        scanned = scan(text, fast=fast)
        parts = _parse_structure(scanned.structure_text, text, filename)
        if fast and parts.files != scanned.files:
            # the read-ahead `.file` table differed from the grammar's: stamp positions again
            scanned = scan(text, fast=fast, files=parts.files)
        try:
            return build_module(parts, scanned, text)
        except PtxSyntaxError as error:
            error.filename = filename
            raise


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while the IR is built.

    A large module is millions of small tuples, none of them in a reference cycle; every few
    thousand allocations the collector would walk all of them again (25% of the parse time on
    a 6 MB file). It is switched back on, in the state it was in, as soon as parsing ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse_structure(structure_text: str, text: str, filename: str) -> ModuleParts:
    try:
        parts = cast(ModuleParts, ptx_parser().parse(structure_text, start="module"))
    except UnexpectedInput as error:
        raise _syntax_error(error, text, filename) from None
    except PtxSyntaxError as error:  # found by the statement builder, e.g. a huge constant
        lines = text.split("\n")
        error.source_line = lines[error.line - 1] if 0 < error.line <= len(lines) else ""
        error.filename = filename
        raise
    return parts


def _syntax_error(error: UnexpectedInput, text: str, filename: str) -> PtxSyntaxError:
    lines = text.split("\n")
    line = error.line if isinstance(error.line, int) and error.line > 0 else len(lines)
    column = error.column if isinstance(error.column, int) and error.column > 0 else 1
    if isinstance(error, UnexpectedToken):
        token = error.token
        if token.type == "$END":
            found = "end of file"
            line, column = _end_of_text(lines)
        else:
            found = repr(str(token))
        message = f"unexpected {found}; expected {_expected(error.expected)}"
    elif isinstance(error, UnexpectedCharacters):
        message = f"unexpected character {error.char!r}"
        if error.allowed:
            message += f"; expected {_expected(error.allowed)}"
    elif isinstance(error, UnexpectedEOF):
        line, column = _end_of_text(lines)
        message = f"unexpected end of file; expected {_expected(set(error.expected))}"
    else:
        message = str(error)
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    return PtxSyntaxError(message, line, column, source_line, filename=filename)


def _end_of_text(lines: list[str]) -> tuple[int, int]:
    """Line and column just after the last character that is not whitespace."""
    line = len(lines)
    while line > 1 and not lines[line - 1].strip():
        line -= 1
    return line, len(lines[line - 1].rstrip()) + 1


def _expected(terminal_names: set[str] | frozenset[str]) -> str:
    parser = ptx_parser()
    described: set[str] = set()
    for name in terminal_names:
        if name in _TERMINAL_NAMES:
            described.add(_TERMINAL_NAMES[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            described.add(name)
            continue
        described.add(repr(pattern.value) if pattern.type == "str" else name.lower())
    ordered = sorted(described)
    if len(ordered) > _MOST_EXPECTED_NAMED:
        ordered = [*ordered[:_MOST_EXPECTED_NAMED], "..."]
    return ", ".join(ordered) if ordered else "nothing more"
