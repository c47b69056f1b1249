"""Lark transformer: turns each grammar rule into statements and IR objects as it is reduced.

It is handed to the LALR parser, so no parse tree is ever built. Rule names match `ptx.lark`.
"""

from __future__ import annotations

import re
import sys
from typing import Any, NamedTuple

from lark import Token, Transformer

from flipflop.ir import (
    Guard,
    Immediate,
    Instruction,
    Linkage,
    Operand,
    PerformanceDirectives,
    StateSpace,
    UnknownStatement,
    Variable,
    Vector,
    split_opcode,
)
from flipflop.ptx import values
from flipflop.ptx.errors import PtxSyntaxError
from flipflop.ptx.isa import KNOWN_OPCODES
from flipflop.ptx.statements import (
    BodyItem,
    BodyParts,
    FunctionParts,
    LabelMark,
    LocMark,
    ModuleParts,
    PragmaMark,
    RegisterMark,
    ScopeParts,
    register_mark,
)

_ESCAPE = re.compile(r"\\(.)")


def string_value(token: str) -> str:
    """Text of a STRING token without its quotes, backslash escapes resolved."""
    return _ESCAPE.sub(r"\1", token[1:-1])


def guard_of(text: str) -> Guard:
    """`@%p1` -> Guard("%p1", False); `@!p` -> Guard("p", True)."""
    negated = text[1] == "!"
    return Guard(text[2:] if negated else text[1:], negated)


def unknown_opcode_message(opcode: str) -> str:
    return f"unknown instruction '{opcode}' (not in PTX ISA 9.0; written for a newer ISA?)"


# ----------------------------------------------------------------------- intermediate marks


class _Linkage(NamedTuple):
    name: Linkage


class _Space(NamedTuple):
    name: StateSpace


class _Align(NamedTuple):
    value: int


class _Attribute(NamedTuple):
    names: tuple[str, ...]


class _Pointer(NamedTuple):
    pass


class _Declarator(NamedTuple):
    name: str
    dims: tuple[int | None, ...]
    line: int


class _Initializer(NamedTuple):
    pass


class _Parameters(NamedTuple):
    variables: tuple[Variable, ...]


class _Returns(NamedTuple):
    variables: tuple[Variable, ...]


class _Directive(NamedTuple):
    name: str
    values: tuple[int, ...]


class _File(NamedTuple):
    number: int
    path: str


def _line(token: Token) -> int:
    return token.line if token.line is not None else 0


def _integer(token: Token) -> int:
    """The value of an INT token; a constant over 64 bits is an error at its position."""
    try:
        return values.integer_value(str(token))
    except values.IntegerOutOfRange as error:
        raise _error_at(token, str(error)) from None


def _integer_immediate(token: Token, negative: bool) -> Immediate:
    try:
        return values.integer_immediate(str(token), negative)
    except values.IntegerOutOfRange as error:
        raise _error_at(token, str(error)) from None


def _error_at(token: Token, message: str) -> PtxSyntaxError:
    # the line's text and the file name are filled in by parse_ptx
    return PtxSyntaxError(message, _line(token), token.column or 1, "")


def _ints(children: list[Token]) -> tuple[int, ...]:
    return tuple(_integer(child) for child in children)


