"""Constants and operand objects as the grammar defines them, shared by both parse paths.

The Lark transformer and the fast line scanner build every operand through these functions, so
the two paths cannot disagree about what a spelling means.
"""

from __future__ import annotations

import struct

from flipflop.ir import (
    Address,
    Expression,
    Immediate,
    Negated,
    Operand,
    PredicatePair,
    Register,
    Sink,
    SpecialRegister,
    Symbol,
    Vector,
)

SINK = Sink()


class IntegerOutOfRange(ValueError):
    """An integer constant that does not fit in PTX's 64 bits (§4.5.1)."""

    def __init__(self, text: str) -> None:
        shown = text if len(text) <= 24 else f"{text[:10]}...{text[-10:]} ({len(text)} digits)"
        super().__init__(f"integer constant {shown} does not fit in 64 bits")


_LARGEST_INTEGER = (1 << 64) - 1
_DECIMAL_DIGITS = len(str(_LARGEST_INTEGER))


def integer_value(text: str) -> int:
    """Value of an INT token: hex `0x1F`, binary `0b101`, octal `017`, decimal; `U` suffix.

    Raises IntegerOutOfRange for a constant of more than 64 bits.
    """
    digits = text[:-1] if text.endswith("U") else text
    prefix = digits[:2]
    if prefix in ("0x", "0X"):
        value = int(digits, 16)
    elif prefix in ("0b", "0B"):
        value = int(digits[2:], 2)
    elif len(digits) > 1 and digits[0] == "0":
        value = int(digits, 8)
    elif len(digits) > _DECIMAL_DIGITS:  # before int(): Python refuses very long decimals
        raise IntegerOutOfRange(text)
    else:
        value = int(digits)
    if value > _LARGEST_INTEGER:
        raise IntegerOutOfRange(text)
    return value


def float_hex_value(text: str) -> float:
    """Value of `0fXXXXXXXX` (IEEE single) or `0dXXXXXXXXXXXXXXXX` (IEEE double), bit for bit."""
    layout = ">f" if text[1] in "fF" else ">d"
    value: float = struct.unpack(layout, bytes.fromhex(text[2:]))[0]
    return value


def integer_immediate(text: str, negative: bool) -> Immediate:
    value = integer_value(text)
    return Immediate(-value if negative else value, "-" + text if negative else text)


def float_hex_immediate(text: str, negative: bool) -> Immediate:
    value = float_hex_value(text)
    return Immediate(-value if negative else value, "-" + text if negative else text)


def decimal_immediate(text: str, negative: bool) -> Immediate:
    value = float(text)
    return Immediate(-value if negative else value, "-" + text if negative else text)


def register(name: str) -> Register:
    return Register(name)


def symbol(name: str) -> Symbol:
    return Symbol(name)


def special_register(text: str) -> SpecialRegister:
    return SpecialRegister(text[1:])


def symbol_offset(name: str, negative: bool, offset_text: str) -> Expression:
    return Expression(f"{name}{'-' if negative else '+'}{offset_text}")


def address(base: Register | Symbol | Immediate, offset: int) -> Address:
    return Address(base, offset)


def tensor_address(base: Operand, coordinates: Vector) -> Expression:
    return Expression(f"[{render_operand(base)}, {render_operand(coordinates)}]")


def call_arguments(arguments: tuple[Operand, ...]) -> Expression:
    return Expression("(" + ", ".join(render_operand(a) for a in arguments) + ")")


def predicate_pair(first: Operand, second: Operand) -> PredicatePair:
    return PredicatePair(first, second)


def negated(operand: Operand) -> Negated:
    return Negated(operand)


def render_operand(operand: Operand) -> str:
    """PTX spelling of an operand (normalised spacing)."""
    if isinstance(operand, (Register, Symbol)):
        return operand.name
    if isinstance(operand, SpecialRegister):
        return "%" + operand.name
    if isinstance(operand, Immediate):
        return operand.text
    if isinstance(operand, Expression):
        return operand.text
    if isinstance(operand, Address):
        base = render_operand(operand.base)
        return f"[{base}+{operand.offset}]" if operand.offset else f"[{base}]"
    if isinstance(operand, Vector):
        return "{" + ", ".join(render_operand(e) for e in operand.elements) + "}"
    if isinstance(operand, PredicatePair):
        return f"{render_operand(operand.first)}|{render_operand(operand.second)}"
    if isinstance(operand, Negated):
        return "!" + render_operand(operand.operand)
    return "_"
