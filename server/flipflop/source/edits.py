"""Text edits behind the quick fixes: a launch's block (and the grid that must follow it) and a
kernel's `__launch_bounds__`.

Every function is pure: it reads the `SourceFile` (re-parsing its text) and returns either a
`Fix` with non-overlapping edits or a `Refusal` that says why no edit is safe. "Safe" means the
program after the edit launches the new block, still covers the same work, and no other code
that depended on the old value silently changes or silently stays behind.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from tree_sitter import Node, Tree

from flipflop.launch import Dim3, volume
from flipflop.source.coverage import (
    Coverage,
    divisor_value,
    grid_axis_nodes,
    match_coverage,
    numerator_text,
)
from flipflop.source.folding import Binding, FileSymbols, Folder
from flipflop.source.model import Kernel, LaunchSite, Range, SourceFile, TextEdit
from flipflop.source.positions import LineIndex
from flipflop.source.syntax import (
    captures,
    compact,
    expression_children,
    parse_tree,
    strip_parentheses,
    text_of,
)

_BLOCK_LIKE_NAME = re.compile(r"block|thread|cta|^bs$|^nt$|^b$|^tpb$|^n_?threads", re.IGNORECASE)


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...]


@dataclass(frozen=True)
class Refusal:
    reason: str


class _Unsafe(Exception):
    """Raised inside the planners; becomes a Refusal at the public boundary."""


@dataclass(frozen=True)
class _Context:
    index: LineIndex
    # Nodes do not keep their tree alive: the context holds it for as long as they are used.
    tree: Tree
    folder: Folder

    @property
    def root(self) -> Node:
        return self.tree.root_node


def _context(source: SourceFile) -> _Context:
    data = source.text.encode("utf-8")
    tree = parse_tree(data)
    return _Context(LineIndex.of(data), tree, Folder(FileSymbols.collect(tree.root_node)))


def _edit(context: _Context, node: Node, new_text: str) -> TextEdit:
    return TextEdit(context.index.range(node.start_byte, node.end_byte), new_text)


def _insert(context: _Context, byte: int, new_text: str) -> TextEdit:
    return TextEdit(context.index.range(byte, byte), new_text)


def shape_text(block: Dim3, style: str = "dim3(") -> str:
    """`256`, `dim3(32, 8)` or `{32, 8}` for a block, trailing 1s dropped."""
    extents = list(block)
    while len(extents) > 1 and extents[-1] == 1:
        extents.pop()
    inner = ", ".join(str(e) for e in extents)
    if style == "{":
        return f"{{{inner}}}"
    if style == "dim3{":
        return f"dim3{{{inner}}}"
    if style == "(":
        return f"({inner})"
    if len(extents) == 1 and style == "scalar":
        return inner
    return f"dim3({inner})"


# -- launches ------------------------------------------------------------------------------------


def rewrite_launch(source: SourceFile, site: LaunchSite, block: Dim3) -> Fix | Refusal:
    """Make `site` launch `block`, rewriting the grid so the launch still covers its work and
    raising the kernel's `__launch_bounds__` when it would forbid the new block."""
    if not all(e >= 1 for e in block) or volume(block) > 1024:
        return Refusal(f"{block} is not a valid block shape")
    try:
        context = _context(source)
        config = _find_config(context, site)
        edits = _LaunchPlanner(context, source, site, config, block).plan()
    except _Unsafe as unsafe:
        return Refusal(str(unsafe))
    shape = "x".join(str(e) for e in block)
    return Fix(f"Launch {site.kernel} with a {shape} block", tuple(edits))


def _find_config(context: _Context, site: LaunchSite) -> Node:
    found = captures(context.root, "(kernel_call_syntax) @launch").get("launch", [])
    for node in found:
        if (node.start_byte, node.end_byte) == (site.config_range.start_byte,
                                                site.config_range.end_byte):
            return node
    raise _Unsafe("the launch is no longer where the analysis found it")


