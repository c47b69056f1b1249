"""The PTX grammar loaded once per process as an LALR parser with the statement builder attached."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from lark import Lark

from flipflop.ptx.builder import StatementBuilder


def grammar_text() -> str:
    return resources.files("flipflop.ptx").joinpath("ptx.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def ptx_parser() -> Lark:
    """LALR parser whose reductions call `StatementBuilder` directly: no tree is built.

    Start symbols: `module` (a whole file) and `operand` (one operand, used by the fast path to
    read each distinct operand spelling once).
    """
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="contextual",
        start=["module", "operand"],
        transformer=StatementBuilder(),
        maybe_placeholders=False,
    )


def terminal_regex(name: str) -> str:
    """The regular expression of one grammar terminal, for the fast path to reuse verbatim."""
    return ptx_parser().get_terminal(name).pattern.to_regexp()
