"""parse_source: kernels, launch sites, declarations and annotations of one CUDA file."""

from __future__ import annotations

import re
from dataclasses import replace

from tree_sitter import Node

from flipflop.source.annotations import merge, parse_annotation
from flipflop.source.coverage import describe_grid
from flipflop.source.folding import SYMBOLS_QUERY, WRITES_QUERY, FileSymbols, Folder
from flipflop.source.model import (
    Annotation,
    ConfigArgument,
    Declaration,
    Folded,
    FoldedDim3,
    GridAxis,
    Kernel,
    KernelParameter,
    LaunchBounds,
    LaunchExpressions,
    LaunchSite,
    MacroDefinition,
    Range,
    SourceFile,
    TemplateParameter,
)
from flipflop.source.positions import LineIndex
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

_LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})
_LAUNCH_QUERY = """
(function_definition "__global__") @kernel
(declaration "__global__" declarator: (function_declarator)) @kernel
(kernel_call_syntax) @launch
"""
_BOUNDS_MACRO_BODY = re.compile(r"^\s*__launch_bounds__\s*\((?P<args>.*)\)\s*$", re.DOTALL)


def parse_source(text: str) -> SourceFile:
    """Read kernels, `__launch_bounds__`, launches and `// flipflop:` annotations from CUDA text.

    Nothing is compiled and nothing fails: broken code yields what could be read plus the ranges
    of the syntax errors.
    """
    data = text.encode("utf-8")
    tree = parse_tree(data)
    index = LineIndex.of(data)
    root = tree.root_node
    # One query, one walk over the tree: separate queries cost a walk each.
    found = captures(root, SYMBOLS_QUERY + WRITES_QUERY + _LAUNCH_QUERY)
    folder = Folder(FileSymbols.from_captures(found), found.get("written", []))
    kernels = [_kernel(node, index, folder) for node in found.get("kernel", [])]
    declarations: dict[tuple[int, int], Declaration] = {}
    launches = [_launch(node, index, folder, declarations)
                for node in found.get("launch", []) if node.parent is not None]
    annotations = _annotations(data, root, index)
    kernels, launches = _attach(annotations, kernels, launches)
    kernels.sort(key=lambda k: k.range.start_byte)
    launches.sort(key=lambda s: s.range.start_byte)
    return SourceFile(
        text=text,
        kernels=tuple(kernels),
        launches=tuple(launches),
        declarations=tuple(sorted(declarations.values(), key=lambda d: d.range.start_byte)),
        annotations=tuple(annotations),
        macros=tuple(folder.symbols.macros.items()),
        constants=_file_constants(folder),
        syntax_errors=_errors(root, index, folder) if root.has_error else (),
        definitions=tuple(_definition(node, index) for node in found.get("macro", [])),
    )


def _definition(node: Node, index: LineIndex) -> MacroDefinition:
    name = text_of(node.child_by_field_name("name") or node)
    value_node = node.child_by_field_name("value")
    assert value_node is not None  # the query requires a value
    raw = text_of(value_node)
    # The value node runs from after the name to the end of the line, spaces included.
    start = value_node.start_byte + (len(raw.encode()) - len(raw.lstrip().encode()))
    end = value_node.end_byte - (len(raw.encode()) - len(raw.rstrip().encode()))
    parent = node.parent
    guarded = (
        parent is not None
        and parent.type == "preproc_ifdef"
        and text_of(parent.children[0]) == "#ifndef"
        and text_of(parent.child_by_field_name("name") or parent) == name
    )
    return MacroDefinition(name, raw.strip(), index.range(start, max(start, end)),
                           node.start_point[0], guarded)


# -- kernels -------------------------------------------------------------------------------------


def _kernel(node: Node, index: LineIndex, folder: Folder) -> Kernel:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    name_node = declarator_name(declarator) if declarator is not None else None
    name = text_of(name_node) if name_node is not None else ""
    namespaces = [text_of(a.child_by_field_name("name") or a) for a in ancestors(node)
                  if a.type == "namespace_definition" and a.child_by_field_name("name")]
    qualified = "::".join([*reversed(namespaces), name])
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    start = node.parent if node.parent is not None and node.parent.type == "template_declaration" \
        else node
    insert_at = declarator.start_byte if declarator is not None else node.start_byte
    return Kernel(
        name=name.rsplit("::", 1)[-1],
        qualified_name=qualified,
        name_range=index.range(name_node.start_byte, name_node.end_byte) if name_node is not None
        else index.range(node.start_byte, node.start_byte),
        range=index.range(start.start_byte, node.end_byte),
        line=node.start_point[0],
        parameters=_parameters(parameters),
        template_parameters=_template_parameters(start) if start is not node else (),
        launch_bounds=_launch_bounds(node, index, folder),
        is_definition=node.type == "function_definition",
        bounds_insert_byte=insert_at,
        bounds_insert_position=index.position(insert_at),
    )


