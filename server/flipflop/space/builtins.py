"""The functions an expression may call: a fixed list of Python builtins, each bounded.

`BUILTINS` maps a name to (fewest arguments, most arguments, implementation); an implementation
takes the argument values, the column of the call and the evaluation's step budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flipflop.space.operators import add
from flipflop.space.values import (
    MAX_INT_BITS,
    MAX_LENGTH,
    MAX_ROUND_DIGITS,
    Budget,
    Failure,
    Value,
    checked_int,
    float_failure,
    is_number,
    iterable,
    type_name,
)

FUNCTIONS = ("abs", "bool", "float", "int", "len", "list", "max", "min", "range", "round", "str",
             "sum", "tuple")


def _abs(values: list[Value], column: int, budget: Budget) -> Value:
    (value,) = values
    if not is_number(value):
        raise Failure(f"bad operand type for abs(): {type_name(value)!r}", column)
    return abs(value)  # type: ignore[arg-type]


def _bool(values: list[Value], column: int, budget: Budget) -> Value:
    return bool(values[0]) if values else False


def _int(values: list[Value], column: int, budget: Budget) -> Value:
    if not values:
        return 0
    (value,) = values
    if isinstance(value, str):
        digits = value.strip().replace("_", "")
        if len(digits) > MAX_INT_BITS // 3:
            raise Failure(f"integer has more than {MAX_INT_BITS} bits", column)
        try:
            return checked_int(int(value), column)
        except ValueError:
            raise Failure(f"invalid literal for int(): {value[:40]!r}", column) from None
    if not is_number(value):
        raise Failure(f"int() argument must be a string or a number, not {type_name(value)!r}",
                       column)
    try:
        return int(value)  # type: ignore[arg-type]
    except (OverflowError, ValueError) as error:
        raise Failure(f"cannot convert to int: {error}", column) from None


def _float(values: list[Value], column: int, budget: Budget) -> Value:
    if not values:
        return 0.0
    (value,) = values
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise Failure(f"could not convert string to float: {value[:40]!r}", column) from None
    if not is_number(value):
        raise Failure(f"float() argument must be a string or a number, not "
                       f"{type_name(value)!r}", column)
    try:
        return float(value)  # type: ignore[arg-type]
    except OverflowError as error:
        raise float_failure(error, column) from None


def _len(values: list[Value], column: int, budget: Budget) -> Value:
    (value,) = values
    if not isinstance(value, (str, list, tuple, range)):
        raise Failure(f"object of type {type_name(value)!r} has no len()", column)
    try:
        return len(value)
    except OverflowError:
        raise Failure("range is too long for len()", column) from None


def _sequence(values: list[Value], column: int, budget: Budget) -> list[Value]:
    if not values:
        return []
    items = iterable(values[0], column)
    budget.spend(len(items), column)
    return list(items)


def _list(values: list[Value], column: int, budget: Budget) -> Value:
    return _sequence(values, column, budget)


def _tuple(values: list[Value], column: int, budget: Budget) -> Value:
    return tuple(_sequence(values, column, budget))


def _largest(items: Sequence[Value]) -> Value:
    return max(items)  # type: ignore[type-var]


def _smallest(items: Sequence[Value]) -> Value:
    return min(items)  # type: ignore[type-var]


def _extreme(name: str, pick: Callable[[Sequence[Value]], Value]) -> Callable[
    [list[Value], int, Budget], Value
]:
    def extreme(values: list[Value], column: int, budget: Budget) -> Value:
        items: Sequence[Value] = iterable(values[0], column) if len(values) == 1 else values
        if not items:
            raise Failure(f"{name}() of an empty sequence", column)
        budget.spend(len(items), column)
        try:
            return pick(items)
        except TypeError:
            raise Failure(f"{name}() of values that do not compare", column) from None

    return extreme


def _round(values: list[Value], column: int, budget: Budget) -> Value:
    number = values[0]
    if not is_number(number):
        raise Failure(f"type {type_name(number)} doesn't define __round__", column)
    try:
        if len(values) == 1:
            return round(number)  # type: ignore[arg-type]
        digits = values[1]
        if not isinstance(digits, int):
            raise Failure(f"round() digits must be an integer, not {type_name(digits)!r}",
                           column)
        if abs(digits) > MAX_ROUND_DIGITS:
            raise Failure(f"round() digits beyond ±{MAX_ROUND_DIGITS}", column)
        return round(number, digits)  # type: ignore[arg-type]
    except (OverflowError, ValueError) as error:
        raise Failure(f"cannot round: {error}", column) from None


def _range(values: list[Value], column: int, budget: Budget) -> Value:
    if not all(isinstance(value, int) for value in values):
        kinds = ", ".join(type_name(value) for value in values)
        raise Failure(f"range() takes integers, got {kinds}", column)
    try:
        return range(*values)  # type: ignore[arg-type]
    except ValueError as error:
        raise Failure(f"range(): {error}", column) from None


def _str(values: list[Value], column: int, budget: Budget) -> Value:
    if not values:
        return ""
    (value,) = values
    if isinstance(value, str):
        return value
    parts: list[str] = []
    _write(value, parts, [MAX_LENGTH], column)
    return "".join(parts)


def _write(value: Value, parts: list[str], room: list[int], column: int) -> None:
    """Python's repr of `value` into `parts`, refusing to write more than `room[0]` characters."""
    if isinstance(value, (list, tuple)):
        opening, closing = ("[", "]") if isinstance(value, list) else ("(", ")")
        _put(opening, parts, room, column)
        for position, item in enumerate(value):
            if position:
                _put(", ", parts, room, column)
            _write(item, parts, room, column)
        if isinstance(value, tuple) and len(value) == 1:
            _put(",", parts, room, column)
        _put(closing, parts, room, column)
    else:
        _put(repr(value), parts, room, column)


def _put(text: str, parts: list[str], room: list[int], column: int) -> None:
    room[0] -= len(text)
    if room[0] < 0:
        raise Failure(f"string is longer than {MAX_LENGTH} characters", column)
    parts.append(text)


def _sum(values: list[Value], column: int, budget: Budget) -> Value:
    items = iterable(values[0], column)
    start = values[1] if len(values) > 1 else 0
    if not is_number(start):
        raise Failure(f"sum() can't sum {type_name(start)} (use numbers)", column)
    budget.spend(len(items), column)
    total: Value = start
    for item in items:
        if not is_number(item):
            raise Failure(f"sum() of a {type_name(item)!r} element", column)
        total = add(total, item, column)
    return total


BUILTINS: dict[str, tuple[int, int, Callable[[list[Value], int, Budget], Value]]] = {
    "abs": (1, 1, _abs),
    "bool": (0, 1, _bool),
    "float": (0, 1, _float),
    "int": (0, 1, _int),
    "len": (1, 1, _len),
    "list": (0, 1, _list),
    "max": (1, 1_000_000, _extreme("max", _largest)),
    "min": (1, 1_000_000, _extreme("min", _smallest)),
    "range": (1, 3, _range),
    "round": (1, 2, _round),
    "str": (0, 1, _str),
    "sum": (1, 2, _sum),
    "tuple": (0, 1, _tuple),
}
assert tuple(sorted(BUILTINS)) == FUNCTIONS
