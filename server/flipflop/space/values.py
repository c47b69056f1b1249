"""Values of the expression language and the limits on what one evaluation may build.

Every operation that could make a value grow without bound checks these limits before it does,
so that hostile restriction strings fail in microseconds instead of exhausting the machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Union

Value = Union[bool, int, float, str, range, "list[Value]", "tuple[Value, ...]"]
Env = Mapping[str, Value]

MAX_TEXT_LENGTH = 20_000
MAX_NESTING = 100  # brackets; CPython's own parser stops at 200
MAX_DEPTH = 200  # syntax tree levels: the evaluator recurses once per level
MAX_LENGTH = 100_000  # elements of a list or tuple, characters of a string, values of a range
MAX_INT_BITS = 4096
MAX_STEPS = 1_000_000  # comprehension iterations and sequence elements built per evaluation
MAX_ROUND_DIGITS = 1000


class Failure(Exception):
    """Raised inside evaluation closures; `Expression.evaluate` adds the text and re-raises."""

    def __init__(self, reason: str, column: int, zero_division: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.column = column
        self.zero_division = zero_division


class Budget:
    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = MAX_STEPS

    def spend(self, steps: int, column: int) -> None:
        self.steps -= steps
        if self.steps < 0:
            raise Failure(f"evaluation takes more than {MAX_STEPS} steps", column)


def type_name(value: object) -> str:
    return type(value).__name__


def is_number(value: Value) -> bool:
    return isinstance(value, (int, float))


def checked_int(value: Value, column: int) -> Value:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise Failure(f"integer result has more than {MAX_INT_BITS} bits", column)
    return value


def checked_length(length: int, column: int) -> None:
    if length > MAX_LENGTH:
        raise Failure(f"sequence is longer than {MAX_LENGTH} elements", column)


def unsupported(operator: str, left: Value, right: Value, column: int) -> Failure:
    return Failure(
        f"unsupported operand types for {operator}: {type_name(left)!r} and {type_name(right)!r}",
        column,
    )


def zero_division(column: int) -> Failure:
    return Failure("division by zero", column, zero_division=True)


def float_failure(error: ArithmeticError, column: int) -> Failure:
    return Failure(f"arithmetic error: {error}", column)


def iterable(value: Value, column: int, limit: int = MAX_LENGTH) -> Sequence[Value]:
    if isinstance(value, range):
        try:
            length = len(value)
        except OverflowError:
            length = limit + 1
        if length > limit:
            raise Failure(f"range has more than {limit} values", column)
        return value
    if isinstance(value, (list, tuple, str)):
        return value
    raise Failure(f"{type_name(value)!r} object is not iterable", column)

