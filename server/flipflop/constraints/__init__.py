"""The block-shape constraint stage: which block shapes a kernel's code supports, and why.

source (tree-sitter) + PTX of one kernel instance → `BlockConstraints`. The advisor evaluates only
shapes that meet every requirement; the hover, the table and the JSON say what the code needs
with the source lines behind it. See `flipflop.constraints.infer` for the rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tree_sitter import Node, Tree

from flipflop.constraints.code import KernelCode, read_kernel
from flipflop.constraints.infer import apply_annotation, block_constraints
from flipflop.constraints.model import (
    BlockConstraints,
    Conflict,
    Requirement,
    Unsure,
)
from flipflop.constraints.ptx_facts import PtxFacts, ptx_facts
from flipflop.ir import Module
from flipflop.launch import Dim3
from flipflop.source.folding import FileSymbols, Folder
from flipflop.source.model import Kernel as SourceKernel
from flipflop.source.syntax import captures, declarator_name, parse_tree

__all__ = [
    "BlockConstraints",
    "Conflict",
    "KernelCode",
    "PtxFacts",
    "Requirement",
    "SourceReading",
    "SpaceConflicts",
    "Unsure",
    "apply_annotation",
    "block_constraints",
    "configuration_conflicts",
    "instance_constraints",
    "ptx_facts",
    "read_source",
    "template_values",
]


@dataclass(frozen=True)
class SourceReading:
    """One parse of a file for this stage: its tree, folder and kernel definitions by start."""

    tree: Tree
    folder: Folder
    definitions: Mapping[int, Node]  # kernel definitions by the first byte of their name


def read_source(text: str) -> SourceReading:
    tree = parse_tree(text.encode("utf-8"))
    root = tree.root_node
    definitions: dict[int, Node] = {}
    for node in captures(root, '(function_definition "__global__") @kernel').get("kernel", []):
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        name = declarator_name(declarator) if declarator is not None else None
        if name is not None:
            definitions[name.start_byte] = node
    return SourceReading(tree, Folder(FileSymbols.collect(root)), definitions)


def instance_constraints(
    reading: SourceReading | None,
    kernel: SourceKernel | None,
    display_name: str,
    module: Module | None,
    ptx_name: str,
    *,
    source_path: str | None = None,
    defines: Mapping[str, int] | None = None,
) -> BlockConstraints:
    """The constraints of one compiled instance of `kernel` (its PTX entry `ptx_name`).

    Template parameters take the instance's arguments (read from its demangled name), `defines`
    the values of `-D` macros and tunables. Without the source (a PTX-only kernel) only what the
    PTX shows is used.
    """
    env: dict[str, int] = dict(defines or {})
    if kernel is not None:
        env.update(template_values(kernel.template_parameters, display_name))
    code = None
    if reading is not None and kernel is not None and kernel.is_definition:
        node = reading.definitions.get(kernel.name_range.start_byte)
        if node is not None:
            code = read_kernel(reading.tree.root_node, node, reading.folder, env)
    facts = ptx_facts(module, ptx_name, source_path) if module is not None else None
    annotation = kernel.annotation if kernel is not None else None
    return block_constraints(code, facts, annotation)


@dataclass(frozen=True)
class SpaceConflicts:
    """Configurations of a search space whose tuned values break what the code proves."""

    warnings: tuple[str, ...] = ()  # one line per requirement broken
    broken: tuple[tuple[int, str], ...] = ()  # (position among the configurations, why)


def configuration_conflicts(
    reading: SourceReading,
    kernel: SourceKernel | None,
    configurations: Sequence[tuple[Mapping[str, int], Dim3, str]],
) -> SpaceConflicts:
    """What the code needs that some configurations of a search space break: one warning per
    requirement ("12 of 240 configurations break what the code needs, block.x a power of two
    (…); e.g. block_size_x=48") and each broken configuration with the reason.
    `configurations` holds each one's integer tunables, block and label.
    """
    if kernel is None or not kernel.is_definition:
        return SpaceConflicts()
    node = reading.definitions.get(kernel.name_range.start_byte)
    if node is None:
        return SpaceConflicts()
    labels: dict[str, list[str]] = {}
    broken: list[tuple[int, str]] = []
    # Configurations that differ only in values the code never names read the same facts.
    named = names_reached(reading)
    facts: dict[tuple[tuple[str, int], ...], BlockConstraints] = {}
    for position, (env, block, label) in enumerate(configurations):
        key = tuple(sorted((name, value) for name, value in env.items() if name in named))
        if key not in facts:
            code = read_kernel(reading.tree.root_node, node, reading.folder, dict(key))
            facts[key] = block_constraints(code, None, kernel.annotation)
        conflicts = facts[key].at_launch(block).conflicts
        for conflict in conflicts:
            labels.setdefault(conflict.requirement.describe(), []).append(label)
        if conflicts:
            broken.append((position, f"the code needs {conflicts[0].requirement.describe()}"))
    total = len(configurations)
    warnings = tuple(
        f"{len(found)} of {total} configurations break what the code needs, {what}; "
        f"e.g. {found[0]}"
        for what, found in labels.items()
    )
    return SpaceConflicts(warnings, tuple(broken))


def names_reached(reading: SourceReading) -> frozenset[str]:
    """Every identifier a kernel's code can depend on: the functions of the file (callees are
    found by name) and the macros they name, transitively."""
    text = "\n".join(
        node.text.decode("utf-8", errors="replace") for node in
        captures(reading.tree.root_node, "(function_definition) @f").get("f", [])
        if node.text is not None
    )
    found = set(_IDENTIFIER.findall(text))
    macros = reading.folder.symbols.macros
    pending = [name for name in found if name in macros]
    while pending:
        for name in _IDENTIFIER.findall(macros[pending.pop()]):
            if name not in found:
                found.add(name)
                if name in macros:
                    pending.append(name)
    return frozenset(found)


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def template_values(parameters: Sequence[object], display_name: str) -> dict[str, int]:
    """`template <int BLOCK, int ITEMS>` with `void k<128, 4>(float*)` -> {BLOCK: 128, ITEMS: 4}.

    Type parameters and arguments that are not integers are left out.
    """
    arguments = template_arguments(display_name)
    values: dict[str, int] = {}
    for parameter, argument in zip(parameters, arguments, strict=False):
        name = getattr(parameter, "name", "")
        kind = getattr(parameter, "kind", "value")
        number = _integer(argument)
        if name and kind == "value" and number is not None:
            values[name] = number
    return values


def template_arguments(display_name: str) -> tuple[str, ...]:
    """The top-level template arguments of a demangled kernel name, as written."""
    head = _head(display_name)
    start = head.find("<")
    if start < 0 or not head.endswith(">"):
        return ()
    inner = head[start + 1:-1]
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for character in inner:
        if character in "<([":
            depth += 1
        elif character in ">)]":
            depth -= 1
        if character == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(character)
    parts.append("".join(current).strip())
    return tuple(parts)


def _head(display_name: str) -> str:
    """`void k<(unsigned char)1>(float*)` -> `void k<(unsigned char)1>`: up to the parameter
    list, which is the parenthesis at template depth 0."""
    depth = 0
    for position, character in enumerate(display_name):
        if character == "<":
            depth += 1
        elif character == ">":
            depth -= 1
        elif character == "(" and depth == 0:
            return display_name[:position].strip()
    return display_name.strip()


_INTEGER = re.compile(r"^(?:\([^()]*\))?\s*(-?(?:0x[0-9a-fA-F]+|\d+))[uUlL]*$")


def _integer(text: str) -> int | None:
    if text in ("true", "false"):
        return int(text == "true")
    match = _INTEGER.match(text.strip())
    return int(match.group(1), 0) if match is not None else None
