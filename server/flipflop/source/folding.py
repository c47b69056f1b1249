"""Constant folding of launch arguments, over the tree-sitter tree of one file.

Folds integer literals, `dim3(a, b, c)` / `dim3{...}`, `const`/`constexpr` variables (local,
namespace, `static constexpr` class members), enumerators, object-like `#define`s, arithmetic
(+ - * / % << >> & | ^, unary, parentheses, casts, `?:`), `min`/`max`, `sizeof` of the common
scalar types, function-like macros by their definition (`CEIL_DIV(M, 32)`) and the ceil-division
helpers (`ceil_div`, `cdiv`, `div_up`, `DIV_UP`, `iDivUp`, ...). A local variable that is not
`const` folds to the assignment that reaches the use (`flipflop.source.flow`), a host function's
parameter to the constant every call in the file passes, and a folder made `under` the facts of
a place (the `case 256:` of `switch (threads)` around a launch) uses them. Anything else stays
symbolic, and the names that blocked are reported.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node, Tree

from flipflop.source.flow import call_arguments, callee_name, case_conditions, reaching_write
from flipflop.source.model import Folded, FoldedDim3
from flipflop.source.syntax import (
    ancestors,
    captures,
    declarator_name,
    enclosing_function,
    expression_children,
    function_name,
    parse_tree,
    strip_parentheses,
    text_of,
)

BindingKind = Literal["variable", "constant", "parameter", "template", "macro", "enumerator"]

# Helper names people give to ceil(a / b); compared lower-case with underscores removed.
_CEIL_DIV_NAMES = frozenset(
    {"ceildiv", "cdiv", "divup", "idivup", "divroundup", "ceildivide", "ceilingdiv", "roundupdiv",
     "updiv", "ceil_div", "cuceil"}
)
_PASS_THROUGH_CALLS = frozenset(
    {"static_cast", "int", "unsigned", "size_t", "int64_t", "uint32_t", "int32_t", "uint64_t",
     "long", "dim3_t", "std::size_t"}
)
# Sizes in bytes on every CUDA target (CUDA C++ Programming Guide, "Built-in Vector Types";
# the host ABI is LP64 on Linux, where nvcc runs).
_SIZEOF = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "short": 2, "unsigned short": 2, "half": 2, "__half": 2, "__nv_bfloat16": 2,
    "nv_bfloat16": 2, "int16_t": 2, "uint16_t": 2, "half2": 4, "__half2": 4,
    "__nv_bfloat162": 4, "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4,
    "int32_t": 4, "uint32_t": 4, "long": 8, "unsigned long": 8, "long long": 8,
    "unsigned long long": 8, "double": 8, "size_t": 8, "int64_t": 8, "uint64_t": 8,
    "float2": 8, "int2": 8, "float4": 16, "int4": 16, "double2": 16, "uint4": 16,
    "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
}
_INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)[uUlLzZ]*")
_MAX_DEPTH = 48
ARGUMENT_LISTS = ("argument_list", "initializer_list", "parameter_list")


def is_ceil_div_name(name: str) -> bool:
    last = name.rsplit("::", 1)[-1]
    return last.lower().replace("_", "") in _CEIL_DIV_NAMES


def integer_literal(text: str) -> int | None:
    match = _INTEGER.fullmatch(text.replace("'", ""))
    if match is None:
        return None
    digits = match.group(1)
    if digits[:2] in ("0x", "0X"):
        return int(digits, 16)
    if digits[:2] in ("0b", "0B"):
        return int(digits, 2)
    if len(digits) > 1 and digits.startswith("0"):
        return int(digits, 8)
    return int(digits)


def c_divide(a: int, b: int) -> int:
    """C integer division: truncates toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


@dataclass(frozen=True)
class Expression:
    """A node parsed from free-standing text, with the tree that owns it (nodes do not keep
    their tree alive)."""

    tree: Tree
    node: Node