class _LaunchPlanner:
    def __init__(self, context: _Context, source: SourceFile, site: LaunchSite, config: Node,
                 block: Dim3) -> None:
        self.context = context
        self.folder = context.folder
        self.source = source
        self.site = site
        self.config = config
        self.call = config.parent or config
        self.block = block
        arguments = [c for c in config.named_children if c.type not in ("comment", "ERROR")]
        if len(arguments) < 2:
            raise _Unsafe("the launch has no block argument")
        self.grid_node, self.block_node = arguments[0], arguments[1]
        self.extra_nodes = arguments[2:]
        self.edits: list[TextEdit] = []
        # Names whose declaration we rewrite: grid expressions that use them follow by themselves.
        self.tracked: set[str] = set()
        old = site.block_folded.value
        if old is None:
            raise _Unsafe(f"the current block `{site.block.text}` is not a constant")
        self.old_block: Dim3 = old
        if old == block:
            raise _Unsafe(f"the launch already uses a {self._shape()} block")
        # Code that changes together with this launch: the call and its grid's declarations.
        self.regions = [(self.call.start_byte, self.call.end_byte)] + [
            (d.start_byte, d.end_byte) for d in self._grid_declarations()]

    def _grid_declarations(self) -> list[Node]:
        found = []
        node = strip_parentheses(self.grid_node)
        for _ in range(8):
            if node.type != "identifier":
                break
            binding = self.folder.resolve(node)
            if binding is None or binding.declaration is None or binding.function is None \
                    or binding.value is None:
                break
            found.append(binding.declaration)
            node = strip_parentheses(binding.value)
        return found

    def plan(self) -> list[TextEdit]:
        self._rewrite_block()
        self._rewrite_template_arguments()
        self._rewrite_grid()
        self._raise_launch_bounds()
        return _without_duplicates(self.edits)

    # block

    def _rewrite_block(self) -> None:
        node = strip_parentheses(self.block_node)
        if node.type in ("identifier", "qualified_identifier"):
            binding = self.folder.resolve(node)
            if binding is None:
                raise _Unsafe(f"cannot find where `{text_of(node)}` is defined")
            if binding.kind in ("parameter", "template"):
                raise _Unsafe(f"the block `{binding.name}` is a {binding.kind} of the caller")
            elsewhere = self._uses_elsewhere(binding)
            # The enumerators after it count from its value: an enum is never rewritten.
            if not elsewhere and binding.kind != "enumerator":
                self._rewrite_declaration(binding)
                return
            if self._used_with_launch(binding.name, binding.function is None):
                where = f" and is used at line {elsewhere[0].start_point[0] + 1}" if elsewhere \
                    else ""
                raise _Unsafe(
                    f"`{binding.name}` also sets this launch's arguments or shared memory{where}; "
                    "change it by hand"
                )
            self.edits.append(_edit(self.context, self.block_node, self._block_text("scalar")))
            return
        for identifier in _identifiers(node):
            binding = self.folder.resolve(identifier)
            file_scope = binding is None or binding.function is None
            if self._used_with_launch(text_of(identifier), file_scope):
                raise _Unsafe(
                    f"`{text_of(identifier)}` in the block also sets this launch's arguments or "
                    "shared memory"
                )
        self.edits.append(_edit(self.context, self.block_node, self._block_text(_style(node))))

    def _block_text(self, style: str) -> str:
        if style == "scalar" and (self.block[1], self.block[2]) != (1, 1):
            style = "dim3("
        return shape_text(self.block, style)

    def _rewrite_declaration(self, binding: Binding) -> None:
        if not self.folder.is_stable(binding):
            raise _Unsafe(f"`{binding.name}` is assigned after its declaration")
        value = binding.value
        if binding.kind == "macro":
            self._rewrite_macro(binding.name)
            return
        if value is None:
            raise _Unsafe(f"`{binding.name}` has no initializer")
        for identifier in _identifiers(value):
            inner = self.folder.resolve(identifier)
            if inner is None and text_of(identifier) == "dim3":
                continue
            file_scope = inner is None or inner.function is None
            if self._used_with_launch(text_of(identifier), file_scope):
                raise _Unsafe(f"`{binding.name}` is set from `{text_of(identifier)}`, which the "
                              "kernel or this launch's arguments also use")
        self.tracked.add(binding.name)
        two_d = (self.block[1], self.block[2]) != (1, 1)
        if value.type in ("argument_list", "parameter_list"):
            if not binding.is_dim3 and two_d:
                raise _Unsafe(f"`{binding.name}` is a scalar; a {self._shape()} block needs dim3")
            self.edits.append(_edit(self.context, value,
                                    shape_text(self.block, "(") if binding.is_dim3
                                    else f"({self.block[0]})"))
            return
        if value.type == "initializer_list":
            if not binding.is_dim3 and two_d:
                raise _Unsafe(f"`{binding.name}` is a scalar; a {self._shape()} block needs dim3")
            self.edits.append(_edit(self.context, value, shape_text(self.block, "{")))
            return
        if not binding.is_dim3 and two_d:
            raise _Unsafe(f"`{binding.name}` is a scalar; a {self._shape()} block needs dim3")
        style = _style(strip_parentheses(value)) if binding.is_dim3 else "scalar"
        self.edits.append(_edit(self.context, value, shape_text(self.block, style)))

    def _rewrite_macro(self, name: str) -> None:
        if (self.block[1], self.block[2]) != (1, 1):
            raise _Unsafe(f"the block comes from the macro `{name}`; a {self._shape()} block "
                          "needs dim3")
        definitions = [
            node for node in captures(self.context.root, "(preproc_def) @d").get("d", [])
            if text_of(node.child_by_field_name("name") or node) == name
        ]
        if len(definitions) != 1:
            raise _Unsafe(f"the macro `{name}` is defined {len(definitions)} times")
        value = definitions[0].child_by_field_name("value")
        if value is None:
            raise _Unsafe(f"the macro `{name}` has no value")
        raw = value.text or b""
        start = value.start_byte + (len(raw) - len(raw.lstrip()))
        end = value.end_byte - (len(raw) - len(raw.rstrip()))
        self.tracked.add(name)
        self.edits.append(TextEdit(self.context.index.range(start, end), str(self.block[0])))

    def _shape(self) -> str:
        return "x".join(str(e) for e in self.block)

    def _uses_elsewhere(self, binding: Binding) -> list[Node]:
        """Uses of the binding outside this launch and the launched kernel."""
        scope = binding.function if binding.function is not None else self.context.root
        kernels = [k for k in self.source.kernels if k.name == self.site.kernel]
        result = []
        for use in _identifier_uses(scope, binding.name):
            if binding.name_node is not None and use.start_byte == binding.name_node.start_byte:
                continue
            if use.parent is not None and use.parent.type in ("preproc_def", "preproc_undef"):
                continue
            if binding.kind in ("variable", "constant") and binding.function is not None:
                resolved = self.folder.resolve(use)
                if resolved is None or resolved.name_node is None or binding.name_node is None \
                        or resolved.name_node.start_byte != binding.name_node.start_byte:
                    continue
            if any(start <= use.start_byte and use.end_byte <= end for start, end in self.regions):
                continue
            if binding.function is None and any(
                    k.range.start_byte <= use.start_byte < k.range.end_byte for k in kernels):
                continue
            result.append(use)
        if binding.kind == "macro":
            pattern = re.compile(rf"\b{re.escape(binding.name)}\b")
            result.extend(
                node for node in captures(self.context.root, "(preproc_arg) @v").get("v", [])
                if pattern.search(text_of(node))
            )
        return result

    def _used_with_launch(self, name: str, file_scope: bool) -> bool:
        """Whether `name` also feeds this launch's shared memory, kernel arguments or (for a
        file-scope name) the kernel itself."""
        places = list(self.extra_nodes)
        arguments = self.call.child_by_field_name("arguments")
        if arguments is not None:
            places.append(arguments)
        if any(_identifier_uses(place, name) for place in places):
            return True
        return file_scope and any(
            k.name == self.site.kernel and re.search(rf"\b{re.escape(name)}\b",
                                                     self.source.text[_char_slice(self.source, k)])
            for k in self.source.kernels
        )

    # template arguments that carry the block size

    def _rewrite_template_arguments(self) -> None:
        callee = self.call.child_by_field_name("function")
        arguments = _template_argument_nodes(callee)
        if not arguments:
            return
        kernel = self.source.kernel(self.site.kernel)
        parameters = kernel.template_parameters if kernel is not None else ()
        bounds_names = set(kernel.launch_bounds.unresolved) if kernel and kernel.launch_bounds \
            else set()
        old_values = {self.old_block[0]: self.block[0], volume(self.old_block): volume(self.block)}
        if volume(self.old_block) == self.old_block[0] and volume(self.block) != self.block[0]:
            # The old block was 1-D: a template argument equal to it could mean either the
            # x extent or the thread count of the new block.
            old_values[self.old_block[0]] = -1
        for position, node in enumerate(arguments):
            if self._tracks(node):
                continue
            value = self.folder.scalar(node).value if node.type != "type_descriptor" else None
            if value is None or value not in old_values or value == 1:
                continue
            name = parameters[position].name if position < len(parameters) else ""
            if name in bounds_names or _BLOCK_LIKE_NAME.search(name or ""):
                if node.type != "number_literal" or old_values[value] < 0:
                    raise _Unsafe(f"template argument `{text_of(node)}` sets the block size; "
                                  "change it by hand")
                self.edits.append(_edit(self.context, node, str(old_values[value])))
            else:
                raise _Unsafe(f"template argument {text_of(node)} equals the block size and may "
                              "depend on it")

    # grid

    def _rewrite_grid(self) -> None:
        grid = strip_parentheses(self.grid_node)
        if grid.type == "identifier":
            binding = self.folder.resolve(grid)
            if binding is not None and binding.kind in ("variable", "constant") \
                    and self._uses_elsewhere(binding):
                axes = grid_axis_nodes(self.grid_node, self.folder)
                if any(self._axis_edits(axis, index)
                       for index, axis in enumerate(axes)):
                    raise _Unsafe(f"the grid `{binding.name}` is used elsewhere too")
        for index, axis in enumerate(grid_axis_nodes(self.grid_node, self.folder)):
            self.edits.extend(self._axis_edits(axis, index))

    def _axis_edits(self, axis: Node | None, index: int) -> list[TextEdit]:
        old, new = self.old_block[index], self.block[index]
        if axis is None:
            return []
        coverage = match_coverage(axis, self.folder)
        if coverage is not None and not self._divides_by_block(coverage, index) \
                and self._divides_by_multiple(coverage, index) and not self._tracks(
                    coverage.divisor) and old != new:
            raise _Unsafe(f"grid `{text_of(coverage.expression)}` divides by a multiple of the "
                          "block; this fix cannot tell whether that follows the block")
        if coverage is None or not self._divides_by_block(coverage, index):
            if self._mentions_block(axis):
                raise _Unsafe(f"grid `{text_of(axis)}` depends on the block in a way this fix "
                              "cannot rewrite")
            return []
        if old == new:
            return []
        # A new extent of 1 still gets the division form (`(n + 0) / 1`): the launch then keeps
        # reading as "covers n", which the next analysis needs.
        tracks = self._tracks(coverage.divisor)
        if coverage.form == "floor" and not (old % new == 0):
            raise _Unsafe(f"grid `{text_of(coverage.expression)}` rounds down; covering the same "
                          f"work with {new} needs the count to be a multiple of {new}")
        if coverage.form == "shift":
            return self._shift_edits(coverage, new, tracks)
        edits: list[TextEdit] = []
        if not tracks:
            edits.append(_edit(self.context, coverage.divisor, str(new)))
        if coverage.divisor_copy is not None and not self._tracks(coverage.divisor_copy):
            edits.append(_edit(self.context, coverage.divisor_copy, str(new)))
        if coverage.constant is not None:
            edits.append(_edit(self.context, coverage.constant, str(new - 1)))
        return edits

    def _shift_edits(self, coverage: Coverage, new: int, tracks: bool) -> list[TextEdit]:
        if new & (new - 1) == 0 and not tracks:
            edits = [_edit(self.context, coverage.divisor, str(new.bit_length() - 1))]
            if coverage.constant is not None:
                edits.append(_edit(self.context, coverage.constant, str(new - 1)))
            if coverage.divisor_copy is not None and not self._tracks(coverage.divisor_copy):
                edits.append(_edit(self.context, coverage.divisor_copy, str(new)))
            return edits
        numerator = numerator_text(coverage.numerator)
        return [_edit(self.context, coverage.expression, f"({numerator} + {new - 1}) / {new}")]

    def _divides_by_block(self, coverage: Coverage, index: int) -> bool:
        value = divisor_value(coverage, self.folder)
        if value is not None:
            return value == self.old_block[index]
        return self._mentions_block(coverage.divisor)

    def _divides_by_multiple(self, coverage: Coverage, index: int) -> bool:
        value = divisor_value(coverage, self.folder)
        old = self.old_block[index]
        return value is not None and old > 1 and value % old == 0

    def _mentions_block(self, node: Node) -> bool:
        block = compact(text_of(strip_parentheses(self.block_node)))
        return any(compact(text_of(i)) == block for i in _identifiers(node))

    def _tracks(self, node: Node) -> bool:
        return any(text_of(i) in self.tracked for i in _identifiers(node)) or (
            node.type == "identifier" and text_of(node) in self.tracked)

    # launch bounds

    def _raise_launch_bounds(self) -> None:
        kernel = self.source.kernel(self.site.kernel)
        if kernel is None or kernel.launch_bounds is None:
            return
        bounds = kernel.launch_bounds
        threads = volume(self.block)
        if bounds.max_threads is None:
            template_names = {p.name for p in kernel.template_parameters}
            if set(bounds.unresolved) <= template_names and self._template_rewritten():
                return
            raise _Unsafe(f"cannot check `__launch_bounds__({', '.join(bounds.arguments)})` "
                          f"against {threads} threads")
        if bounds.max_threads >= threads:
            return
        fix = set_launch_bounds(self.source, kernel, threads, bounds.min_blocks)
        if isinstance(fix, Refusal):
            raise _Unsafe(fix.reason)
        self.edits.extend(fix.edits)

    def _template_rewritten(self) -> bool:
        callee = self.call.child_by_field_name("function")
        spans = {(e.range.start_byte, e.range.end_byte) for e in self.edits}
        return any((n.start_byte, n.end_byte) in spans for n in _template_argument_nodes(callee))


