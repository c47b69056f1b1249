"""The safe expression language of restrictions and T1 fields: Python's semantics, bounded cost."""

from __future__ import annotations

import pytest

from flipflop.space.errors import ExpressionError, ExpressionZeroDivision
from flipflop.space.expressions import FUNCTIONS, MAX_TEXT_LENGTH, parse_expression

ENV = {"block_size_x": 32, "block_size_y": 8, "tile": 3, "name": "fast", "zero": 0, "f": 2.5,
       "notx": 1, "inx": 2}


def value(text: str, env: dict[str, object] | None = None) -> object:
    return parse_expression(text).evaluate(ENV if env is None else env)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # arithmetic as Python does it: floor division and modulo follow the divisor's sign
        ("-7 // 2", -4),
        ("7 // -2", -4),
        ("-7 % 3", 2),
        ("7 % -3", -2),
        ("7.5 // 2", 3.0),
        ("7 / 2", 3.5),
        ("4 / 2", 2.0),
        ("2 ** -1", 0.5),
        ("-2 ** 2", -4),
        ("2 ** 3 ** 2", 512),
        ("(-8) ** 2", 64),
        ("1 + 2 * 3 - 4", 3),
        ("~5", -6),
        ("1 << 10 >> 2", 256),
        ("5 & 3 | 8 ^ 1", 9),
        ("0x1F + 0b101 + 0o17 + 1_000", 1051),
        ("1.5e3 + .5 + 5.", 1505.5),
        # booleans are integers
        ("True == 1", True),
        ("True + True", 2),
        ("False * 3", 0),
        ("[1, 2][True]", 2),
        # comparisons chain, `and`/`or` return an operand
        ("32 <= block_size_x * block_size_y <= 1024", True),
        ("1 < 3 > 2 == 2", True),
        ("1 < 3 < 2", False),
        ("zero or tile", 3),
        ("tile and zero", 0),
        ("not zero", True),
        ("not block_size_x == 32", False),
        ("tile if block_size_x > 16 else 0", 3),
        ("1 if zero else 2 if tile else 3", 2),
        # containers
        ("block_size_x in (16, 32)", True),
        ("block_size_x not in [16, 32]", False),
        ("'as' in name", True),
        ("3.0 in range(5)", True),
        ("1.5 in range(10 ** 18)", False),
        ("(1, 2) + (3,)", (1, 2, 3)),
        ("()", ()),
        ("[]", []),
        ("(1)", 1),
        ("'ab' * 2 + 'c'", "ababc"),
        ("'a' 'b'", "ab"),
        ("'tab\\tq\\'\\x41\\u00e9'", "tab\tq'Aé"),
        ("\"dq\"", "dq"),
        ("[1] * 3", [1, 1, 1]),
        ("[1, 2, 3][-1]", 3),
        ("[1, 2] < [1, 3]", True),
        ("1, 2", (1, 2)),
        # comprehensions, as T1 "Values" write them
        ("[1] + [2 * i for i in range(1, 11)]", [1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20]),
        ("[32 * i for i in range(1, 4)]", [32, 64, 96]),
        ("[x * y for x in range(4) for y in range(x) if y if x > 2]", [3, 6]),
        ("[i for i in range(tile)]", [0, 1, 2]),
        ("[2 ** i for i in range(6)]", [1, 2, 4, 8, 16, 32]),
        # the allowed functions
        ("max([1, 5, 3])", 5),
        ("min(4, 2, 9)", 2),
        ("abs(-3)", 3),
        ("int('12') + int(2.9) + int(-2.9)", 12),
        ("float('1e3')", 1000.0),
        ("round(2.5)", 2),
        ("round(3.5)", 4),
        ("round(3.14159, 2)", 3.14),
        ("len('abc') + len([1, 2]) + len(range(10))", 15),
        ("list(range(2, 8, 3))", [2, 5]),
        ("tuple('ab')", ("a", "b")),
        ("sum([1, 2, 3], 10)", 16),
        ("bool([]) or bool(0.0)", False),
        ("str(1.5) + str(True)", "1.5True"),
        ("str([1, 'a', (2,), ()]) + str(range(3))", "[1, 'a', (2,), ()]range(0, 3)"),
        ("notx + inx", 3),
    ],
)
def test_python_semantics(text: str, expected: object) -> None:
    result = value(text)
    assert result == expected
    assert type(result) is type(expected)


def test_names_are_the_free_variables() -> None:
    expression = parse_expression("[i * tile for i in range(block_size_x)] + [j for j in k]")
    assert expression.names == {"tile", "block_size_x", "k"}
    assert expression.column_of("tile") == 6
    assert parse_expression("max(a, 2)").names == {"a"}


def test_a_comprehension_variable_does_not_leak() -> None:
    with pytest.raises(ExpressionError, match="unknown name 'i'"):
        value("[i for i in range(3)] + [i]")


def test_unknown_name_is_named_with_its_column() -> None:
    with pytest.raises(ExpressionError) as caught:
        value("block_size_x * blok_size <= 1024")
    assert caught.value.reason == "unknown name 'blok_size'"
    assert caught.value.column == 16