def parse_expression(text: str) -> Expression | None:
    """Parse free-standing expression text (a macro body, an annotation) into a node."""
    tree = parse_tree(f"int __flipflop_value = {text};".encode())
    declaration = tree.root_node.named_children[0] if tree.root_node.named_children else None
    if declaration is None or tree.root_node.has_error:
        return None
    init = declaration.child_by_field_name("declarator")
    value = init.child_by_field_name("value") if init is not None else None
    return Expression(tree, value) if value is not None else None


@dataclass(frozen=True)
class Binding:
    """Where a name gets its value: the declared identifier and its initializer."""

    name: str
    name_node: Node | None
    declaration: Node | None
    value: Node | None
    type_text: str
    kind: BindingKind
    function: Node | None

    @property
    def is_dim3(self) -> bool:
        return "dim3" in self.type_text


def _type_text(declaration: Node) -> str:
    parts = [text_of(c) for c in declaration.children
             if c.type in ("type_qualifier", "storage_class_specifier")]
    type_node = declaration.child_by_field_name("type")
    if type_node is not None:
        parts.append(text_of(type_node))
    return " ".join(parts)


def _is_constant(declaration: Node) -> bool:
    return any(c.type == "type_qualifier" and text_of(c) in ("const", "constexpr", "constinit")
               for c in declaration.children)


def declared_bindings(declaration: Node, function: Node | None) -> list[Binding]:
    """The variables one `declaration` (or class `field_declaration`) introduces."""
    type_text = _type_text(declaration)
    constant = _is_constant(declaration)
    result = []
    for declarator in declaration.children_by_field_name("declarator"):
        name = declarator_name(declarator)
        if name is None:
            continue
        value = declarator.child_by_field_name("value")
        if declarator.type == "function_declarator":
            # `dim3 block(TILE, TILE);` parses as a function declaration (C++'s most vexing
            # parse); inside a function body with unnamed "parameters" it is a constructor call.
            value = declarator.child_by_field_name("parameters")
            if function is None or value is None or not _is_argument_like(value):
                continue
        if declarator.type == "field_identifier":
            value = declaration.child_by_field_name("default_value")
        result.append(Binding(text_of(name), name, declaration, value, type_text,
                              "constant" if constant else "variable", function))
    return result


SYMBOLS_QUERY = """
(preproc_def name: (identifier) value: (preproc_arg)) @macro
(preproc_function_def name: (identifier) @function_macro) @function_macro_definition
(translation_unit (declaration) @declaration)
(declaration_list (declaration) @declaration)
(field_declaration default_value: (_)) @field
(enumerator name: (identifier) @enumerator)
"""
WRITES_QUERY = """
(assignment_expression left: (identifier) @written)
(assignment_expression left: (field_expression argument: (identifier) @written))
(update_expression argument: (identifier) @written)
(pointer_expression operator: "&" argument: (identifier) @written)
"""


def _is_argument_like(parameters: Node) -> bool:
    items = parameters.named_children
    return bool(items) and all(
        item.type == "parameter_declaration" and item.child_by_field_name("declarator") is None
        for item in items
    )


@dataclass(frozen=True)
class FileSymbols:
    """Names visible at file scope: constants, enumerators and object-like macros."""

    bindings: dict[str, list[Binding]]
    macros: dict[str, str]
    function_macros: frozenset[str]
    # Function-like macros: NAME → (parameter names, body).
    macro_functions: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)

    @classmethod
    def collect(cls, root: Node) -> FileSymbols:
        return cls.from_captures(captures(root, SYMBOLS_QUERY))

    @classmethod
    def from_captures(cls, found: dict[str, list[Node]]) -> FileSymbols:
        """Build from the captures of `SYMBOLS_QUERY` (possibly run together with others)."""
        macros: dict[str, str] = {}
        for definition in found.get("macro", []):
            name_node = definition.child_by_field_name("name")
            value_node = definition.child_by_field_name("value")
            if name_node is not None and value_node is not None:
                macros[text_of(name_node)] = text_of(value_node).strip()
        bindings: dict[str, list[Binding]] = {}
        for declaration in found.get("declaration", []) + found.get("field", []):
            for binding in declared_bindings(declaration, None):
                bindings.setdefault(binding.name, []).append(binding)
        for enumerator in found.get("enumerator", []):
            bindings.setdefault(text_of(enumerator), []).append(_enumerator_binding(enumerator))
        functions: dict[str, tuple[tuple[str, ...], str]] = {}
        for definition in found.get("function_macro_definition", []):
            name_node = definition.child_by_field_name("name")
            parameters = definition.child_by_field_name("parameters")
            value_node = definition.child_by_field_name("value")
            if name_node is None or parameters is None or value_node is None:
                continue
            names = tuple(text_of(p) for p in parameters.named_children if p.type == "identifier")
            functions[text_of(name_node)] = (names, text_of(value_node).strip())
        return cls(bindings, macros,
                   frozenset(text_of(n) for n in found.get("function_macro", [])), functions)