def _parameters(parameter_list: Node | None) -> tuple[KernelParameter, ...]:
    if parameter_list is None:
        return ()
    result = []
    for parameter in parameter_list.named_children:
        if parameter.type not in ("parameter_declaration", "optional_parameter_declaration"):
            continue
        name_node = declarator_name(parameter.child_by_field_name("declarator"))
        whole = text_of(parameter)
        if name_node is None:
            result.append(KernelParameter("", " ".join(whole.split())))
            continue
        before = (parameter.text or b"")[: name_node.start_byte - parameter.start_byte]
        after = (parameter.text or b"")[name_node.end_byte - parameter.start_byte:]
        type_text = (before + after).decode("utf-8", errors="replace")
        type_text = type_text.split("=")[0]
        result.append(KernelParameter(text_of(name_node), " ".join(type_text.split())))
    return tuple(result)


def _template_parameters(template: Node) -> tuple[TemplateParameter, ...]:
    parameters = template.child_by_field_name("parameters")
    if parameters is None:
        return ()
    result = []
    for parameter in parameters.named_children:
        if parameter.type in ("type_parameter_declaration", "optional_type_parameter_declaration",
                              "variadic_type_parameter_declaration"):
            name = parameter.child_by_field_name("name") or next(
                (c for c in parameter.named_children if c.type == "type_identifier"), None)
            result.append(TemplateParameter(text_of(name) if name else "", "type", "typename"))
        elif parameter.type in ("parameter_declaration", "optional_parameter_declaration"):
            name = declarator_name(parameter.child_by_field_name("declarator"))
            type_node = parameter.child_by_field_name("type")
            result.append(TemplateParameter(text_of(name) if name else "", "value",
                                            text_of(type_node) if type_node else ""))
    return tuple(result)


def _launch_bounds(kernel: Node, index: LineIndex, folder: Folder) -> LaunchBounds | None:
    for child in kernel.children:
        if child.type == "launch_bounds":
            arguments = expression_children(child)
            values = [folder.scalar(a) for a in arguments]
            return _bounds(child.start_byte, child.end_byte, [text_of(a) for a in arguments],
                           values, index, None)
        if child.type == "ERROR":
            # `__global__ void BOUNDS k(...)` with `#define BOUNDS __launch_bounds__(256, 2)`.
            for identifier in child.named_children:
                body = folder.symbols.macros.get(text_of(identifier))
                match = _BOUNDS_MACRO_BODY.match(body) if body is not None else None
                if match is None:
                    continue
                texts = _split_arguments(match.group("args"))
                values = [folder.fold_text(argument) for argument in texts]
                return _bounds(identifier.start_byte, identifier.end_byte, texts, values, index,
                               text_of(identifier))
    return None


def _bounds(start: int, end: int, texts: list[str], values: list[Folded], index: LineIndex,
            macro: str | None) -> LaunchBounds:
    numbers = [v.value for v in values] + [None] * (3 - len(values))
    unresolved = tuple(dict.fromkeys(n for v in values for n in v.unresolved))
    return LaunchBounds(index.range(start, end), tuple(texts), numbers[0], numbers[1], numbers[2],
                        unresolved, macro)