class StatementBuilder(Transformer[Token, Any]):
    """One callback per grammar rule; each returns the statement or value the rule denotes."""

    # ------------------------------------------------------------------- module

    def module(self, children: list[Any]) -> ModuleParts:
        version, target = children[0], children[1]
        address_size = 64
        files: dict[int, str] = {}
        globals_: list[Variable] = []
        functions: list[FunctionParts] = []
        for child in children[2:]:
            if isinstance(child, int):
                address_size = child
            elif isinstance(child, _File):
                files[child.number] = child.path
            elif isinstance(child, FunctionParts):
                functions.append(child)
            elif type(child) is tuple:  # a declaration of one or more variables
                globals_.extend(child)
        return ModuleParts(version, target, address_size, files, tuple(globals_), tuple(functions))

    def version_directive(self, children: list[Token]) -> str:
        return str(children[0])

    def target_directive(self, children: list[Token]) -> tuple[str, ...]:
        return tuple(str(child) for child in children)

    def address_size_directive(self, children: list[Token]) -> int:
        return _integer(children[0])

    def file_directive(self, children: list[Token]) -> _File:
        return _File(_integer(children[0]), string_value(children[1]))

    def loc_directive(self, children: list[Token]) -> LocMark:
        file_index, line, column = _ints(children[:3])
        return LocMark(file_index, line, column, _line(children[0]))

    def section_directive(self, children: list[Any]) -> None:
        return None

    def section_data(self, children: list[Any]) -> None:
        return None

    def section_value(self, children: list[Any]) -> None:
        return None

    def pragma_directive(self, children: list[Token]) -> PragmaMark:
        return PragmaMark(", ".join(string_value(child) for child in children), _line(children[0]))

    # ------------------------------------------------------------------- variables

    def visible(self, children: list[Any]) -> _Linkage:
        return _Linkage("visible")

    def extern(self, children: list[Any]) -> _Linkage:
        return _Linkage("extern")

    def weak(self, children: list[Any]) -> _Linkage:
        return _Linkage("weak")

    def common(self, children: list[Any]) -> _Linkage:
        return _Linkage("common")

    def global_space(self, children: list[Any]) -> _Space:
        return _Space("global")

    def const_space(self, children: list[Any]) -> _Space:
        return _Space("const")

    def shared_space(self, children: list[Any]) -> _Space:
        return _Space("shared")

    def local_space(self, children: list[Any]) -> _Space:
        return _Space("local")

    def param_space(self, children: list[Any]) -> _Space:
        return _Space("param")

    def tex_space(self, children: list[Any]) -> _Space:
        return _Space("tex")

    def alignment(self, children: list[Token]) -> _Align:
        return _Align(_integer(children[0]))

    def attribute_directive(self, children: list[str]) -> _Attribute:
        return _Attribute(tuple(children))

    def variable_attribute(self, children: list[Token]) -> str:
        return str(children[0])[1:]

    def pointer_attribute(self, children: list[Any]) -> _Pointer:
        return _Pointer()

    def declarator(self, children: list[Any]) -> _Declarator:
        name: Token = children[0]
        return _Declarator(str(name), tuple(children[1:]), _line(name))

    def array_dimension(self, children: list[Token]) -> int | None:
        return _integer(children[0]) if children else None

    def initializer_clause(self, children: list[Any]) -> _Initializer:
        return _Initializer()

    def initializer_list(self, children: list[Any]) -> None:
        return None

    def address_initializer(self, children: list[Any]) -> None:
        return None

    def generic_initializer(self, children: list[Any]) -> None:
        return None

    def mask_initializer(self, children: list[Any]) -> None:
        return None

    def variable_declaration(self, children: list[Any]) -> tuple[Variable, ...]:
        linkage: Linkage = ""
        space: StateSpace = "global"
        align: int | None = None
        vector: int | None = None
        type_name = ""
        has_initializer = False
        declarators: list[_Declarator] = []
        for child in children:
            if isinstance(child, _Linkage):
                linkage = child.name
            elif isinstance(child, _Space):
                space = child.name
            elif isinstance(child, _Align):
                align = child.value
            elif isinstance(child, _Declarator):
                declarators.append(child)
            elif isinstance(child, _Initializer):
                has_initializer = True
            elif isinstance(child, Token) and child.type == "TYPE":
                type_name = str(child)[1:]
            elif isinstance(child, Token) and child.type == "VECTOR_TYPE":
                vector = int(str(child)[2:])
        return tuple(
            Variable(
                name=declarator.name,
                space=space,
                type=type_name,
                array_dims=declarator.dims,
                align=align,
                vector=vector,
                linkage=linkage,
                has_initializer=has_initializer,
                ptx_line=declarator.line,
            )
            for declarator in declarators
        )

    def register_declaration(self, children: list[Any]) -> RegisterMark:
        type_name = ""
        declarators: list[tuple[str, int | None]] = []
        line = 0
        for child in children:
            if isinstance(child, Token):
                if child.type == "TYPE":
                    type_name = str(child)[1:]
                    line = _line(child)
            else:
                declarators.append(child)
        return register_mark(type_name, declarators, line)

    def register_declarator(self, children: list[Token]) -> tuple[str, int | None]:
        count = _integer(children[1]) if len(children) > 1 else None
        return str(children[0]), count

    # ------------------------------------------------------------------- functions

    def entry_directive(self, children: list[Any]) -> FunctionParts:
        return _function("entry", children)

    def func_directive(self, children: list[Any]) -> FunctionParts:
        return _function("func", children)

    def return_list(self, children: list[Variable]) -> _Returns:
        return _Returns(tuple(children))

    def parameter_list(self, children: list[Variable]) -> _Parameters:
        return _Parameters(tuple(children))

    def parameter(self, children: list[Any]) -> Variable:
        align: int | None = None
        type_name = ""
        name: Token | None = None
        dims: list[int | None] = []
        for child in children:
            if isinstance(child, _Align):
                align = child.value
            elif isinstance(child, Token) and child.type == "TYPE":
                type_name = str(child)[1:]
            elif isinstance(child, Token):
                name = child
            elif child is None or isinstance(child, int):
                dims.append(child)
        assert name is not None  # the grammar requires a parameter name
        return Variable(
            name=str(name),
            space="param",
            type=type_name,
            array_dims=tuple(dims),
            align=align,
            ptx_line=_line(name),
        )

    def register_parameter(self, children: list[Token]) -> Variable:
        type_token, name = children
        return Variable(name=str(name), space="reg", type=str(type_token)[1:], ptx_line=_line(name))

    def parameter_name(self, children: list[Token]) -> Token:
        return children[0]

    def maxntid_directive(self, children: list[Token]) -> _Directive:
        return _Directive("maxntid", _ints(children))

    def reqntid_directive(self, children: list[Token]) -> _Directive:
        return _Directive("reqntid", _ints(children))

    def minnctapersm_directive(self, children: list[Token]) -> _Directive:
        return _Directive("minnctapersm", _ints(children))

    def maxnctapersm_directive(self, children: list[Token]) -> _Directive:
        return _Directive("maxnctapersm", _ints(children))

    def maxnreg_directive(self, children: list[Token]) -> _Directive:
        return _Directive("maxnreg", _ints(children))

    def reqnctapercluster_directive(self, children: list[Token]) -> _Directive:
        return _Directive("reqnctapercluster", _ints(children))

    def explicitcluster_directive(self, children: list[Token]) -> _Directive:
        return _Directive("explicitcluster", ())

    def maxclusterrank_directive(self, children: list[Token]) -> _Directive:
        return _Directive("maxclusterrank", _ints(children))

    def blocksareclusters_directive(self, children: list[Token]) -> _Directive:
        return _Directive("blocksareclusters", ())

    def noreturn_directive(self, children: list[Token]) -> _Directive:
        return _Directive("noreturn", ())

    # ------------------------------------------------------------------- statements

    def function_body(self, children: list[Any]) -> BodyParts:
        return BodyParts(_line(children[0]), _line(children[-1]), _statements(children[1:-1]))

    def scope(self, children: list[Any]) -> ScopeParts:
        return ScopeParts(_line(children[0]), _line(children[-1]), _statements(children[1:-1]))

    def label(self, children: list[Token]) -> LabelMark:
        token = children[0]
        return LabelMark(str(token).rstrip(":").rstrip(), _line(token))

    def callprototype_declaration(self, children: list[Any]) -> None:
        return None

    def prototype_returns(self, children: list[Any]) -> None:
        return None

    def branchtargets_declaration(self, children: list[Any]) -> None:
        return None

    def calltargets_declaration(self, children: list[Any]) -> None:
        return None

    def instruction_statement(self, children: list[Any]) -> Instruction | UnknownStatement:
        first: Token = children[0]
        guard = None
        if first.type == "GUARD":
            guard = guard_of(str(first))
            opcode_token: Token = children[1]
            operands = tuple(children[2:])
        else:
            opcode_token = first
            operands = tuple(children[1:])
        spelling = sys.intern(str(opcode_token))
        base, modifiers = split_opcode(spelling)
        if base not in KNOWN_OPCODES:
            rendered = ", ".join(values.render_operand(op) for op in operands)
            text = f"{first} " if guard else ""
            text += f"{opcode_token} {rendered};" if rendered else f"{opcode_token};"
            column = first.column if first.column is not None else 1
            return UnknownStatement(
                text, _line(first), column, unknown_opcode_message(str(opcode_token))
            )
        return Instruction(base, modifiers, operands, guard, None, _line(first), spelling)

    # ------------------------------------------------------------------- operands

    def register(self, children: list[Token]) -> Operand:
        return values.register(str(children[0]))

    def special_register(self, children: list[Token]) -> Operand:
        return values.special_register(str(children[0]))

    def immediate(self, children: list[Token]) -> Immediate:
        negative = len(children) == 2
        token = children[-1]
        if token.type == "INT":
            return _integer_immediate(token, negative)
        if token.type == "FLOAT_HEX":
            return values.float_hex_immediate(str(token), negative)
        return values.decimal_immediate(str(token), negative)

    def symbol(self, children: list[Token]) -> Operand:
        return values.symbol(str(children[0]))

    def symbol_offset(self, children: list[Token]) -> Operand:
        negative = len(children) == 3
        return values.symbol_offset(str(children[0]), negative, str(children[-1]))

    def sink(self, children: list[Token]) -> Operand:
        return values.SINK

    def predicate_pair(self, children: list[Operand]) -> Operand:
        return values.predicate_pair(children[0], children[1])

    def negated_predicate(self, children: list[Operand]) -> Operand:
        return values.negated(children[0])

    def vector(self, children: list[Operand]) -> Vector:
        return Vector(tuple(children))

    def address(self, children: list[Any]) -> Operand:
        base = children[0]
        offset = 0
        if len(children) > 1:
            offset = children[-1]
            if len(children) == 3:  # "-" immediate_offset
                offset = -offset
        return values.address(base, offset)

    def integer_address(self, children: list[Token]) -> Immediate:
        return _integer_immediate(children[0], False)

    def immediate_offset(self, children: list[Token]) -> int:
        value = _integer(children[-1])
        return -value if len(children) == 2 else value

    def tensor_address(self, children: list[Any]) -> Operand:
        return values.tensor_address(children[0], children[1])

    def call_arguments(self, children: list[Operand]) -> Operand:
        return values.call_arguments(tuple(children))