def _enumerator_binding(name: Node) -> Binding:
    enumerator = name.parent
    value = enumerator.child_by_field_name("value") if enumerator is not None else None
    if value is None and enumerator is not None:
        # An enumerator without a value is its predecessor plus one.
        previous = enumerator.prev_named_sibling
        value = enumerator if previous is None else None
        if previous is not None:
            return Binding(text_of(name), name, enumerator, None, f"enum+1:{previous.id}",
                           "enumerator", None)
    return Binding(text_of(name), name, enumerator, value, "enum", "enumerator", None)


class Folder:
    """Folds expressions of one parsed file; remembers per-function facts while it works."""

    def __init__(self, symbols: FileSymbols, written: list[Node] | None = None) -> None:
        """`written`: the `@written` captures of `WRITES_QUERY` when the caller already ran it."""
        self.symbols = symbols
        # Caches keyed by the id of inner nodes (an address). Every tree whose nodes get folded
        # stays alive as long as the folder (the file's tree with its caller, parsed snippets in
        # `_snippets`), so an id is never reused for another node while it is a key here.
        self._assigned: dict[int, frozenset[str]] = {}
        self._write_nodes: dict[tuple[int, str], list[Node]] = {}
        self._macro_expressions: dict[str, Expression | None] = {}
        self._snippets: list[Expression] = []
        self._scalars: dict[int, Folded] = {}
        self._scopes: dict[int, list[tuple[int, Binding]]] = {}
        self._file_bindings: dict[str, Binding | None] = {}
        # Calls by the name they call, collected on first need; parameter values from them.
        self._calls: dict[str, list[Node]] | None = None
        self._parameter_values: dict[tuple[int, int], Folded] = {}
        self._resolving: set[tuple[int, int]] = set()
        # Names that stand for something computed at run time (a call), not a variable.
        self.opaque_names: set[str] = set()
        # What holds where this folder folds (`under`): a binding, by where its name is declared
        # in the file (a leaf's id is not unique: equal leaves may share one), → its value.
        self.facts: dict[int, int] = {}
        self._base = self
        if written is not None:
            self._set_writes(written)

    def under(self, facts: Mapping[int, int]) -> Folder:
        """This folder where `facts` hold (the `case` a launch sits in): it shares every cache
        but the folded values, which depend on the facts."""
        if not facts:
            return self._base
        view = copy.copy(self._base)
        view._scalars = {}
        view.facts = dict(facts)
        return view

    def facts_at(self, node: Node) -> dict[int, int]:
        """The values the `case` labels and `if (x == …)` tests around `node` give variables
        that nothing reassigns."""
        facts: dict[int, int] = {}
        for subject, value in case_conditions(node):
            binding = self.resolve(subject)
            if binding is None or binding.name_node is None or not self.is_stable(binding):
                continue
            folded = self._base.scalar(value)
            if folded.value is not None:
                facts.setdefault(binding.name_node.start_byte, folded.value)
        return facts

    def fold_text(self, text: str) -> Folded:
        """Fold a snippet of expression text with this file's names."""
        expression = parse_expression(text)
        if expression is None:
            return Folded(None, (text,))
        self._snippets.append(expression)
        return self.scalar(expression.node)

    # -- name resolution -------------------------------------------------------------------

    def resolve(self, use: Node, name: str | None = None) -> Binding | None:
        """The binding a name refers to at `use` (innermost local first, then file scope)."""
        name = name if name is not None else text_of(use)
        for scope in ancestors(use):
            if scope.type in ("compound_statement", "for_statement", "declaration_list"):
                binding = self._declared_before(scope, use, name)
                if binding is not None:
                    return binding
            elif scope.type in ("function_definition", "lambda_expression"):
                binding = self._parameter(scope, name)
                if binding is not None:
                    return binding
                if scope.type == "function_definition":
                    break
        return self._file_binding(name)

    def _declared_before(self, scope: Node, use: Node, name: str) -> Binding | None:
        declared = self._scopes.get(scope.id)
        if declared is None:
            function = enclosing_function(scope)
            declared = [(child.end_byte, binding) for child in scope.named_children
                        if child.type == "declaration"
                        for binding in declared_bindings(child, function)]
            self._scopes[scope.id] = declared
        for end_byte, binding in reversed(declared):
            if end_byte <= use.start_byte and binding.name == name:
                return binding
        return None

    def _parameter(self, function: Node, name: str) -> Binding | None:
        declarator = function.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        parameters = (declarator.child_by_field_name("parameters") if declarator is not None
                      else function.child_by_field_name("parameters"))
        if parameters is not None:
            for parameter in parameters.named_children:
                found = declarator_name(parameter.child_by_field_name("declarator"))
                if found is not None and text_of(found) == name:
                    return Binding(name, found, parameter, None, "", "parameter", function)
        template = function.parent
        if template is not None and template.type == "template_declaration":
            parameters = template.child_by_field_name("parameters") or function
            for parameter in parameters.named_children:
                found = declarator_name(parameter.child_by_field_name("declarator"))
                if found is None:
                    found = parameter.child_by_field_name("name")
                if found is not None and text_of(found) == name:
                    return Binding(name, found, parameter, None, "", "template", function)
        return None

    def _file_binding(self, name: str) -> Binding | None:
        if name not in self._file_bindings:
            self._file_bindings[name] = self._find_file_binding(name)
        return self._file_bindings[name]

    def _find_file_binding(self, name: str) -> Binding | None:
        short = name.rsplit("::", 1)[-1]
        candidates = self.symbols.bindings.get(short, [])
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            # Same name in several scopes: usable only if they all fold to one value.
            values = {self.fold_binding(c, 0).value for c in candidates}
            return candidates[0] if len(values) == 1 and None not in values else None
        if short in self.symbols.macros:
            return Binding(short, None, None, self._macro_node(short), "macro", "macro", None)
        return None

    def _macro_node(self, name: str) -> Node | None:
        if name not in self._macro_expressions:
            self._macro_expressions[name] = parse_expression(self.symbols.macros[name])
        expression = self._macro_expressions[name]
        return expression.node if expression is not None else None

    def assigned_names(self, function: Node) -> frozenset[str]:
        """Names a function writes after declaring them (assignment, ++/--, address taken)."""
        self._load_writes(function)
        return self._assigned.get(function.id, frozenset())

    def _load_writes(self, node: Node) -> None:
        if not self._assigned:
            root = node
            while root.parent is not None:
                root = root.parent
            self._set_writes(captures(root, WRITES_QUERY).get("written", []))

    def _set_writes(self, written: list[Node]) -> None:
        self._assigned = _writes_by_function(written)
        for name in written:
            function = enclosing_function(name)
            if function is not None:
                self._write_nodes.setdefault((function.id, text_of(name)), []).append(name)

    def writes_of(self, binding: Binding) -> list[Node]:
        """The identifiers that write the binding's name in its function."""
        if binding.function is None:
            return []
        self._load_writes(binding.function)
        return self._write_nodes.get((binding.function.id, binding.name), [])

    def is_stable(self, binding: Binding) -> bool:
        """Whether the binding's initializer is the value at every later use (for a parameter:
        whether the function never reassigns it)."""
        if binding.kind in ("constant", "macro", "enumerator"):
            return True
        if binding.kind not in ("variable", "parameter"):
            return False
        if binding.function is None:
            return False
        return binding.name not in self.assigned_names(binding.function)

    # -- folding ---------------------------------------------------------------------------

    def scalar(self, node: Node, depth: int = 0) -> Folded:
        if node.child_count == 0:
            # Leaves may be stored inline in their parent, where the id is not an address and
            # equal leaves share it: only inner nodes are cached.
            return self._scalar(node, depth)
        cached = self._scalars.get(node.id)
        if cached is None:
            cached = self._scalar(node, depth)
            self._scalars[node.id] = cached
        return cached

    def _scalar(self, node: Node, depth: int) -> Folded:
        if depth > _MAX_DEPTH:
            return Folded(None, ("<recursion>",))
        kind = node.type
        if kind == "number_literal":
            value = integer_literal(text_of(node))
            return Folded(value, () if value is not None else (text_of(node),))
        if kind in ("true", "false"):
            return Folded(1 if kind == "true" else 0)
        if kind in ("parenthesized_expression", "cast_expression"):
            children = expression_children(node)
            inner = (node.child_by_field_name("value") if kind == "cast_expression"
                     else children[-1] if children else None)
            return self.scalar(inner, depth + 1) if inner is not None else Folded(None)
        if kind == "parameter_declaration" and node.child_by_field_name("type") is not None:
            return self.scalar(node.child_by_field_name("type") or node, depth + 1)
        if kind == "type_descriptor" and node.named_child_count == 1:
            # A template argument `kernel<BM, …>` parses as a type; a constant may stand there.
            return self.scalar(node.named_children[0], depth + 1)
        if kind in ("identifier", "qualified_identifier", "type_identifier"):
            binding = self.resolve(node)
            if binding is None:
                return Folded(None, (text_of(node),))
            return self.fold_binding(binding, depth + 1, node)
        if kind == "field_expression":
            return self._field(node, depth)
        if kind == "binary_expression":
            return self._binary(node, depth)
        if kind == "unary_expression":
            operand = self.scalar(node.child_by_field_name("argument") or node, depth + 1)
            operator = text_of(node.child_by_field_name("operator") or node)
            if operand.value is None:
                return operand
            table = {"-": -operand.value, "+": operand.value, "~": ~operand.value,
                     "!": int(not operand.value)}
            return Folded(table.get(operator), operand.unresolved)
        if kind == "conditional_expression":
            condition = self.scalar(node.child_by_field_name("condition") or node, depth + 1)
            if condition.value is None:
                return condition
            branch = node.child_by_field_name("consequence" if condition.value else "alternative")
            return self.scalar(branch, depth + 1) if branch is not None else Folded(None)
        if kind == "sizeof_expression":
            type_node = node.child_by_field_name("type")
            size = _SIZEOF.get(" ".join(text_of(type_node).split())) if type_node else None
            return Folded(size, () if size is not None else (text_of(node),))
        if kind == "call_expression":
            return self._call(node, depth)
        return Folded(None, (text_of(node),), opaque=True)

    def fold_binding(self, binding: Binding, depth: int, use: Node | None = None) -> Folded:
        """The binding's value (at `use`, when a reassigned variable's value depends on where)."""
        if self.facts and binding.name_node is not None:
            fact = self.facts.get(binding.name_node.start_byte)
            if fact is not None:
                return Folded(fact)
        if binding.kind == "parameter":
            return self._parameter_value(binding, depth)
        if binding.kind == "template":
            return Folded(None, (binding.name,))
        if binding.type_text.startswith("enum+1:"):
            previous = binding.declaration.prev_named_sibling if binding.declaration else None
            name = previous.child_by_field_name("name") if previous is not None else None
            if name is None:
                return Folded(None, (binding.name,))
            before = self.fold_binding(_enumerator_binding(name), depth + 1)
            return Folded(before.value + 1 if before.value is not None else None, before.unresolved)
        value = binding.value
        if not self.is_stable(binding):
            value = self._reaching_value(binding, use)
        if value is None:
            return Folded(None, (binding.name,))
        if value.type == "enumerator":
            return Folded(0)
        if value.type in ARGUMENT_LISTS:
            items = expression_children(value)
            if len(items) != 1:
                return Folded(None, (binding.name,))
            value = items[0]
        folded = self.scalar(value, depth + 1)
        if folded.value is None and folded.opaque:
            # Computed at run time (`atoi(argv[1])`): the variable is what a reader can give.
            return Folded(None, (binding.name,))
        return folded

    def _reaching_value(self, binding: Binding, use: Node | None) -> Node | None:
        """The initializer or assignment whose value a reassigned local has at `use`."""
        if use is None or binding.kind != "variable" or binding.declaration is None:
            return None
        reached = reaching_write(binding.declaration, use, self.writes_of(binding))
        if reached is True:
            return binding.value
        return reached if isinstance(reached, Node) else None

    def _parameter_value(self, binding: Binding, depth: int) -> Folded:
        """A host function's parameter that every call in the file passes the same constant."""
        unknown = Folded(None, (binding.name,))
        function = binding.function
        if function is not None and function_name(function) == "main":
            return Folded(None, (binding.name,), opaque=True)  # the command line: run time
        if (function is None or function.type != "function_definition" or _is_kernel(function)
                or binding.name_node is None or depth > _MAX_DEPTH
                or not self.is_stable(binding)):
            return unknown
        key = (function.id, binding.name_node.start_byte)
        cached = self._parameter_values.get(key)
        if cached is not None:
            return cached
        if key in self._resolving:
            return unknown
        self._resolving.add(key)
        try:
            found = self._from_callers(function, binding, depth)
        finally:
            self._resolving.discard(key)
        self._parameter_values[key] = found
        return found

    def _from_callers(self, function: Node, binding: Binding, depth: int) -> Folded:
        unknown = Folded(None, (binding.name,))
        name = (function_name(function) or "").rsplit("::", 1)[-1]
        position, default = _parameter_position(function, binding)
        calls = self._calls_named(function, name) if name and position is not None else []
        values: set[int] = set()
        for call in calls:
            arguments = call_arguments(call)
            argument = arguments[position] if position is not None and position < len(
                arguments) else default
            if argument is None:
                return unknown
            caller = self._base.under(self._base.facts_at(call))
            folded = caller.scalar(argument, depth + 1)
            if folded.value is None:
                return unknown
            values.add(folded.value)
        return Folded(values.pop()) if len(values) == 1 else unknown

    def _calls_named(self, node: Node, name: str) -> list[Node]:
        if self._base._calls is None:
            root = node
            while root.parent is not None:
                root = root.parent
            calls: dict[str, list[Node]] = {}
            for call in captures(root, "(call_expression) @call").get("call", []):
                callee = callee_name(call)
                if callee is not None:
                    calls.setdefault(callee, []).append(call)
            self._base._calls = calls
        return self._base._calls.get(name, [])

    def _field(self, node: Node, depth: int) -> Folded:
        argument = node.child_by_field_name("argument")
        field = node.child_by_field_name("field")
        if argument is None or field is None or text_of(field) not in ("x", "y", "z"):
            return Folded(None, (text_of(node),), opaque=True)
        folded = self.dim3(argument, depth + 1)
        value = {"x": folded.x, "y": folded.y, "z": folded.z}[text_of(field)]
        return Folded(value, folded.unresolved if value is None else ())

    def _binary(self, node: Node, depth: int) -> Folded:
        left_node = node.child_by_field_name("left")
        right_node = node.child_by_field_name("right")
        operator = text_of(node.child_by_field_name("operator") or node)
        if left_node is None or right_node is None:
            return Folded(None, (text_of(node),))
        left = self.scalar(left_node, depth + 1)
        right = self.scalar(right_node, depth + 1)
        unresolved = _merge(left.unresolved, right.unresolved)
        if left.value is None or right.value is None:
            return Folded(None, unresolved, left.opaque or right.opaque)
        a, b = left.value, right.value
        if operator in ("/", "%") and b == 0:
            return Folded(None, (text_of(node),))
        return Folded(_apply(operator, a, b))

    def _call(self, node: Node, depth: int) -> Folded:
        function = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if function is None or arguments is None:
            return Folded(None, (text_of(node),))
        name = text_of(function.child_by_field_name("name") or function
                       if function.type == "template_function" else function)
        values = [self.scalar(a, depth + 1) for a in expression_children(arguments)]
        unresolved = _merge(*(v.unresolved for v in values))
        if any(v.value is None for v in values):
            return Folded(None, unresolved, any(v.opaque for v in values))
        numbers = [v.value for v in values if v.value is not None]
        short = name.rsplit("::", 1)[-1]
        macro = self.symbols.macro_functions.get(short)
        if macro is not None and len(macro[0]) == len(numbers):
            return self.fold_text(_expand_macro(macro, [f"({n})" for n in numbers]))
        if is_ceil_div_name(name) and len(numbers) == 2 and numbers[1] != 0:
            return Folded(-c_divide(-numbers[0], numbers[1]))
        if short in ("min", "max", "__min", "__max") and len(numbers) == 2:
            return Folded(min(numbers) if "min" in short else max(numbers))
        if (name in _PASS_THROUGH_CALLS or short in _PASS_THROUGH_CALLS) and len(numbers) == 1:
            return Folded(numbers[0])
        self.opaque_names.add(name)
        return Folded(None, (name,), opaque=True)

    def expanded_text(self, node: Node, depth: int = 0) -> str:
        """The expression as text, every name that folds replaced by its value and every local
        variable that does not by its initializer: the names left are the ones the source
        leaves open (a parameter without callers, a template parameter, a run-time value)."""
        folded = self.scalar(node)
        if folded.value is not None:
            return str(folded.value)
        if depth > _MAX_DEPTH // 4:
            return text_of(node)
        if node.type == "identifier":
            return self._expanded_name(node, depth)
        if node.type == "field_expression":
            argument = node.child_by_field_name("argument")
            field_node = node.child_by_field_name("field")
            field_text = text_of(field_node) if field_node is not None else ""
            axis = "xyz".find(field_text) if len(field_text) == 1 else -1
            components = self.dim3_components(argument, depth) if argument is not None else None
            if axis >= 0 and components is not None:
                component = components[axis]
                return "1" if component is None else f"({self.expanded_text(component, depth + 1)})"
            return text_of(node)
        if node.type == "call_expression":
            expanded = self._expanded_macro(node, depth)
            if expanded is not None:
                return expanded
        return _rebuild(node, lambda child: self.expanded_text(child, depth + 1))

    def _expanded_name(self, node: Node, depth: int) -> str:
        binding = self.resolve(node)
        if binding is None or binding.kind not in ("variable", "constant") or binding.is_dim3:
            return text_of(node)
        value = binding.value if self.is_stable(binding) else self._reaching_value(binding, node)
        if value is not None and value.type in ARGUMENT_LISTS:
            items = expression_children(value)
            value = items[0] if len(items) == 1 else None
        if value is None or self.scalar(value).opaque:
            return text_of(node)
        return f"({self.expanded_text(value, depth + 1)})"

    def _expanded_macro(self, call: Node, depth: int) -> str | None:
        name = callee_name(call)
        macro = self.symbols.macro_functions.get(name or "")
        arguments = call_arguments(call)
        if macro is None or len(macro[0]) != len(arguments):
            return None
        texts = [f"({self.expanded_text(a, depth + 1)})" for a in arguments]
        expression = parse_expression(_expand_macro(macro, texts))
        if expression is None:
            return None
        self._snippets.append(expression)
        return f"({self.expanded_text(expression.node, depth + 1)})"

    def dim3(self, node: Node, depth: int = 0) -> FoldedDim3:
        """Fold a grid or block argument: `dim3(...)`, `{...}`, a dim3 variable or a scalar."""
        components = self.dim3_components(node, depth)
        if components is None:
            folded = self.scalar(node, depth + 1)
            return FoldedDim3(folded.value, 1, 1, folded.unresolved)
        values = [self.scalar(c, depth + 1) if c is not None else Folded(1) for c in components]
        return FoldedDim3(values[0].value, values[1].value, values[2].value,
                          _merge(*(v.unresolved for v in values)))

    def dim3_components(self, node: Node, depth: int = 0) -> list[Node | None] | None:
        """The x/y/z expressions of a dim3-valued node (None for an omitted 1), or None when the
        node is a plain scalar. A dim3 variable resolves through its declaration."""
        node = strip_parentheses(node)
        if depth > _MAX_DEPTH:
            return None
        items: list[Node] | None = None
        if node.type == "call_expression":
            function = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
            if function is not None and text_of(function).endswith("dim3") and arguments:
                items = expression_children(arguments)
        elif node.type == "compound_literal_expression":
            value = node.child_by_field_name("value")
            items = expression_children(value) if value is not None else []
        elif node.type == "initializer_list":
            items = expression_children(node)
        elif node.type == "identifier":
            binding = self.resolve(node)
            if binding is not None and binding.is_dim3:
                return self._dim3_binding(binding, node, depth)
        if items is None:
            return None
        padded: list[Node | None] = [*items[:3]]
        return padded + [None] * (3 - len(padded))

    def _dim3_binding(self, binding: Binding, use: Node, depth: int) -> list[Node | None]:
        value = binding.value
        if not self.is_stable(binding):
            reached = reaching_write(binding.declaration, use, self.writes_of(binding)) \
                if binding.declaration is not None else None
            if reached is None:
                return [use, use, use]
            value = reached if isinstance(reached, Node) else value
        if value is None:
            return [None, None, None]
        if value.type in ARGUMENT_LISTS:
            items: list[Node | None] = [*expression_children(value)[:3]]
            return items + [None] * (3 - len(items))
        inner = self.dim3_components(value, depth + 1)
        return inner if inner is not None else [value, None, None]