def _split_arguments(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


# -- launches ------------------------------------------------------------------------------------


def _launch(config: Node, index: LineIndex, base: Folder,
            declarations: dict[tuple[int, int], Declaration]) -> LaunchSite:
    call = config.parent
    assert call is not None
    # `case 256:` of `switch (threads)` around the launch: `threads` is 256 here.
    folder = base.under(base.facts_at(call))
    callee = call.child_by_field_name("function") or config
    name_node, template_arguments = _callee_name(callee)
    arguments = [c for c in config.named_children if c.type not in ("comment",)]
    arguments = [a for a in arguments if a.type != "ERROR"] or arguments
    grid = arguments[0] if arguments else config
    block = arguments[1] if len(arguments) > 1 else config
    smem = arguments[2] if len(arguments) > 2 else None
    stream = arguments[3] if len(arguments) > 3 else None
    call_arguments = call.child_by_field_name("arguments")
    passed = expression_children(call_arguments) if call_arguments is not None else []
    block_folded = folder.dim3(block) if block is not config else FoldedDim3(None, None, None)
    grid_folded = folder.dim3(grid) if grid is not config else FoldedDim3(None, None, None)
    smem_folded = folder.scalar(smem) if smem is not None else Folded(0)
    for argument in (grid, block):
        _record_declaration(argument, base, index, declarations)
    function = enclosing_function(call)
    grid_axes = describe_grid(grid, block, block_folded, folder)
    return LaunchSite(
        kernel=text_of(name_node).rsplit("::", 1)[-1],
        callee=text_of(name_node),
        template_arguments=template_arguments,
        kernel_name_range=index.range(name_node.start_byte, name_node.end_byte),
        range=index.range(call.start_byte, call.end_byte),
        config_range=index.range(config.start_byte, config.end_byte),
        line=call.start_point[0],
        grid=_argument(grid, index),
        block=_argument(block, index),
        shared_memory=_argument(smem, index) if smem is not None else None,
        stream=_argument(stream, index) if stream is not None else None,
        arguments=tuple(text_of(a) for a in passed),
        grid_folded=grid_folded,
        block_folded=block_folded,
        shared_memory_folded=smem_folded,
        grid_axes=grid_axes,
        enclosing_function=function_name(function) if function is not None else None,
        in_loop=any(a.type in _LOOPS for a in ancestors(call)),
        template_values=_template_values(callee, folder),
        argument_values=tuple(folder.scalar(a).value for a in passed),
        expressions=LaunchExpressions(
            block=_block_expressions(block, folder) if block is not config else ("", "", ""),
            shared_memory=folder.expanded_text(smem) if smem is not None else "",
            arguments=tuple(folder.expanded_text(a) for a in passed),
        ),
        needs=_needs(folder, grid_axes, block_folded, smem_folded),
    )


def _block_expressions(block: Node, folder: Folder) -> tuple[str, str, str]:
    components = folder.dim3_components(block)
    if components is None:
        return folder.expanded_text(block), "1", "1"
    x, y, z = (folder.expanded_text(c) if c is not None else "1" for c in components)
    return x, y, z


_NAME = re.compile(r"[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")


def _needs(folder: Folder, axes: tuple[GridAxis, GridAxis, GridAxis], block: FoldedDim3,
           smem: Folded) -> tuple[str, ...]:
    """The names that keep the grid, the block or the shared memory from folding."""
    names: dict[str, None] = {}
    groups = [a.unresolved for a in axes if a.value is None and
              (a.kind != "covers" or a.threads is None)]
    groups += [block.unresolved if block.value is None else (),
               smem.unresolved if smem.value is None else ()]
    for group in groups:
        for name in group:
            if _NAME.fullmatch(name) and name not in folder.opaque_names:
                names.setdefault(name, None)
    return tuple(names)


def _template_of(callee: Node) -> Node:
    """The `name<args>` node of a callee, written plainly or qualified (`ns::name<args>`)."""
    if callee.type == "qualified_identifier":
        inner = callee.child_by_field_name("name")
        while inner is not None and inner.type == "qualified_identifier":
            inner = inner.child_by_field_name("name")
        if inner is not None and inner.type == "template_function":
            return inner
    return callee


def _template_values(callee: Node, folder: Folder) -> tuple[int | None, ...]:
    """The template arguments folded to integers (None where one does not fold)."""
    template = _template_of(callee)
    if template.type != "template_function":
        return ()
    arguments = template.child_by_field_name("arguments")
    if arguments is None:
        return ()
    return tuple(folder.scalar(node).value for node in expression_children(arguments))


def _callee_name(callee: Node) -> tuple[Node, tuple[str, ...]]:
    """The kernel's name node (qualified when written so) and its template arguments."""
    template = _template_of(callee)
    if template.type == "template_function":
        arguments = template.child_by_field_name("arguments")
        texts = tuple(text_of(a) for a in expression_children(arguments)) if arguments else ()
        name = template.child_by_field_name("name") or template
        if template is callee:
            return name, texts
        return _qualified_without_template(callee, name), texts
    return callee, ()


def _qualified_without_template(callee: Node, name: Node) -> Node:
    # The name range should cover `ns::kernel`, not the template arguments; the identifier alone
    # is the part an editor highlights, so use it.
    return name


def _argument(node: Node, index: LineIndex) -> ConfigArgument:
    return ConfigArgument(text_of(node), index.range(node.start_byte, node.end_byte))


def _record_declaration(argument: Node, folder: Folder, index: LineIndex,
                        declarations: dict[tuple[int, int], Declaration]) -> None:
    node = strip_parentheses(argument)
    if node.type != "identifier":
        return
    binding = folder.resolve(node)
    if binding is None or binding.declaration is None or binding.name_node is None:
        return
    if binding.kind not in ("variable", "constant"):
        return
    key = (binding.declaration.start_byte, binding.name_node.start_byte)
    if key in declarations:
        return
    value = binding.value
    function = binding.function
    declarations[key] = Declaration(
        name=binding.name,
        type=binding.type_text,
        range=index.range(binding.declaration.start_byte, binding.declaration.end_byte),
        value_range=index.range(value.start_byte, value.end_byte) if value is not None else None,
        value_text=text_of(value) if value is not None else "",
        folded=folder.dim3(node),
        function=function_name(function) if function is not None else None,
    )


# -- annotations ---------------------------------------------------------------------------------


def _annotations(data: bytes, root: Node, index: LineIndex) -> list[Annotation]:
    if b"flipflop:" not in data:
        return []
    result: list[Annotation] = []
    for match in re.finditer(rb"//[ \t]*flipflop:[^\n]*", data):
        comment = root.descendant_for_byte_range(match.start(), match.start() + 2)
        if comment is None or comment.type != "comment":
            continue
        annotation = parse_annotation(text_of(comment), index.range(comment.start_byte,
                                                                    comment.end_byte))
        if annotation is None:
            continue
        previous = result[-1] if result else None
        if previous is not None and _adjacent(previous, annotation, data):
            result[-1] = merge(previous, annotation)
        else:
            result.append(annotation)
    return result


def _adjacent(first: Annotation, second: Annotation, data: bytes) -> bool:
    between = data[first.range.end_byte:second.range.start_byte]
    return second.range.start.line == first.range.end.line + 1 and not between.strip()


def _attach(annotations: list[Annotation], kernels: list[Kernel],
            launches: list[LaunchSite]) -> tuple[list[Kernel], list[LaunchSite]]:
    if not annotations:
        return kernels, launches
    targets: list[tuple[int, int, str, int]] = []
    for position, kernel in enumerate(kernels):
        targets.append((kernel.range.start_byte, kernel.range.start.line, "kernel", position))
    for position, site in enumerate(launches):
        targets.append((site.range.start_byte, site.range.start.line, "launch", position))
    targets.sort()
    for annotation in annotations:
        target = _target_of(annotation, targets, kernels, launches)
        if target is None:
            continue
        kind, position = target
        if kind == "kernel":
            kernels[position] = replace(kernels[position], annotation=annotation)
        else:
            launches[position] = replace(launches[position], annotation=annotation)
    return kernels, launches


def _target_of(annotation: Annotation, targets: list[tuple[int, int, str, int]],
               kernels: list[Kernel], launches: list[LaunchSite]) -> tuple[str, int] | None:
    line = annotation.range.start.line
    # A trailing annotation belongs to the launch or kernel signature on its own line.
    for _, _, kind, position in targets:
        if kind == "launch" and launches[position].range.end.line == line \
                and launches[position].range.end_byte <= annotation.range.start_byte:
            return kind, position
        if kind == "kernel" and kernels[position].name_range.start.line == line \
                and kernels[position].name_range.end_byte <= annotation.range.start_byte:
            return kind, position
    for start_byte, _, kind, position in targets:
        if start_byte >= annotation.range.end_byte:
            return kind, position
    return None


# -- file facts ----------------------------------------------------------------------------------


def _file_constants(folder: Folder) -> tuple[tuple[str, int], ...]:
    constants: dict[str, int] = {}
    for name, bindings in folder.symbols.bindings.items():
        if len(bindings) == 1 and bindings[0].kind in ("constant", "enumerator"):
            value = folder.fold_binding(bindings[0], 0)
            if value.value is not None:
                constants[name] = value.value
    for name in folder.symbols.macros:
        if name not in folder.symbols.function_macros and re.fullmatch(r"[\w\s()+\-*/%<>]+",
                                                                       folder.symbols.macros[name]):
            value = folder.fold_text(folder.symbols.macros[name])
            if value.value is not None:
                constants[name] = value.value
    return tuple(sorted(constants.items()))


def _errors(root: Node, index: LineIndex, folder: Folder) -> tuple[Range, ...]:
    found = captures(root, "(ERROR) @error (MISSING) @missing")
    # A lone macro name where the grammar expects none (`__global__ void BOUNDS k()`) is valid
    # code once preprocessed.
    nodes = [n for n in found.get("error", [])
             if not (n.named_child_count == 1 and text_of(n.named_children[0])
                     in folder.symbols.macros)] + found.get("missing", [])
    return tuple(index.range(n.start_byte, n.end_byte) for n in sorted(nodes,
                                                                       key=lambda n: n.start_byte))
