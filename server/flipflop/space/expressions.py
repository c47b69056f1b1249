"""A safe evaluator for the Python expressions of Kernel Tuner restrictions and T1 fields.

Kernel Tuner runs these strings through Python's `eval`; FlipFlop must read the same strings from
files and editors it does not trust, so it parses them with its own grammar (`expressions.lark`,
LALR) and evaluates the tree with Python's semantics for the operations it admits: `//` floors,
`%` takes the sign of the divisor, `True == 1`, `and`/`or` return an operand, comparisons chain.

Nothing here calls `eval`, `exec` or `compile`. Every way to spend unbounded time or memory is
bounded and becomes an `ExpressionError` with a column: the text length, bracket nesting and tree
depth, integer size (`9**9**9`), sequence length (`'a'*10**9`, `[0]*10**9`), range length and the
number of steps one evaluation may take (nested comprehensions).

    expression = parse_expression("32 <= block_size_x * block_size_y <= 1024")
    expression.names                      # frozenset({'block_size_x', 'block_size_y'})
    expression.evaluate({"block_size_x": 32, "block_size_y": 4})   # True
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from flipflop.space import operators
from flipflop.space.builtins import BUILTINS, FUNCTIONS
from flipflop.space.errors import ExpressionError, ExpressionZeroDivision
from flipflop.space.values import (
    MAX_DEPTH,
    MAX_INT_BITS,
    MAX_LENGTH,
    MAX_NESTING,
    MAX_STEPS,
    MAX_TEXT_LENGTH,
    Budget,
    Env,
    Failure,
    Value,
    checked_int,
    checked_length,
    iterable,
)

__all__ = ["FUNCTIONS", "MAX_TEXT_LENGTH", "Env", "Expression", "Value", "parse_expression"]

_STATEMENT_WORDS = frozenset({
    "import", "from", "def", "class", "del", "global", "nonlocal", "return", "yield", "await",
    "async", "while", "with", "try", "raise", "assert", "pass", "exec",
})
_CHARACTER_HINTS = {
    ".": "attribute access is not supported",
    "{": "set and dict displays are not supported",
    "}": "set and dict displays are not supported",
    ":": "slices, lambdas and dict displays are not supported",
    "=": "assignment is not supported (compare with ==)",
    ";": "statements are not supported",
    "@": "decorators and matrix products are not supported",
    "'": "unterminated string literal",
    '"': "unterminated string literal",
}

Fn = Callable[[Env, Budget], Value]


@dataclass(frozen=True)
class Expression:
    """A parsed expression. `names` are its free variables (comprehension variables excluded);
    `name_columns` gives the first column of each, for messages about unknown parameters."""

    text: str
    names: frozenset[str]
    name_columns: tuple[tuple[str, int], ...] = field(compare=False)
    _fn: Fn = field(repr=False, compare=False)

    def evaluate(self, env: Env) -> Value:
        """The value under `env` (a name → value mapping); ExpressionError when it has none."""
        try:
            return self._fn(env, Budget())
        except Failure as failure:
            error = ExpressionZeroDivision if failure.zero_division else ExpressionError
            raise error(failure.reason, self.text, failure.column) from None
        except RecursionError:
            raise ExpressionError("expression nests too deeply", self.text, 1) from None

    def column_of(self, name: str) -> int:
        for known, column in self.name_columns:
            if known == name:
                return column
        return 1

    def __reduce__(self) -> tuple[Callable[[str], Expression], tuple[str]]:
        """Pickled as its text, compiled again where it is read (an analysis worker hands its
        search space to the language server)."""
        return parse_expression, (self.text,)


def parse_expression(text: str) -> Expression:
    """Parse `text` or raise ExpressionError naming the column of the first problem."""
    if not isinstance(text, str):
        raise ExpressionError(f"expected an expression string, got {type(text).__name__}", "", 1)
    _check_nesting(text, MAX_TEXT_LENGTH + 1)
    if len(text) > MAX_TEXT_LENGTH:
        raise ExpressionError(
            f"expression is longer than {MAX_TEXT_LENGTH} characters", text, MAX_TEXT_LENGTH + 1
        )
    if not text.strip():
        raise ExpressionError("empty expression", text, 1)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from None
    _check_depth(text, tree)
    try:
        fn, names = _Compiler().compile(tree)
    except Failure as failure:
        raise ExpressionError(failure.reason, text, failure.column) from None
    return Expression(
        text=text,
        names=frozenset(names),
        name_columns=tuple(names.items()),
        _fn=fn,
    )


# ----------------------------------------------------------------------------- parsing


def grammar_text() -> str:
    return resources.files("flipflop.space").joinpath("expressions.lark").read_text("utf-8")


@lru_cache(maxsize=1)
def _parser() -> Lark:
    # The basic lexer, not the contextual one: in a place where the grammar expects no keyword
    # (`1 <= not 2`) the contextual lexer would read `not` as a name.
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=False,
    )


def _check_nesting(text: str, limit: int) -> None:
    """Reject deep bracket nesting (within the first `limit` characters) before the parser
    builds a tree that deep."""
    depth = 0
    quote = ""
    index = 0
    length = min(len(text), limit)
    while index < length:
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([":
            depth += 1
            if depth > MAX_NESTING:
                raise ExpressionError(
                    f"brackets nest more than {MAX_NESTING} deep", text, index + 1
                )
        elif char in ")]" and depth > 0:
            depth -= 1
        index += 1


def _check_depth(text: str, tree: Tree[Token]) -> None:
    stack: list[tuple[Tree[Token], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExpressionError(
                f"expression nests more than {MAX_DEPTH} levels deep", text, _column(node)
            )
        for child in node.children:
            if isinstance(child, Tree):
                stack.append((child, depth + 1))


def _syntax_error(text: str, error: UnexpectedInput) -> ExpressionError:
    if isinstance(error, UnexpectedEOF):
        return ExpressionError("unexpected end of expression", text, len(text) + 1)
    if isinstance(error, UnexpectedToken) and error.token.type == "$END":
        return ExpressionError("unexpected end of expression", text, len(text) + 1)
    if isinstance(error, UnexpectedCharacters):
        column = error.column
        position = error.pos_in_stream or 0
        char = text[position] if position < len(text) else ""
        hint = _word_hint(text, position) or _CHARACTER_HINTS.get(char)
        return ExpressionError(hint or f"unexpected character {char!r}", text, column)
    if isinstance(error, UnexpectedToken):
        token = error.token
        position = token.start_pos if token.start_pos is not None else 0
        column = token.column if token.column is not None else position + 1
        hint = _word_hint(text, position) or _token_hint(str(token))
        return ExpressionError(hint or f"unexpected {str(token)!r}", text, column)
    return ExpressionError("syntax error", text, 1)


def _word_hint(text: str, position: int) -> str | None:
    """A hint from the identifier just before `position`: `lambda x: x`, `import os`."""
    end = position
    while end > 0 and text[end - 1].isspace():
        end -= 1
    start = end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    word = text[start:end]
    if word == "lambda":
        return "lambda is not supported"
    if word in _STATEMENT_WORDS:
        return f"statements are not supported ({word!r})"
    if word == "is":
        return "'is' is not supported (compare with == or !=)"
    return None


def _token_hint(token: str) -> str | None:
    if token == "is":
        return "'is' is not supported (compare with == or !=)"
    if token == "lambda":
        return "lambda is not supported"
    if token in _STATEMENT_WORDS:
        return f"statements are not supported ({token!r})"
    return None


def _column(node: Tree[Token] | Token) -> int:
    if isinstance(node, Token):
        return node.column if node.column is not None else 1
    meta = node.meta
    return meta.column if not meta.empty else 1


# ----------------------------------------------------------------------------- compiling

Names = dict[str, int]


class _Compiler:
    """Turns the syntax tree into closures, so evaluating a restriction 100,000 times over a
    search space does not walk the tree and dispatch on node names each time."""

    def compile(self, node: Tree[Token] | Token) -> tuple[Fn, Names]:
        if isinstance(node, Token):
            raise Failure(f"unexpected {str(node)!r}", _column(node))
        method = getattr(self, "_" + str(node.data), None)
        if method is None:
            raise Failure(f"unsupported syntax {node.data!s}", _column(node))
        result: tuple[Fn, Names] = method(node)
        return result

    def _children(self, node: Tree[Token]) -> tuple[list[Fn], Names]:
        fns: list[Fn] = []
        names: Names = {}
        for child in node.children:
            fn, child_names = self.compile(child)
            fns.append(fn)
            _merge(names, child_names)
        return fns, names

    # -- atoms

    def _name(self, node: Tree[Token]) -> tuple[Fn, Names]:
        token = node.children[0]
        assert isinstance(token, Token)
        name = str(token)
        column = _column(token)

        def lookup(env: Env, budget: Budget) -> Value:
            try:
                return env[name]
            except KeyError:
                raise Failure(f"unknown name {name!r}", column) from None

        return lookup, {name: column}

    def _int_literal(self, node: Tree[Token]) -> tuple[Fn, Names]:
        token = node.children[0]
        assert isinstance(token, Token)
        text = str(token).replace("_", "")
        digits = len(text) - 2 if text[:2].lower() in ("0x", "0o", "0b") else len(text)
        bits_per_digit = {"0x": 4, "0o": 3, "0b": 1}.get(text[:2].lower(), 3.33)
        if digits * bits_per_digit > MAX_INT_BITS + 4:
            raise Failure(f"integer literal has more than {MAX_INT_BITS} bits", _column(token))
        value = checked_int(int(text, 0), _column(token))
        return _constant(value), {}

    def _float_literal(self, node: Tree[Token]) -> tuple[Fn, Names]:
        token = node.children[0]
        assert isinstance(token, Token)
        return _constant(float(str(token))), {}

    def _string_literal(self, node: Tree[Token]) -> tuple[Fn, Names]:
        parts = []
        for token in node.children:
            assert isinstance(token, Token)
            parts.append(_decode_string(str(token), _column(token)))
        value = "".join(parts)
        checked_length(len(value), _column(node))
        return _constant(value), {}

    def _true(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return _constant(True), {}

    def _false(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return _constant(False), {}

    def _tuple_display(self, node: Tree[Token]) -> tuple[Fn, Names]:
        fns, names = self._children(node)

        def build(env: Env, budget: Budget) -> Value:
            budget.spend(len(fns), 1)
            return tuple(fn(env, budget) for fn in fns)

        return build, names

    def _list_display(self, node: Tree[Token]) -> tuple[Fn, Names]:
        fns, names = self._children(node)

        def build(env: Env, budget: Budget) -> Value:
            budget.spend(len(fns), 1)
            return [fn(env, budget) for fn in fns]

        return build, names

    def _list_comp(self, node: Tree[Token]) -> tuple[Fn, Names]:
        element, *clauses = node.children
        assert isinstance(element, Tree)
        column = _column(node)
        names: Names = {}
        bound: set[str] = set()
        compiled: list[tuple[str | None, Fn]] = []  # (loop variable or None for an `if`, fn)
        for clause in clauses:
            assert isinstance(clause, Tree)
            if clause.data == "comp_for":
                variable, source = clause.children
                assert isinstance(variable, Token)
                fn, clause_names = self.compile(source)
                _merge(names, {k: v for k, v in clause_names.items() if k not in bound})
                bound.add(str(variable))
                compiled.append((str(variable), fn))
            else:
                fn, clause_names = self.compile(clause.children[0])
                _merge(names, {k: v for k, v in clause_names.items() if k not in bound})
                compiled.append((None, fn))
        element_fn, element_names = self.compile(element)
        _merge(names, {k: v for k, v in element_names.items() if k not in bound})

        def build(env: Env, budget: Budget) -> Value:
            out: list[Value] = []

            def run(index: int, scope: Env) -> None:
                if index == len(compiled):
                    out.append(element_fn(scope, budget))
                    if len(out) > MAX_LENGTH:
                        raise Failure(f"list is longer than {MAX_LENGTH} elements", column)
                    return
                variable, fn = compiled[index]
                if variable is None:
                    if fn(scope, budget):
                        run(index + 1, scope)
                    return
                items = iterable(fn(scope, budget), column, MAX_STEPS)
                binding: dict[str, Value] = {}
                inner: Env = ChainMap(binding, scope)  # type: ignore[arg-type]
                for item in items:
                    budget.spend(1, column)
                    binding[variable] = item
                    run(index + 1, inner)

            run(0, env)
            return out

        return build, names

    # -- operators

    def _conditional(self, node: Tree[Token]) -> tuple[Fn, Names]:
        (then_fn, test_fn, else_fn), names = self._children(node)

        def choose(env: Env, budget: Budget) -> Value:
            return then_fn(env, budget) if test_fn(env, budget) else else_fn(env, budget)

        return choose, names

    def _or_(self, node: Tree[Token]) -> tuple[Fn, Names]:
        (left, right), names = self._children(node)

        def either(env: Env, budget: Budget) -> Value:
            value = left(env, budget)
            return value if value else right(env, budget)

        return either, names

    def _and_(self, node: Tree[Token]) -> tuple[Fn, Names]:
        (left, right), names = self._children(node)

        def both(env: Env, budget: Budget) -> Value:
            value = left(env, budget)
            return right(env, budget) if value else value

        return both, names

    def _not_(self, node: Tree[Token]) -> tuple[Fn, Names]:
        (operand,), names = self._children(node)

        def negate(env: Env, budget: Budget) -> Value:
            return not operand(env, budget)

        return negate, names

    def _compare(self, node: Tree[Token]) -> tuple[Fn, Names]:
        names: Names = {}
        first, first_names = self.compile(node.children[0])
        _merge(names, first_names)
        steps: list[tuple[str, Fn, int]] = []
        children = node.children[1:]
        for op_node, operand in zip(children[0::2], children[1::2], strict=True):
            assert isinstance(op_node, Tree)
            operator = " ".join(str(token) for token in op_node.children)
            fn, operand_names = self.compile(operand)
            _merge(names, operand_names)
            steps.append((operator, fn, _column(op_node)))

        def compare(env: Env, budget: Budget) -> Value:
            left = first(env, budget)
            for operator, fn, column in steps:
                right = fn(env, budget)
                if not operators.compare(operator, left, right, column):
                    return False
                left = right
            return True

        return compare, names

    def _binary(self, node: Tree[Token], apply: Callable[[Value, Value, int], Value]) -> tuple[
        Fn, Names
    ]:
        (left, right), names = self._children(node)
        column = _column(node)

        def operate(env: Env, budget: Budget) -> Value:
            return apply(left(env, budget), right(env, budget), column)

        return operate, names

    def _add(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.add)

    def _sub(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.sub)

    def _mul(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.mul)

    def _truediv(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.truediv)

    def _floordiv(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.floordiv)

    def _mod(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.mod)

    def _pow(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.power)

    def _lshift(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.lshift)

    def _rshift(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.rshift)

    def _bitand(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.bitwise("&", lambda a, b: a & b))

    def _bitor(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.bitwise("|", lambda a, b: a | b))

    def _bitxor(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.bitwise("^", lambda a, b: a ^ b))

    def _unary(self, node: Tree[Token], apply: Callable[[Value, int], Value]) -> tuple[
        Fn, Names
    ]:
        (operand,), names = self._children(node)
        column = _column(node)

        def operate(env: Env, budget: Budget) -> Value:
            return apply(operand(env, budget), column)

        return operate, names

    def _neg(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._unary(node, operators.neg)

    def _pos(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._unary(node, operators.pos)

    def _invert(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._unary(node, operators.invert)

    def _subscript(self, node: Tree[Token]) -> tuple[Fn, Names]:
        return self._binary(node, operators.subscript)

    def _call(self, node: Tree[Token]) -> tuple[Fn, Names]:
        name_token, *arguments = node.children
        assert isinstance(name_token, Token)
        name = str(name_token)
        column = _column(name_token)
        builtin = BUILTINS.get(name)
        if builtin is None:
            raise Failure(
                f"unknown function {name!r} (the functions allowed are {', '.join(FUNCTIONS)})",
                column,
            )
        low, high, apply = builtin
        if not low <= len(arguments) <= high:
            expected = str(low) if low == high else f"{low} to {high}"
            raise Failure(
                f"{name}() takes {expected} arguments, {len(arguments)} given", column
            )
        fns: list[Fn] = []
        names: Names = {}
        for argument in arguments:
            fn, argument_names = self.compile(argument)
            fns.append(fn)
            _merge(names, argument_names)

        def call(env: Env, budget: Budget) -> Value:
            values = [fn(env, budget) for fn in fns]
            return apply(values, column, budget)

        return call, names


def _merge(into: Names, more: Mapping[str, int]) -> None:
    for name, column in more.items():
        into.setdefault(name, column)


def _constant(value: Value) -> Fn:
    def constant(env: Env, budget: Budget) -> Value:
        return value

    return constant


_ESCAPES = {
    "\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a",
    "b": "\b", "f": "\f", "v": "\v", "\n": "",
}


def _decode_string(token: str, column: int) -> str:
    """A Python string literal's value, without `ast.literal_eval` (which compiles)."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        escape = body[index + 1]
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            index += 2
            continue
        widths = {"x": 2, "u": 4, "U": 8}
        if escape in widths:
            digits = body[index + 2 : index + 2 + widths[escape]]
            if len(digits) != widths[escape] or any(c not in "0123456789abcdefABCDEF"
                                                    for c in digits):
                raise Failure(f"bad \\{escape} escape in string literal", column + index + 1)
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise Failure("escape beyond the last Unicode code point", column + index + 1)
            out.append(chr(code))
            index += 2 + widths[escape]
            continue
        out.append("\\" + escape)  # Python keeps unknown escapes as written
        index += 2
    return "".join(out)


