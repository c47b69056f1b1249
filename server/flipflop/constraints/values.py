"""Constant expressions of a kernel's code, with its compile-time parameters given values.

The file's folder (`flipflop.source.folding`) knows macros, `constexpr` and enumerators; this
adds the parameters of one instance (template arguments, `-D` defines, tunables) and local
constants computed from them (`const int threads = BM * BN / (TM * TN)`). Every value says which
parameters it was computed from, so a requirement can tell a compile-time tie from a literal one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from flipflop.source.folding import Folder, c_divide, integer_literal
from flipflop.source.syntax import expression_children, text_of

_MAX_DEPTH = 32


@dataclass(frozen=True)
class Value:
    """An integer and the compile-time parameters (template or macro names) it came from."""

    number: int
    parameters: tuple[str, ...] = ()


class Evaluator:
    """Folds expressions of one kernel instance: `env` holds its compile-time parameters."""

    def __init__(self, folder: Folder, env: Mapping[str, int]) -> None:
        self.folder = folder
        self.env = env

    def value(self, node: Node | None, depth: int = 0) -> Value | None:
        if node is None or depth > _MAX_DEPTH:
            return None
        kind = node.type
        if kind == "number_literal":
            number = integer_literal(text_of(node))
            return Value(number) if number is not None else None
        if kind in ("true", "false"):
            return Value(int(kind == "true"))
        if kind in ("identifier", "type_identifier", "qualified_identifier"):
            return self._name(node, depth)
        if kind == "type_descriptor" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth + 1)
        if kind in ("parenthesized_expression", "cast_expression"):
            inner = node.child_by_field_name("value") if kind == "cast_expression" else None
            if inner is None:
                children = expression_children(node)
                inner = children[-1] if children else None
            return self.value(inner, depth + 1)
        if kind == "binary_expression":
            return self._binary(node, depth)
        if kind == "unary_expression":
            operand = self.value(node.child_by_field_name("argument"), depth + 1)
            operator = text_of(node.child_by_field_name("operator") or node)
            if operand is None or operator not in ("-", "+", "~", "!"):
                return None
            number = {"-": -operand.number, "+": operand.number, "~": ~operand.number,
                      "!": int(not operand.number)}[operator]
            return Value(number, operand.parameters)
        if kind == "conditional_expression":
            condition = self.value(node.child_by_field_name("condition"), depth + 1)
            if condition is None:
                return None
            branch = node.child_by_field_name("consequence" if condition.number else "alternative")
            chosen = self.value(branch, depth + 1)
            if chosen is None:
                return None
            return Value(chosen.number, _merge(condition.parameters, chosen.parameters))
        folded = self.folder.scalar(node)
        return Value(folded.value) if folded.value is not None else None

    def _name(self, node: Node, depth: int) -> Value | None:
        name = text_of(node).rsplit("::", 1)[-1]
        if name in self.env:
            return Value(self.env[name], (name,))
        binding = self.folder.resolve(node)
        if binding is None:
            return None
        if binding.kind == "macro":
            # `#define block_size block_size_x`: the names inside take the instance's values.
            inner = self.value(binding.value, depth + 1)
            if inner is not None:
                return Value(inner.number, _merge((name,), inner.parameters))
            folded = self.folder.scalar(node)
            return Value(folded.value, (name,)) if folded.value is not None else None
        if binding.kind in ("parameter", "template") or binding.value is None:
            return None
        if not self.folder.is_stable(binding):
            return None
        value = binding.value
        if value.type in ("argument_list", "initializer_list"):
            items = expression_children(value)
            if len(items) != 1:
                return None
            value = items[0]
        return self.value(value, depth + 1)

    def _binary(self, node: Node, depth: int) -> Value | None:
        left = self.value(node.child_by_field_name("left"), depth + 1)
        right = self.value(node.child_by_field_name("right"), depth + 1)
        operator = text_of(node.child_by_field_name("operator") or node)
        # `blockSize >= 512 && tid < 256` is false whatever `tid` is.
        for known in (left, right):
            if known is not None and operator == "&&" and known.number == 0:
                return Value(0, known.parameters)
            if known is not None and operator == "||" and known.number != 0:
                return Value(1, known.parameters)
        if left is None or right is None:
            return None
        number = _apply(operator, left.number, right.number)
        if number is None:
            return None
        return Value(number, _merge(left.parameters, right.parameters))


def _apply(operator: str, a: int, b: int) -> int | None:
    if operator in ("/", "%") and b == 0:
        return None
    if operator in ("<<", ">>") and not 0 <= b < 64:
        return None
    if operator in ("&&", "||"):
        return int(bool(a) and bool(b)) if operator == "&&" else int(bool(a) or bool(b))
    comparisons = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}
    if operator in comparisons:
        return int(comparisons[operator])
    arithmetic = {
        "+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
        "<<": a << b if operator == "<<" else 0, ">>": a >> b if operator == ">>" else 0,
        "/": c_divide(a, b) if operator == "/" else 0,
        "%": a - b * c_divide(a, b) if operator == "%" else 0,
    }  # fmt: skip
    return arithmetic.get(operator)


def _merge(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group))
