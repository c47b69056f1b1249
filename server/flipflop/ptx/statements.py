"""What the grammar hands to the assembler: statements with their PTX line, before block building.

These records live only between parsing and `assemble.build_module`; the IR in `flipflop.ir` is
what everyone else reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Union

from flipflop.ir import (
    FunctionKind,
    Instruction,
    Linkage,
    PerformanceDirectives,
    RegisterDeclaration,
    UnknownStatement,
    Variable,
)


class LabelMark(NamedTuple):
    name: str
    ptx_line: int


class LocMark(NamedTuple):
    """A `.loc` directive: the file index resolves against the module's `.file` table."""

    file_index: int
    line: int
    column: int
    ptx_line: int


class PragmaMark(NamedTuple):
    text: str
    ptx_line: int


class RegisterMark(NamedTuple):
    declarations: tuple[RegisterDeclaration, ...]
    ptx_line: int


@dataclass(frozen=True)
class ScopeParts:
    """A nested `{ }`: its line span and what it declares and contains."""

    open_line: int
    close_line: int
    items: tuple[BodyItem, ...]


BodyItem = Union[
    Instruction,
    UnknownStatement,
    LabelMark,
    LocMark,
    PragmaMark,
    RegisterMark,
    Variable,
    "ScopeParts",
]


@dataclass(frozen=True)
class BodyParts:
    open_line: int
    close_line: int
    items: tuple[BodyItem, ...]


@dataclass(frozen=True)
class FunctionParts:
    name: str
    kind: FunctionKind
    linkage: Linkage
    params: tuple[Variable, ...]
    returns: tuple[Variable, ...]
    directives: PerformanceDirectives
    body: BodyParts | None
    ptx_line: int


@dataclass(frozen=True)
class ModuleParts:
    version: str
    target: tuple[str, ...]
    address_size: int
    files: dict[int, str]
    globals: tuple[Variable, ...]
    functions: tuple[FunctionParts, ...]
