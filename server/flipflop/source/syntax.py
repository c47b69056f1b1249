"""The tree-sitter-cuda parser and the few node helpers every source stage uses."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree


@functools.cache
def cuda_language() -> Language:
    return Language(tree_sitter_cuda.language())


def parse_tree(data: bytes) -> Tree:
    return Parser(cuda_language()).parse(data)


@functools.lru_cache(maxsize=256)
def _query(source: str) -> Query:
    query: Query = Query(cuda_language(), source)
    return query


def captures(node: Node, source: str) -> dict[str, list[Node]]:
    """Run a tree-sitter query (compiled once per process) and return its captures by name,
    each list in document order (tree-sitter does not promise that order)."""
    found = QueryCursor(_query(source)).captures(node)
    return {name: sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte))
            for name, nodes in found.items()}


def text_of(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""


def compact(text: str) -> str:
    """Text with all whitespace removed, to compare expressions as written."""
    return "".join(text.split())


def expression_children(node: Node) -> list[Node]:
    """Named children that are code (comments dropped, error wrappers flattened)."""
    result: list[Node] = []
    for child in node.named_children:
        if child.type == "comment":
            continue
        if child.type == "ERROR":
            result.extend(expression_children(child))
        else:
            result.append(child)
    return result


def ancestors(node: Node) -> Iterator[Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def declarator_name(node: Node | None) -> Node | None:
    """The identifier a (possibly nested pointer/array/init/function) declarator declares."""
    while node is not None:
        if node.type in ("identifier", "field_identifier", "qualified_identifier",
                         "destructor_name", "operator_name"):
            return node
        node = node.child_by_field_name("declarator")
    return None


def enclosing_function(node: Node) -> Node | None:
    for ancestor in ancestors(node):
        if ancestor.type in ("function_definition", "lambda_expression"):
            return ancestor
    return None


def function_name(function: Node) -> str | None:
    name = declarator_name(function.child_by_field_name("declarator"))
    return text_of(name) if name is not None else None


def strip_parentheses(node: Node) -> Node:
    while node.type == "parenthesized_expression":
        inner = expression_children(node)
        if len(inner) != 1:
            break
        node = inner[0]
    return node
