"""Which launches instantiate which template instance, and what the instance says about them.

A template kernel compiles to one PTX kernel per instance (`reduce<float, 256u, true>`). A
launch `reduce<T, 256, true><<<grid, block>>>(…)` instantiates only the instances whose template
arguments agree with the ones it writes: a written value must be equal; a name the source leaves
open (`T`, the enclosing function's `BLOCK`) agrees with anything and takes the instance's value,
so `block`, the grid and the shared memory that use it fold for that instance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from flipflop.source.coverage import fold_text
from flipflop.source.model import Folded, FoldedDim3, GridAxis, LaunchSite

# Spellings the demangler prints for the built-in types (and what people write for them).
_PRIMITIVES = frozenset({
    "bool", "char", "signed char", "unsigned char", "short", "unsigned short", "int",
    "unsigned int", "unsigned", "long", "unsigned long", "long long", "unsigned long long",
    "float", "double", "half", "__half", "__nv_bfloat16", "nv_bfloat16", "half2", "__half2",
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "size_t",
})
# What the demangler spells for the common aliases of the built-in types.
_ALIASES = {
    "unsigned": "unsigned int", "signed": "int", "short int": "short",
    "long int": "long", "long long int": "long long", "unsigned long int": "unsigned long",
    "unsigned long long int": "unsigned long long", "size_t": "unsigned long",
    "std::size_t": "unsigned long", "int8_t": "signed char", "uint8_t": "unsigned char",
    "int16_t": "short", "uint16_t": "unsigned short", "int32_t": "int",
    "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long",
    "half": "__half", "half2": "__half2", "nv_bfloat16": "__nv_bfloat16",
}
# `256`, `256u`, `-1`, and casts the demangler writes for other integer types: `(char)65`,
# `(Mode)1`, `(unsigned char)3`.
_INTEGER = re.compile(r"^(?:\([\w:\s]+\)\s*)?(-?\d+)[uUlL]*$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")

TemplateValue = int | str  # an integer argument, or a type as the demangler spells it


def template_arguments(name: str) -> tuple[str, ...] | None:
    """The template arguments of a kernel instance, as written in its demangled name.

    `void k<float, 256u, true>(float*)` and `k<float,256,true>` give `("float", "256u",
    "true")`; None when the name has no template argument list.
    """
    depth = 0
    head = name
    for position, character in enumerate(name):
        depth += (character == "<") - (character == ">")
        if character == "(" and depth == 0:  # the parameter list, not a cast in an argument
            head = name[:position]
            break
    head = head.rstrip()
    if not head.endswith(">"):
        return None
    depth = 0
    for position in range(len(head) - 1, -1, -1):
        character = head[position]
        depth += (character == ">") - (character == "<")
        if depth == 0:
            return tuple(_split(head[position + 1 : -1]))
    return None


def _split(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for character in text:
        if character in "<([":
            depth += 1
        elif character in ">)]":
            depth -= 1
        if character == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(character)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def argument_value(text: str) -> TemplateValue:
    """`256u` → 256, `true` → 1, `(char)65` → 65; a type stays its normalised spelling."""
    spelled = " ".join(text.split())
    if spelled in ("true", "false"):
        return int(spelled == "true")
    match = _INTEGER.match(spelled)
    if match is not None:
        return int(match.group(1))
    spelled = spelled.replace(" const", "").replace("const ", "")
    return _ALIASES.get(spelled, spelled)


def instance_bindings(
    site: LaunchSite, instance: Sequence[str]
) -> dict[str, TemplateValue] | None:
    """The names the launch leaves open, bound to this instance's arguments; None when the
    launch cannot instantiate the instance (a written argument differs)."""
    bound: dict[str, TemplateValue] = {}
    for position, (written, folded) in enumerate(
        zip(site.template_arguments, site.template_values, strict=False)
    ):
        if position >= len(instance):
            break
        actual = argument_value(instance[position])
        if folded is not None:
            if actual != folded:
                return None
            continue
        spelled = argument_value(written)
        if isinstance(spelled, int):
            if actual != spelled:
                return None
        elif spelled in _PRIMITIVES or spelled in _ALIASES.values() or spelled == actual:
            if spelled != actual:
                return None
        elif _NAME.match(spelled) and bound.setdefault(spelled, actual) != actual:
            return None
    return bound


def launches_of_instance(
    sites: Sequence[LaunchSite], display_name: str
) -> tuple[LaunchSite, ...]:
    """The launches among `sites` (all of one kernel) that instantiate this instance, each with
    what the instance's template arguments fold of it."""
    instance = template_arguments(display_name)
    if instance is None:
        return tuple(sites)
    found: list[LaunchSite] = []
    for site in sites:
        bound = instance_bindings(site, instance)
        if bound is not None:
            found.append(specialise(site, bound) if bound else site)
    return tuple(found)


def specialise(site: LaunchSite, bound: Mapping[str, TemplateValue]) -> LaunchSite:
    """The launch with the template parameters in `bound` replaced by their values, refolded."""
    if not site.expressions:
        return site

    def fold(text: str) -> int | None:
        return fold_text(_substitute(text, bound), {}) if text else None

    block = site.block_folded
    if block.value is None:
        x, y, z = (fold(e) if v is None else v for e, v in
                   zip(site.expressions.block, (block.x, block.y, block.z), strict=True))
        block = FoldedDim3(x, y, z, block.unresolved if None in (x, y, z) else ())
    smem = site.shared_memory_folded
    if smem.value is None and site.expressions.shared_memory:
        value = fold(site.expressions.shared_memory)
        smem = Folded(value, smem.unresolved if value is None else ())
    axes = tuple(_axis(axis, bound) for axis in site.grid_axes)
    arguments = tuple(
        fold(text) if value is None else value
        for text, value in zip(site.expressions.arguments, site.argument_values, strict=False)
    )
    return replace(
        site, block_folded=block, shared_memory_folded=smem,
        grid_axes=(axes[0], axes[1], axes[2]), argument_values=arguments,
        needs=tuple(name for name in site.needs if name not in bound),
    )  # fmt: skip


def _axis(axis: GridAxis, bound: Mapping[str, TemplateValue]) -> GridAxis:
    if axis.kind == "covers" and axis.threads is None and axis.threads_expression:
        threads = fold_text(_substitute(axis.threads_expression, bound), {})
        return replace(axis, threads=threads,
                       threads_expression=_substitute(axis.threads_expression, bound))
    if axis.value is None and axis.expression:
        value = fold_text(_substitute(axis.expression, bound), {})
        return replace(axis, value=value, expression=_substitute(axis.expression, bound))
    return axis


def _substitute(text: str, bound: Mapping[str, TemplateValue]) -> str:
    for name, value in bound.items():
        text = re.sub(rf"\b{re.escape(name)}\b", str(value), text)
    return text
