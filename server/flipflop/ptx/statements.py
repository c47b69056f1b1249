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
    """A `.reg` declaration; inline asm names its registers without '%' (bare names)."""

    declarations: tuple[RegisterDeclaration, ...]
    ptx_line: int
    bare_names: tuple[str, ...]  # `.reg .pred p;` declares p
    bare_ranges: tuple[tuple[str, int], ...]  # `.reg .b32 t<4>;` declares t0 .. t3


def register_mark(
    type_name: str, declarators: list[tuple[str, int | None]], line: int
) -> RegisterMark:
    """The mark of `.reg .TYPE name, name<count>, ...;` (count None: a single register)."""
    declarations = tuple(
        RegisterDeclaration(type_name, name, 1 if count is None else count)
        for name, count in declarators
    )
    bare = [(name, count) for name, count in declarators if not name.startswith("%")]
    return RegisterMark(
        declarations,
        line,
        tuple(name for name, count in bare if count is None),
        tuple((name, count) for name, count in bare if count is not None),
    )


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