def _is_kernel(function: Node) -> bool:
    return any(not child.is_named and child.type == "__global__" for child in function.children)


def _parameter_position(function: Node, binding: Binding) -> tuple[int | None, Node | None]:
    """The parameter's index in its function's list, and its default value."""
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    if parameters is None:
        return None, None
    position = 0
    for parameter in parameters.named_children:
        if parameter.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        if binding.declaration is not None and parameter.id == binding.declaration.id:
            return position, parameter.child_by_field_name("default_value")
        position += 1
    return None, None


def _rebuild(node: Node, replace: Callable[[Node], str]) -> str:
    """The node's text with each code child's text replaced."""
    data = node.text or b""
    pieces: list[str] = []
    cursor = 0
    for child in node.named_children:
        if child.type == "comment":
            continue
        start, end = child.start_byte - node.start_byte, child.end_byte - node.start_byte
        pieces.append(data[cursor:start].decode("utf-8", errors="replace"))
        pieces.append(replace(child))
        cursor = end
    pieces.append(data[cursor:].decode("utf-8", errors="replace"))
    return "".join(pieces)


def _expand_macro(macro: tuple[tuple[str, ...], str], arguments: list[str]) -> str:
    """A function-like macro's body with its parameters replaced by the arguments' text."""
    names, body = macro
    replacements = dict(zip(names, arguments, strict=True))
    if not replacements:
        return body
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return pattern.sub(lambda match: replacements[match.group(1)], body)


def _writes_by_function(written: list[Node]) -> dict[int, frozenset[str]]:
    writes: dict[int, set[str]] = {}
    for name in written:
        function = enclosing_function(name)
        if function is not None:
            writes.setdefault(function.id, set()).add(text_of(name))
    result = {key: frozenset(names) for key, names in writes.items()}
    # A sentinel entry marks the cache as filled even when nothing is written anywhere.
    result[-1] = frozenset()
    return result


def _apply(operator: str, a: int, b: int) -> int | None:
    """A C binary operator on folded integers (shifts limited to sane widths)."""
    if operator in ("<<", ">>") and not 0 <= b < 64:
        return None
    arithmetic = {
        "+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b,
        "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
        "==": int(a == b), "!=": int(a != b), "&&": int(bool(a) and bool(b)),
        "||": int(bool(a) or bool(b)),
    }
    if operator in arithmetic:
        return arithmetic[operator]
    if operator == "/":
        return c_divide(a, b)
    if operator == "%":
        return a - b * c_divide(a, b)
    if operator == "<<":
        return a << b
    if operator == ">>":
        return a >> b
    return None


def _merge(*groups: tuple[str, ...]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for group in groups:
        for name in group:
            seen.setdefault(name, None)
    return tuple(seen)