# -- launch bounds -------------------------------------------------------------------------------


def set_launch_bounds(source: SourceFile, kernel: Kernel | str, max_threads: int,
                      min_blocks: int | None = None) -> Fix | Refusal:
    """Insert or update `__launch_bounds__(max_threads[, min_blocks])` on a kernel.

    Without `min_blocks`, an existing second (and third) argument is kept. Bounds written with a
    template parameter, or through a macro other kernels share, are not touched.
    """
    found = source.kernel(kernel) if isinstance(kernel, str) else kernel
    if found is None:
        return Refusal(f"no kernel named {kernel}")
    if not 1 <= max_threads <= 1024:
        return Refusal(f"{max_threads} threads is not a valid block size")
    bounds = found.launch_bounds
    arguments = [str(max_threads)]
    if min_blocks is not None:
        arguments.append(str(min_blocks))
    elif bounds is not None:
        arguments.extend(bounds.arguments[1:])
    text = f"__launch_bounds__({', '.join(arguments)})"
    title = f"Set {text} on {found.name}"
    if bounds is None:
        edit = TextEdit(_empty_range(source, found.bounds_insert_byte), f"{text} ")
        return Fix(title, (edit,))
    template_names = {p.name for p in found.template_parameters}
    if set(bounds.unresolved) & template_names:
        return Refusal(f"`__launch_bounds__({', '.join(bounds.arguments)})` follows a template "
                       "parameter")
    if bounds.macro is not None:
        users = [k for k in source.kernels
                 if k.launch_bounds is not None and k.launch_bounds.macro == bounds.macro]
        if len(users) > 1:
            return Refusal(f"the macro `{bounds.macro}` sets the bounds of {len(users)} kernels")
    return Fix(title, (TextEdit(bounds.range, text),))