def _statements(children: list[Any]) -> tuple[BodyItem, ...]:
    items: list[BodyItem] = []
    for child in children:
        if child is None:
            continue
        if type(child) is tuple:  # a declaration of several variables
            items.extend(child)
        else:
            items.append(child)
    return tuple(items)


def _function(kind: str, children: list[Any]) -> FunctionParts:
    linkage: Linkage = ""
    name: Token | None = None
    params: tuple[Variable, ...] = ()
    returns: tuple[Variable, ...] = ()
    directive_values: dict[str, tuple[int, ...]] = {}
    flags: set[str] = set()
    pragmas: list[str] = []
    body: BodyParts | None = None
    for child in children:
        if isinstance(child, _Linkage):
            linkage = child.name
        elif isinstance(child, Token):
            name = child
        elif isinstance(child, _Parameters):
            params = child.variables
        elif isinstance(child, _Returns):
            returns = child.variables
        elif isinstance(child, _Directive):
            if child.values:
                directive_values[child.name] = child.values
            else:
                flags.add(child.name)
        elif isinstance(child, PragmaMark):
            pragmas.append(child.text)
        elif isinstance(child, BodyParts):
            body = child
    assert name is not None  # the grammar requires a function name

    def first(key: str) -> int | None:
        found = directive_values.get(key)
        return found[0] if found else None

    directives = PerformanceDirectives(
        maxntid=directive_values.get("maxntid"),
        reqntid=directive_values.get("reqntid"),
        minnctapersm=first("minnctapersm"),
        maxnctapersm=first("maxnctapersm"),
        maxnreg=first("maxnreg"),
        reqnctapercluster=directive_values.get("reqnctapercluster"),
        explicitcluster="explicitcluster" in flags,
        maxclusterrank=first("maxclusterrank"),
        noreturn="noreturn" in flags,
        pragmas=tuple(pragmas),
    )
    return FunctionParts(
        name=str(name),
        kind="entry" if kind == "entry" else "func",
        linkage=linkage,
        params=params,
        returns=returns,
        directives=directives,
        body=body,
        ptx_line=_line(name),
    )
