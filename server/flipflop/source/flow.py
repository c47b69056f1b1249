"""Where a value comes from in structured host code: the assignment that reaches a use, the
`case` a launch sits in, and the calls of a function.

The rules are the ones a reader applies at a glance, and they refuse whenever a glance is not
enough: the nearest write before a use reaches it only when that write is a plain `x = …`
statement in a block around the use (not in a branch beside it) and no loop around the use
writes the variable elsewhere; `case 512:` of `switch (threads)` means `threads == 512` there.
"""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from flipflop.source.syntax import ancestors, expression_children, strip_parentheses, text_of

_LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})
_SEQUENCES = frozenset({"compound_statement", "case_statement"})
_EXITS = frozenset({"break_statement", "return_statement", "continue_statement", "goto_statement",
                    "throw_statement"})


def reaching_write(declaration: Node, use: Node, writes: list[Node]) -> Node | bool | None:
    """What reaches `use` of a variable declared by `declaration`, given the identifiers that
    write it in its function (`writes`, from the writes query).

    The right-hand side of the assignment that reaches it; True when the declaration's own
    initializer does (no write in between); None when no single write is sure to reach it.
    """
    before = [w for w in writes if declaration.end_byte <= w.start_byte < use.start_byte]
    loops = [a for a in ancestors(use) if a.type in _LOOPS]
    if not before:
        if any(_inside(w, loop) for loop in loops for w in writes):
            return None  # a later iteration may see a write made after the use
        return True
    nearest = max(before, key=lambda w: w.start_byte)
    value = _plain_assignment(nearest, use)
    if value is None:
        return None
    for loop in loops:
        if not _inside(nearest, loop) and any(_inside(w, loop) for w in writes):
            return None
    return value


def _plain_assignment(written: Node, use: Node) -> Node | None:
    """The right-hand side when `written` is the target of `x = value;`, a statement of a block
    that also holds `use`."""
    assignment = written.parent
    if assignment is None or assignment.type != "assignment_expression":
        return None
    operator = assignment.child_by_field_name("operator")
    if operator is None or text_of(operator) != "=":
        return None
    statement = assignment.parent
    if statement is None or statement.type != "expression_statement":
        return None
    block = statement.parent
    if block is None or block.type not in _SEQUENCES:
        return None
    if not any(a.id == block.id for a in ancestors(use)):
        return None
    return assignment.child_by_field_name("right")


def _inside(node: Node, outer: Node) -> bool:
    return outer.start_byte <= node.start_byte and node.end_byte <= outer.end_byte


def case_conditions(node: Node) -> Iterator[tuple[Node, Node]]:
    """(the switched identifier, the case value) for every `case` around `node`, and (the
    identifier, the constant) for every `if (x == constant)` whose then-branch holds it."""
    child = node
    for parent in ancestors(node):
        if parent.type == "case_statement":
            value = parent.child_by_field_name("value")
            switch = parent.parent.parent if parent.parent is not None else None
            if (value is not None and switch is not None and switch.type == "switch_statement"
                    and not _falls_into(parent)):
                subject = _condition(switch)
                if subject is not None and subject.type == "identifier":
                    yield subject, value
        elif parent.type == "if_statement":
            consequence = parent.child_by_field_name("consequence")
            condition = _condition(parent)
            if consequence is not None and consequence.id == child.id and condition is not None:
                yield from _equalities(condition)
        child = parent


def _falls_into(case: Node) -> bool:
    """Whether the case before `case` runs on into it (`case 1: case 2: …`, or no `break`)."""
    previous = case.prev_named_sibling
    while previous is not None and previous.type == "comment":
        previous = previous.prev_named_sibling
    if previous is None or previous.type != "case_statement":
        return False
    value = previous.child_by_field_name("value")
    statements = [c for c in previous.named_children
                  if c.type != "comment" and (value is None or c.id != value.id)]
    if not statements:
        return True
    return statements[-1].type not in _EXITS


def _condition(statement: Node) -> Node | None:
    clause = statement.child_by_field_name("condition")
    if clause is None:
        return None
    if clause.type == "condition_clause":
        value = clause.child_by_field_name("value")
        clause = value if value is not None else clause
    return strip_parentheses(clause)


def _equalities(condition: Node) -> Iterator[tuple[Node, Node]]:
    condition = strip_parentheses(condition)
    if condition.type != "binary_expression":
        return
    operator = text_of(condition.child_by_field_name("operator") or condition)
    left = condition.child_by_field_name("left")
    right = condition.child_by_field_name("right")
    if left is None or right is None:
        return
    if operator == "&&":
        yield from _equalities(left)
        yield from _equalities(right)
    elif operator == "==":
        left, right = strip_parentheses(left), strip_parentheses(right)
        if left.type == "identifier":
            yield left, right
        elif right.type == "identifier":
            yield right, left


def callee_name(call: Node) -> str | None:
    """The plain name a call expression calls (`f`, `ns::f`, `f<float>` all give `f`)."""
    function = call.child_by_field_name("function")
    if function is None:
        return None
    if function.type == "template_function":
        function = function.child_by_field_name("name") or function
    if function.type == "qualified_identifier":
        return text_of(function).rsplit("::", 1)[-1].split("<", 1)[0]
    if function.type == "identifier":
        return text_of(function)
    return None


def call_arguments(call: Node) -> list[Node]:
    arguments = call.child_by_field_name("arguments")
    return expression_children(arguments) if arguments is not None else []