def _empty_range(source: SourceFile, byte: int) -> Range:
    index = LineIndex.of(source.text.encode("utf-8"))
    return index.range(byte, byte)


# -- helpers -------------------------------------------------------------------------------------


def _style(node: Node) -> str:
    if node.type == "call_expression":
        return "dim3("
    if node.type == "initializer_list":
        return "{"
    if node.type == "compound_literal_expression":
        return "dim3{"
    return "scalar"


def _identifiers(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("identifier", "type_identifier"):
            found.append(current)
        stack.extend(current.named_children)
    return found


def _identifier_uses(scope: Node, name: str) -> list[Node]:
    short = name.rsplit("::", 1)[-1]
    escaped = short.replace("\\", "\\\\").replace('"', '\\"')
    return captures(scope, f'((identifier) @use (#eq? @use "{escaped}"))').get("use", [])


def _template_argument_nodes(callee: Node | None) -> list[Node]:
    node = callee
    while node is not None and node.type == "qualified_identifier":
        node = node.child_by_field_name("name")
    if node is None or node.type != "template_function":
        return []
    arguments = node.child_by_field_name("arguments")
    return expression_children(arguments) if arguments is not None else []


def _char_slice(source: SourceFile, kernel: Kernel) -> slice:
    data = source.text.encode("utf-8")
    start = len(data[: kernel.range.start_byte].decode("utf-8", errors="replace"))
    end = start + len(data[kernel.range.start_byte: kernel.range.end_byte]
                      .decode("utf-8", errors="replace"))
    return slice(start, end)


def _without_duplicates(edits: list[TextEdit]) -> list[TextEdit]:
    unique: dict[tuple[int, int], TextEdit] = {}
    for edit in edits:
        key = (edit.range.start_byte, edit.range.end_byte)
        if key in unique and unique[key].new_text != edit.new_text:
            raise _Unsafe("two rewrites of the same text disagree")
        unique[key] = edit
    ordered = sorted(unique.values(), key=lambda e: e.range.start_byte)
    for first, second in itertools.pairwise(ordered):
        if first.range.end_byte > second.range.start_byte:
            raise _Unsafe("the rewrites overlap")
    return ordered
