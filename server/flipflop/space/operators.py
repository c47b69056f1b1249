"""The operators of the expression language, with Python's semantics and bounded results.

Each takes the operand values and the column of the operation (for the message when it fails) and
returns the value Python would, or raises `Failure`: on a type Python would reject, on division by
zero, and before building an integer or a sequence beyond the limits in `values`.
"""

from __future__ import annotations

from collections.abc import Callable

from flipflop.space.values import (
    MAX_INT_BITS,
    Failure,
    Value,
    checked_int,
    checked_length,
    float_failure,
    is_number,
    type_name,
    unsupported,
    zero_division,
)


def add(left: Value, right: Value, column: int) -> Value:
    if is_number(left) and is_number(right):
        try:
            return checked_int(left + right, column)  # type: ignore[operator]
        except OverflowError as error:
            raise float_failure(error, column) from None
    for kind in (str, list, tuple):
        if isinstance(left, kind) and isinstance(right, kind):
            checked_length(len(left) + len(right), column)
            return left + right  # type: ignore[operator]
    raise unsupported("+", left, right, column)


def sub(left: Value, right: Value, column: int) -> Value:
    if is_number(left) and is_number(right):
        try:
            return checked_int(left - right, column)  # type: ignore[operator]
        except OverflowError as error:
            raise float_failure(error, column) from None
    raise unsupported("-", left, right, column)


def _repeat(sequence: str | list[Value] | tuple[Value, ...], count: int, column: int) -> Value:
    checked_length(len(sequence) * max(count, 0), column)
    return sequence * count


def mul(left: Value, right: Value, column: int) -> Value:
    if isinstance(left, int) and isinstance(right, int):
        if left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
            raise Failure(f"integer result has more than {MAX_INT_BITS} bits", column)
        return checked_int(left * right, column)
    if is_number(left) and is_number(right):
        try:
            return left * right  # type: ignore[operator]
        except OverflowError as error:
            raise float_failure(error, column) from None
    if isinstance(left, (str, list, tuple)) and isinstance(right, int):
        return _repeat(left, right, column)
    if isinstance(left, int) and isinstance(right, (str, list, tuple)):
        return _repeat(right, left, column)
    raise unsupported("*", left, right, column)


def _numbers(operator: str, left: Value, right: Value, column: int) -> tuple[float, float]:
    if not (is_number(left) and is_number(right)):
        if operator == "%" and isinstance(left, str):
            raise Failure("string formatting with % is not supported", column)
        raise unsupported(operator, left, right, column)
    if right == 0:
        raise zero_division(column)
    return left, right  # type: ignore[return-value]


def truediv(left: Value, right: Value, column: int) -> Value:
    a, b = _numbers("/", left, right, column)
    try:
        return a / b
    except OverflowError as error:
        raise float_failure(error, column) from None


def floordiv(left: Value, right: Value, column: int) -> Value:
    a, b = _numbers("//", left, right, column)
    try:
        return a // b
    except OverflowError as error:
        raise float_failure(error, column) from None


def mod(left: Value, right: Value, column: int) -> Value:
    a, b = _numbers("%", left, right, column)
    try:
        return a % b
    except OverflowError as error:
        raise float_failure(error, column) from None


def power(left: Value, right: Value, column: int) -> Value:
    if not (is_number(left) and is_number(right)):
        raise unsupported("**", left, right, column)
    if isinstance(left, int) and isinstance(right, int) and right >= 0:
        magnitude = abs(left)
        # |left| ** right has at least (bit_length - 1) * right bits: refuse before computing.
        if magnitude > 1 and (magnitude.bit_length() - 1) * right > MAX_INT_BITS:
            raise Failure(f"integer result has more than {MAX_INT_BITS} bits", column)
        return checked_int(left**right, column)
    if left == 0 and right < 0:  # type: ignore[operator]
        raise Failure("0 cannot be raised to a negative power", column, zero_division=True)
    try:
        result = left**right  # type: ignore[operator]
    except OverflowError as error:
        raise float_failure(error, column) from None
    if isinstance(result, complex):
        raise Failure("the result would be a complex number", column)
    return result


def _shift_count(operator: str, left: Value, right: Value, column: int) -> tuple[int, int]:
    if not (isinstance(left, int) and isinstance(right, int)):
        raise unsupported(operator, left, right, column)
    if right < 0:
        raise Failure("negative shift count", column)
    return left, right


def lshift(left: Value, right: Value, column: int) -> Value:
    a, b = _shift_count("<<", left, right, column)
    if a != 0 and a.bit_length() + b > MAX_INT_BITS:
        raise Failure(f"integer result has more than {MAX_INT_BITS} bits", column)
    return a << b


def rshift(left: Value, right: Value, column: int) -> Value:
    a, b = _shift_count(">>", left, right, column)
    if b > MAX_INT_BITS:
        return -1 if a < 0 else 0
    return a >> b


def bitwise(operator: str, apply: Callable[[int, int], int]) -> Callable[[Value, Value, int],
                                                                            Value]:
    def operate(left: Value, right: Value, column: int) -> Value:
        if not (isinstance(left, int) and isinstance(right, int)):
            raise unsupported(operator, left, right, column)
        return apply(left, right)

    return operate


def neg(operand: Value, column: int) -> Value:
    if not is_number(operand):
        raise Failure(f"bad operand type for unary -: {type_name(operand)!r}", column)
    return -operand  # type: ignore[operator]


def pos(operand: Value, column: int) -> Value:
    if not is_number(operand):
        raise Failure(f"bad operand type for unary +: {type_name(operand)!r}", column)
    return +operand  # type: ignore[operator]


def invert(operand: Value, column: int) -> Value:
    if not isinstance(operand, int):
        raise Failure(f"bad operand type for unary ~: {type_name(operand)!r}", column)
    return -operand - 1  # ~x, without the deprecation warning Python 3.12 gives for ~bool


def contains(container: Value, item: Value, column: int) -> bool:
    if isinstance(container, range):
        # `1.5 in range(10**18)` makes Python scan the whole range: test the integer instead.
        if isinstance(item, int):
            return item in container
        if isinstance(item, float) and item.is_integer():
            return int(item) in container
        return False
    if isinstance(container, str):
        if not isinstance(item, str):
            raise Failure(
                f"'in <string>' requires a string as left operand, not {type_name(item)}", column
            )
        return item in container
    if isinstance(container, (list, tuple)):
        return item in container
    raise Failure(f"argument of type {type_name(container)!r} is not a container", column)


def compare(operator: str, left: Value, right: Value, column: int) -> bool:
    if operator == "==":
        return left == right
    if operator == "!=":
        return left != right
    if operator == "in":
        return contains(right, left, column)
    if operator == "not in":
        return not contains(right, left, column)
    try:
        if operator == "<":
            return left < right  # type: ignore[operator]
        if operator == ">":
            return left > right  # type: ignore[operator]
        if operator == "<=":
            return left <= right  # type: ignore[operator]
        return left >= right  # type: ignore[operator]
    except TypeError:
        raise Failure(
            f"{operator!r} not supported between {type_name(left)!r} and {type_name(right)!r}",
            column,
        ) from None


def subscript(container: Value, index: Value, column: int) -> Value:
    if not isinstance(container, (list, tuple, str, range)):
        raise Failure(f"{type_name(container)!r} object is not subscriptable", column)
    if not isinstance(index, int):
        raise Failure(f"indices must be integers, not {type_name(index)!r}", column)
    try:
        return container[index]
    except (IndexError, OverflowError):
        raise Failure(f"{type_name(container)} index out of range", column) from None