def test_expressions_compare_by_text() -> None:
    assert parse_expression("a + 1") == parse_expression("a + 1")
    assert hash(parse_expression("a + 1")) == hash(parse_expression("a + 1"))
    assert parse_expression("a + 1") != parse_expression("a+1")


@pytest.mark.parametrize(
    ("text", "reason", "column"),
    [
        ("9**9**9", "more than 4096 bits", 1),
        ("2 ** 5000", "more than 4096 bits", 1),
        ("1 << 5000", "more than 4096 bits", 1),
        ("10 ** 2000 * 10 ** 2000", "more than 4096 bits", 1),
        ("int('9' * 5000)", "more than 4096 bits", 1),
        ("'a' * 10**9", "longer than 100000", 1),
        ("[0] * 10**9", "longer than 100000", 1),
        ("10**9 * (0,)", "longer than 100000", 1),
        ("(" * 10_000 + "1" + ")" * 10_000, "nest more than 100 deep", 101),
        ("[" * 200 + "]" * 200, "nest more than 100 deep", 101),
        ("not " * 1000 + "x", "nests more than 200 levels", None),
        ("1+" * 5000 + "1", "nests more than 200 levels", None),
        ("x" * (MAX_TEXT_LENGTH + 1), "longer than 20000 characters", MAX_TEXT_LENGTH + 1),
        ("__import__('os')", "unknown function '__import__'", 1),
        ("open('/etc/passwd')", "unknown function 'open'", 1),
        ("a.__class__", "attribute access is not supported", 2),
        ("().__class__.__bases__", "attribute access is not supported", 3),
        ("lambda: 1", "lambda is not supported", 7),
        ("lambda x: x", "lambda is not supported", 8),
        ("import os", "statements are not supported", 8),
        ("x = 1", "assignment is not supported", 3),
        ("a is None", "'is' is not supported", 3),
        ("{1: 2}", "set and dict displays", 1),
        ("[1, 2][0:1]", "slices", 9),
        ("f'{x}'", "unexpected", 2),
        ("'%s' % 1", "string formatting", 1),
        ("max(range(10**18))", "range has more than", 1),
        ("[x for x in range(10**18)]", "range has more than", 1),
        ("[[0 for i in range(10**5)] for j in range(10**5)]", "more than 1000000 steps", 2),
        ("round(5, -10**9)", "round() digits", 1),
        ("range(0, 10, 0)", "must not be zero", 1),
        ("max(1, 2, key=3)", "assignment is not supported", 14),
        ("len(1)", "has no len()", 1),
        ("len()", "takes 1 arguments, 0 given", 1),
        ("1 < 'a'", "'<' not supported between 'int' and 'str'", 3),
        ("1 in 2", "not a container", 3),
        ("'a' + 1", "unsupported operand types for +", 1),
        ("(-8) ** 0.5", "complex", 1),
        ("2.0 ** 100000", "arithmetic error", 1),
        ("'abc", "unterminated string", 1),
        ("(1, 2", "unexpected end of expression", 6),
        ("1 +", "unexpected end of expression", 4),
        ("", "empty expression", 1),
        ("   ", "empty expression", 1),
        ("[1, 2][5]", "index out of range", 1),
        # keywords are never names, wherever they appear
        ("1 <= not 2", "unexpected 'not'", 6),
        ("block_size_x + if", "unexpected 'if'", 16),
        ("[x for in in (1,)]", "unexpected 'in'", 8),
        ("str(['a' * 90000, 'b' * 20000])", "longer than 100000 characters", 1),
    ],
)
def test_bad_and_hostile_input_is_refused_with_a_column(
    text: str, reason: str, column: int | None
) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse_expression(text).evaluate(ENV)
    assert reason in caught.value.reason
    if column is not None:
        assert caught.value.column == column
    assert len(str(caught.value)) < 400  # the message quotes an excerpt, not the whole input


def test_division_by_zero_is_told_apart() -> None:
    for text in ("1 / zero", "1 // zero", "5 % 0", "0 ** -1", "1 / 0.0"):
        with pytest.raises(ExpressionZeroDivision):
            value(text)


def test_a_non_string_is_refused() -> None:
    with pytest.raises(ExpressionError, match="expected an expression string"):
        parse_expression(42)  # type: ignore[arg-type]


def test_the_function_list_is_what_the_brief_allows_and_no_more() -> None:
    assert set(FUNCTIONS) == {
        "abs", "bool", "float", "int", "len", "list", "max", "min", "range", "round", "str",
        "sum", "tuple",
    }


def test_results_do_not_alias_between_evaluations() -> None:
    expression = parse_expression("[1, 2]")
    first = expression.evaluate({})
    assert isinstance(first, list)
    first.append(3)
    assert expression.evaluate({}) == [1, 2]


def test_an_expression_pickles_as_its_text() -> None:
    import pickle

    expression = parse_expression("32 <= block_size_x * block_size_y <= 1024")
    again = pickle.loads(pickle.dumps(expression))
    assert again == expression and again.name_columns == expression.name_columns
    assert again.evaluate({"block_size_x": 32, "block_size_y": 4}) is True
    assert again.evaluate({"block_size_x": 64, "block_size_y": 32}) is False
