"""What a kernel's source says about its block shape, read with tree-sitter.

One walk over the kernel's body (and the bodies of the device functions of the same file that it
calls) collects the facts the rules in `flipflop.constraints.infer` need: where `threadIdx` and
`blockDim` are read, shared arrays indexed by the thread index, tests of the thread index against
constants, explicit checks on `blockDim`, reductions that halve a stride from `blockDim`,
full-mask warp intrinsics, block-level library primitives and cooperative-groups tiles. Values are
folded with the instance's compile-time parameters (`flipflop.constraints.values`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from tree_sitter import Node

from flipflop.constraints.values import Evaluator, Value
from flipflop.source.folding import Folder
from flipflop.source.syntax import (
    ancestors,
    captures,
    declarator_name,
    expression_children,
    function_name,
    strip_parentheses,
    text_of,
)

Axis3 = str  # "x", "y" or "z"
# `_Reader.thread_axis` or `_Reader.dim_axis`: the builtin axis a node stands for.
_AxisOf = Callable[[Node], "str | None"]

_BUILTIN_AXES = ("x", "y", "z")
_COMPARISONS = frozenset(("==", "!=", "<", "<=", ">", ">="))
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATED = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
# Warp intrinsics whose first argument is the mask of lanes that take part (CUDA C++
# Programming Guide, "Warp Shuffle Functions", "Warp Vote Functions", "Warp Match Functions",
# "Warp Reduce Functions"): a full mask names all 32 lanes of every warp.
_MASKED_WARP_INTRINSICS = frozenset((
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
    "__all_sync", "__any_sync", "__uni_sync", "__match_any_sync", "__match_all_sync",
    "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
    "__reduce_or_sync", "__reduce_xor_sync",
))
_FULL_MASK = 0xFFFFFFFF
# CUB's block-level primitives and the positions of BlockDimX, BlockDimY and BlockDimZ in their
# template parameter lists (NVIDIA CCCL, cub/block/block_*.cuh). Each requires the thread block
# to be exactly BlockDimX × BlockDimY × BlockDimZ (their linear thread rank is computed from
# those extents, not from blockDim).
CUB_BLOCK_DIMS: dict[str, tuple[int, int, int]] = {
    "BlockReduce": (1, 3, 4), "BlockScan": (1, 3, 4), "BlockLoad": (1, 4, 5),
    "BlockStore": (1, 4, 5), "BlockExchange": (1, 4, 5), "BlockRadixSort": (1, 8, 9),
    "BlockHistogram": (1, 5, 6), "BlockDiscontinuity": (1, 2, 3),
    "BlockAdjacentDifference": (1, 2, 3), "BlockShuffle": (1, 2, 3), "BlockMergeSort": (1, 4, 5),
    "BlockRunLengthDecode": (1, 4, 5),
}  # fmt: skip
_ASSERT_NAME = re.compile(r"^(assert|\w*_ASSERT|\w*Assert)$")
_TRAPS = frozenset(("__trap", "abort", "__brkpt"))
# Names people give a compile-time block size (`BLOCK_SIZE`, `blockSize`, `kThreads`, `TPB`).
BLOCK_SIZE_NAME = re.compile(
    r"^(k_?)?(block_?size|block_?dim|block_?threads|threads_?per_?block|n_?threads|"
    r"num_?threads|threads|block|tpb|cta_?size|nthreads)(_?[xyz])?$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SharedBound:
    """A shared array indexed by the thread index: the block extent that keeps it in bounds."""

    axis: Axis3
    bound: int  # the largest block extent that stays inside the array
    parameters: tuple[str, ...]
    array: str  # `tile[18][18]` as declared
    declared_line: int
    line: int


@dataclass(frozen=True)
class ThreadTest:
    """`threadIdx.x == 15`: a thread singled out by a constant."""

    axis: Axis3
    value: int
    parameters: tuple[str, ...]
    text: str
    line: int


@dataclass(frozen=True)
class Check:
    """What an assert or an early return on `blockDim` requires: `blockDim.x == 32`."""

    axis: str  # "x", "y", "z" or "threads"
    relation: str  # "==", "<=", ">=", "multiple", "pow2"
    value: int | None
    parameters: tuple[str, ...]
    text: str
    line: int


@dataclass(frozen=True)
class LibraryShape:
    """A block-level library primitive with a compile-time thread count."""

    name: str  # `cub::BlockReduce<float, 256>` as written
    shape: tuple[int, int, int]
    parameters: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class TileSize:
    """`cg::tiled_partition<16>(block)`: the block must split into whole tiles."""

    size: int
    parameters: tuple[str, ...]
    text: str
    line: int


@dataclass(frozen=True)
class NamedParameter:
    """A compile-time parameter named like a block size and used in the kernel's body."""

    name: str
    value: int
    line: int


@dataclass(frozen=True)
class KernelCode:
    """The block-shape facts of one kernel instance's source (1-based lines)."""

    thread_uses: Mapping[Axis3, tuple[int, ...]] = field(default_factory=dict)
    block_dim_uses: Mapping[Axis3, tuple[int, ...]] = field(default_factory=dict)
    # Every builtin the source names, however it is used: "threadIdx.y", "blockDim.x", ...
    builtins: frozenset[str] = frozenset()
    shared_bounds: tuple[SharedBound, ...] = ()
    thread_tests: tuple[ThreadTest, ...] = ()
    checks: tuple[Check, ...] = ()
    unreadable_checks: tuple[tuple[str, int], ...] = ()
    halving_loops: tuple[tuple[Axis3, str, int], ...] = ()  # axis, loop header, line
    full_mask_lines: tuple[int, ...] = ()
    libraries: tuple[LibraryShape, ...] = ()
    tiles: tuple[TileSize, ...] = ()
    named_parameters: tuple[NamedParameter, ...] = ()
    # Axes whose every use of the thread index sits under a bound (`if (threadIdx.x < n)`):
    # the largest constant bound, or None when one is known only at run time.
    guarded_axes: Mapping[Axis3, int | None] = field(default_factory=dict)
    # `threadIdx.x / BLOCKSIZE`, `threadIdx.x % (BN / TN)`: the thread index split by a
    # compile-time parameter (the parameter ties the block to itself).
    parameter_splits: tuple[ThreadTest, ...] = ()
    asm_lines: tuple[int, ...] = ()
    unreadable_lines: tuple[int, ...] = ()  # syntax errors that hide thread-index code


def read_kernel(
    root: Node, kernel: Node, folder: Folder, env: Mapping[str, int]
) -> KernelCode:
    """The facts of `kernel` (a `function_definition`) with compile-time parameters `env`."""
    reader = _Reader(root, folder, Evaluator(folder, env), env)
    bodies = [kernel, *reader.callees(kernel)]
    for body in bodies:
        reader.aliases_of(body)
    for body in bodies:
        reader.read(body)
    reader.read_file_types()
    return reader.result()


def line(node: Node) -> int:
    return node.start_point[0] + 1


class _Reader:
    def __init__(self, root: Node, folder: Folder, evaluator: Evaluator,
                 env: Mapping[str, int]) -> None:
        self.root = root
        self.folder = folder
        self.values = evaluator
        self.env = env
        self.thread_alias: dict[str, Axis3] = {}
        self.dim_alias: dict[str, Axis3] = {}
        self.thread_uses: dict[Axis3, list[int]] = {}
        # Per axis: the guard bound of every use so far (None: a bound known at run time only;
        # the axis leaves the map at its first unguarded use).
        self.guards: dict[Axis3, list[int | None]] = {}
        self.unguarded: set[Axis3] = set()
        self.dim_uses: dict[Axis3, list[int]] = {}
        self.builtins: set[str] = set()
        self.shared: dict[str, tuple[list[Value | None], str, int]] = {}
        self.bounds: list[SharedBound] = []
        self.tests: list[ThreadTest] = []
        self.splits: list[ThreadTest] = []
        self.checks: list[Check] = []
        self.unreadable: list[tuple[str, int]] = []
        self.halving: list[tuple[Axis3, str, int]] = []
        self.full_mask: list[int] = []
        self.libraries: list[LibraryShape] = []
        self.tiles: list[TileSize] = []
        self.named: dict[str, NamedParameter] = {}
        self.asm: list[int] = []
        self.errors: list[int] = []
        self.type_names: set[str] = set()
        self._file_shared()

    # -- what the kernel reaches ------------------------------------------------------------

    def callees(self, kernel: Node) -> list[Node]:
        """Device functions of this file that the kernel calls, directly or not (by name)."""
        definitions: dict[str, Node] = {}
        for function in captures(self.root, "(function_definition) @f").get("f", []):
            name = function_name(function)
            if name is not None and function.start_byte != kernel.start_byte:
                definitions.setdefault(name.rsplit("::", 1)[-1], function)
        found: list[Node] = []
        pending = [kernel]
        seen = {kernel.start_byte}
        while pending and len(found) < 32:
            current = pending.pop()
            for node in _walk(current):
                if node.type != "call_expression":
                    continue
                callee = node.child_by_field_name("function")
                if callee is None:
                    continue
                if callee.type == "template_function":
                    callee = callee.child_by_field_name("name") or callee
                name = text_of(callee).rsplit("::", 1)[-1]
                target = definitions.get(name)
                if target is not None and target.start_byte not in seen:
                    seen.add(target.start_byte)
                    found.append(target)
                    pending.append(target)
        return found

    def _file_shared(self) -> None:
        for node in self.root.named_children:
            if node.type == "declaration" and _is_shared(node):
                self._declare_shared(node)

    # -- aliases ---------------------------------------------------------------------------

    def aliases_of(self, function: Node) -> None:
        """`int tx = threadIdx.x;`, `const unsigned bs = blockDim.x;`: names that stand for a
        builtin and are never written again."""
        assigned = self.folder.assigned_names(function)
        for node in _walk(function):
            if node.type != "init_declarator":
                continue
            name = declarator_name(node.child_by_field_name("declarator"))
            value = node.child_by_field_name("value")
            if name is None or value is None or text_of(name) in assigned:
                continue
            builtin = _builtin(_unwrap(value))
            if builtin is None:
                continue
            kind, axis = builtin
            (self.thread_alias if kind == "threadIdx" else self.dim_alias)[text_of(name)] = axis

    def thread_axis(self, node: Node) -> Axis3 | None:
        node = _unwrap(node)
        builtin = _builtin(node)
        if builtin is not None:
            return builtin[1] if builtin[0] == "threadIdx" else None
        if node.type == "identifier":
            return self.thread_alias.get(text_of(node))
        return None

    def dim_axis(self, node: Node) -> Axis3 | None:
        node = _unwrap(node)
        builtin = _builtin(node)
        if builtin is not None:
            return builtin[1] if builtin[0] == "blockDim" else None
        if node.type == "identifier":
            return self.dim_alias.get(text_of(node))
        return None

    # -- the walk --------------------------------------------------------------------------

    def live(self, node: Node) -> Iterator[Node]:
        """The nodes under `node`, without the branches of an `if` whose condition the
        instance's constants decide (`if (blockSize >= 512)` in a 256-thread instance)."""
        stack = [node]
        while stack:
            current = stack.pop()
            yield current
            children = current.named_children
            if current.type == "if_statement":
                condition = current.child_by_field_name("condition")
                items = expression_children(condition) if condition is not None else []
                decided = self.values.value(items[-1]) if items else None
                if decided is not None:
                    dead = current.child_by_field_name(
                        "consequence" if decided.number == 0 else "alternative")
                    children = [c for c in children
                                if dead is None or c.start_byte != dead.start_byte
                                or c.end_byte != dead.end_byte]
            stack.extend(reversed(children))

    def read(self, function: Node) -> None:
        for node in self.live(function):
            kind = node.type
            if kind == "field_expression":
                builtin = _builtin(node)
                if builtin is not None:
                    self._builtin_use(node, builtin)
            elif kind == "declaration" and _is_shared(node):
                self._declare_shared(node)
            elif kind == "subscript_expression" and (
                    node.parent is None or node.parent.type != "subscript_expression"
                    or node.parent.child_by_field_name("argument") != node):
                self._subscript(node)
            elif kind == "binary_expression":
                self._thread_test(node)
            elif kind == "call_expression":
                self._call(node)
            elif kind == "if_statement":
                self._early_exit(node)
            elif kind in ("for_statement", "while_statement"):
                self._halving(node)
            elif kind == "template_type":
                self._library(node)
            elif kind == "template_function":
                self._tile(node)
            elif kind in ("type_identifier", "namespace_identifier"):
                self.type_names.add(text_of(node))
            elif kind == "identifier":
                self._parameter_use(node)
            elif kind == "gnu_asm_expression":
                if re.search(r"%%?n?tid\b|%%?n?tid\.", text_of(node)):
                    self.asm.append(line(node))
            elif kind == "ERROR" and re.search(r"threadIdx|blockDim", text_of(node)):
                self.errors.append(line(node))

    def read_file_types(self) -> None:
        """File-scope `typedef`/`using` of library primitives that the kernel names."""
        for node in _walk(self.root):
            if node.type not in ("type_definition", "alias_declaration"):
                continue
            if any(a.type in ("function_definition", "lambda_expression")
                   for a in ancestors(node)):
                continue  # another function's local type
            declared = node.child_by_field_name("declarator") or node.child_by_field_name("name")
            if declared is None or text_of(declared) not in self.type_names:
                continue
            for inner in _walk(node):
                if inner.type == "template_type":
                    self._library(inner)

    def _builtin_use(self, node: Node, builtin: tuple[str, Axis3]) -> None:
        kind, axis = builtin
        self.builtins.add(f"{kind}.{axis}")
        if kind == "blockDim":
            self.dim_uses.setdefault(axis, []).append(line(node))
        elif kind == "threadIdx" and not self._zero_test(node) and not self._alias_value(node):
            self._thread_use(node, axis)

    def _thread_use(self, node: Node, axis: Axis3) -> None:
        if self._compared(node):
            return  # a test (`threadIdx.x < n`) chooses threads; it indexes nothing
        self.thread_uses.setdefault(axis, []).append(line(node))
        if axis in self.unguarded:
            return
        bounds = self._guard_bounds(node, axis)
        if not bounds:
            self.unguarded.add(axis)
            self.guards.pop(axis, None)
            return
        known = [b for b in bounds if b is not None]
        self.guards.setdefault(axis, []).append(min(known) if known else None)

    def _compared(self, node: Node) -> bool:
        parent = node.parent
        while parent is not None and parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
            parent = parent.parent
        return parent is not None and parent.type == "binary_expression" and text_of(
            parent.child_by_field_name("operator") or parent) in _COMPARISONS

    def _alias_value(self, node: Node) -> bool:
        """The `threadIdx.x` of `int tx = threadIdx.x;`: the alias's uses are what count."""
        parent = node.parent
        while parent is not None and parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
            parent = parent.parent
        if parent is None or parent.type != "init_declarator":
            return False
        name = declarator_name(parent.child_by_field_name("declarator"))
        return name is not None and text_of(name) in self.thread_alias

    def _parameter_use(self, node: Node) -> None:
        name = text_of(node)
        parent = node.parent
        if parent is not None and parent.type in ("init_declarator", "parameter_declaration"):
            return
        if name in self.thread_alias and not self._zero_test(node):
            self._thread_use(node, self.thread_alias[name])
        elif name in self.dim_alias:
            self.dim_uses.setdefault(self.dim_alias[name], []).append(line(node))
        if name in self.env and BLOCK_SIZE_NAME.match(name) and name not in self.named:
            self.named[name] = NamedParameter(name, self.env[name], line(node))

    def _zero_test(self, node: Node) -> bool:
        """`threadIdx.x == 0`, `!threadIdx.x`: one thread chosen, whatever the block."""
        parent = node.parent
        while parent is not None and parent.type in ("parenthesized_expression",
                                                     "cast_expression"):
            parent = parent.parent
        if parent is None:
            return False
        if parent.type == "unary_expression" and text_of(
                parent.child_by_field_name("operator") or parent) == "!":
            return True
        if parent.type != "binary_expression":
            return False
        operator = text_of(parent.child_by_field_name("operator") or parent)
        other = parent.child_by_field_name("right")
        if other is not None and other.start_byte <= node.start_byte < other.end_byte:
            other = parent.child_by_field_name("left")
        value = self.values.value(other) if other is not None else None
        return operator in ("==", "!=") and value is not None and value.number == 0

    # -- shared arrays ---------------------------------------------------------------------

    def _declare_shared(self, declaration: Node) -> None:
        for declarator in declaration.children_by_field_name("declarator"):
            extents: list[Value | None] = []
            node: Node | None = declarator
            while node is not None and node.type == "array_declarator":
                size = node.child_by_field_name("size")
                extents.insert(0, self.values.value(size) if size is not None else None)
                node = node.child_by_field_name("declarator")
            name = declarator_name(declarator)
            if name is None or not extents:
                continue
            shown = text_of(name) + "".join(
                f"[{e.number}]" if e is not None else "[]" for e in extents)
            self.shared[text_of(name)] = (extents, shown, line(declaration))

    def _subscript(self, outer: Node) -> None:
        indices: list[Node] = []
        node: Node | None = outer
        while node is not None and node.type == "subscript_expression":
            arguments = node.child_by_field_name("indices") or node.child_by_field_name("index")
            items = expression_children(arguments) if arguments is not None else []
            indices.insert(0, items[0] if items else node)
            node = node.child_by_field_name("argument")
        if node is None or node.type != "identifier" or text_of(node) not in self.shared:
            return
        extents, shown, declared = self.shared[text_of(node)]
        if len(indices) != len(extents):
            return
        for index, extent in zip(indices, extents, strict=True):
            if extent is None:
                continue
            found = self._thread_index(index)
            if found is None:
                continue
            axis, offset, multiplier = found
            guard = self._guard(outer, axis)
            if multiplier < 0:  # `tid / d`: threads up to d·E − 1 stay inside
                if guard is not None and (guard - 1) // -multiplier < extent.number:
                    continue
                bound = extent.number * -multiplier
            else:
                if guard is not None and guard - 1 + offset < extent.number:
                    continue
                bound = (extent.number - offset) // (multiplier + 1)
            self.bounds.append(SharedBound(axis, bound, extent.parameters, shown, declared,
                                           line(outer)))

    def _thread_index(self, index: Node) -> tuple[Axis3, int, int] | None:
        """`tx`, `threadIdx.x + 1`, `tid + blockDim.x`: the axis, the constant offset and how
        many block extents are added (None for any other form). `tid / 32` counts as the axis
        divided: its offset is negative (see `_divided_index`)."""
        divided = self._divided_index(index)
        if divided is not None:
            return divided
        terms: list[tuple[int, Node]] = []
        if not _sum_terms(_unwrap(index), 1, terms):
            return None
        axis: Axis3 | None = None
        offset = multiplier = 0
        for sign, term in terms:
            thread = self.thread_axis(term)
            if thread is not None:
                if axis is not None or sign < 0:
                    return None
                axis = thread
                continue
            scaled = self._block_multiple(term)
            if scaled is not None:
                multiplier += sign * scaled[1]
                continue
            value = self.values.value(term)
            if value is None:
                return None
            offset += sign * value.number
        if axis is None or multiplier < 0:
            return None
        return axis, offset, multiplier

    def _divided_index(self, index: Node) -> tuple[Axis3, int, int] | None:
        """`threadIdx.x / 32` indexes an array of E entries up to block.x <= 32·E: returned as
        an offset and multiplier that give that bound in `_subscript` ((E − off) // (m + 1))."""
        node = _unwrap(index)
        if node.type != "binary_expression" or text_of(
                node.child_by_field_name("operator") or node) not in ("/", ">>"):
            return None
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        axis = self.thread_axis(left) if left is not None else None
        value = self.values.value(right) if right is not None else None
        if axis is None or value is None or value.number <= 0:
            return None
        divisor = value.number if text_of(node.child_by_field_name("operator") or node) == "/" \
            else 1 << value.number
        return axis, 0, -divisor

    def _block_multiple(self, term: Node) -> tuple[Axis3, int] | None:
        term = _unwrap(term)
        axis = self.dim_axis(term)
        if axis is not None:
            return axis, 1
        if term.type == "binary_expression" and text_of(
                term.child_by_field_name("operator") or term) == "*":
            left, right = term.child_by_field_name("left"), term.child_by_field_name("right")
            for dim, factor in ((left, right), (right, left)):
                if dim is None or factor is None:
                    continue
                axis = self.dim_axis(dim)
                value = self.values.value(factor)
                if axis is not None and value is not None:
                    return axis, value.number
        return None

    def _guard(self, node: Node, axis: Axis3) -> int | None:
        """The exclusive constant bound on the thread index that the code around `node`
        guarantees (`if (tx < 16)`, `if (tx == 15)`, an earlier `if (tx >= 16) return;`)."""
        known = [b for b in self._guard_bounds(node, axis) if b is not None]
        return min(known) if known else None

    def _guard_bounds(self, node: Node, axis: Axis3) -> list[int | None]:
        """Every bound on the thread index around `node`: a constant, or None for one known
        only at run time (`if (threadIdx.x < width)`)."""
        bounds: list[int | None] = []
        child = node
        for ancestor in ancestors(node):
            if ancestor.type == "if_statement":
                consequence = ancestor.child_by_field_name("consequence")
                condition = ancestor.child_by_field_name("condition")
                if consequence is not None and condition is not None and \
                        consequence.start_byte <= child.start_byte < consequence.end_byte:
                    bounds.extend(self._condition_bounds(condition, axis, negate=False))
            if ancestor.type == "compound_statement":
                for statement in ancestor.named_children:
                    if statement.start_byte >= child.start_byte:
                        break
                    if statement.type == "if_statement" and _exits(statement):
                        condition = statement.child_by_field_name("condition")
                        if condition is not None:
                            bounds.extend(self._condition_bounds(condition, axis, negate=True))
            if ancestor.type in ("function_definition", "lambda_expression"):
                break
            child = ancestor
        return bounds

    def _condition_bounds(self, condition: Node, axis: Axis3, *, negate: bool
                          ) -> list[int | None]:
        bounds: list[int | None] = []
        parts = _disjuncts(condition) if negate else _conjuncts(condition)
        for part in parts:
            part = _unwrap(part)
            if part.type != "binary_expression":
                continue
            operator = text_of(part.child_by_field_name("operator") or part)
            left, right = part.child_by_field_name("left"), part.child_by_field_name("right")
            if operator not in _COMPARISONS or left is None or right is None:
                continue
            if self.thread_axis(left) == axis:
                other = right
            elif self.thread_axis(right) == axis:
                other, operator = left, _FLIPPED[operator]
            else:
                continue
            operator = _NEGATED[operator] if negate else operator
            value = self.values.value(other)
            if operator == "<":
                bounds.append(value.number if value is not None else None)
            elif operator in ("<=", "=="):
                bounds.append(value.number + 1 if value is not None else None)
        return bounds

    def _relation(self, node: Node, axis_of: _AxisOf) -> tuple[Axis3, str, Value] | None:
        """`tx < 16` or `16 > tx` as (axis, "<", 16)."""
        node = _unwrap(node)
        if node.type != "binary_expression":
            return None
        operator = text_of(node.child_by_field_name("operator") or node)
        if operator not in _COMPARISONS:
            return None
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return None
        axis = axis_of(left)
        if axis is not None:
            value = self.values.value(right)
            return (axis, operator, value) if value is not None else None
        axis = axis_of(right)
        if axis is not None:
            value = self.values.value(left)
            return (axis, _FLIPPED[operator], value) if value is not None else None
        return None

    # -- tests, checks, loops ----------------------------------------------------------------

    def _thread_test(self, node: Node) -> None:
        operator = text_of(node.child_by_field_name("operator") or node)
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if operator in ("/", "%") and left is not None and right is not None:
            axis = self.thread_axis(left)
            value = self.values.value(right) if axis is not None else None
            if axis is not None and value is not None and value.parameters:
                self.splits.append(ThreadTest(axis, value.number, value.parameters,
                                              " ".join(text_of(node).split()), line(node)))
            return
        relation = self._relation(node, self.thread_axis)
        if relation is None:
            return
        axis, operator, value = relation
        if operator == "==" and value.number >= 1:
            self.tests.append(ThreadTest(axis, value.number, value.parameters,
                                         " ".join(text_of(node).split()), line(node)))

    def _call(self, node: Node) -> None:
        callee = node.child_by_field_name("function")
        arguments = node.child_by_field_name("arguments")
        if callee is None:
            return
        name = text_of(callee).rsplit("::", 1)[-1]
        items = expression_children(arguments) if arguments is not None else []
        if _ASSERT_NAME.match(name) and items:
            self._check(items[0], negate=False, at=node)
        elif name in _MASKED_WARP_INTRINSICS and items:
            mask = self.values.value(items[0])
            if mask is not None and mask.number & _FULL_MASK == _FULL_MASK:
                self.full_mask.append(line(node))
        elif name == "__syncwarp" and (not items or (
                (mask := self.values.value(items[0])) is not None
                and mask.number & _FULL_MASK == _FULL_MASK)):
            self.full_mask.append(line(node))

    def _early_exit(self, node: Node) -> None:
        condition = node.child_by_field_name("condition")
        if condition is None or not _exits(node) or not self._mentions_dim(condition):
            return
        self._check(condition, negate=True, at=node)

    def _check(self, condition: Node, *, negate: bool, at: Node) -> None:
        """An assert (the condition must hold) or an early exit (it must not)."""
        if not self._mentions_dim(condition):
            return
        parts = _disjuncts(condition) if negate else _conjuncts(condition)
        for part in parts:
            check = self._read_check(part, negate)
            if check is None:
                if self._mentions_dim(part):
                    self.unreadable.append((" ".join(text_of(part).split()), line(at)))
                continue
            self.checks.append(Check(check[0], check[1], check[2], check[3],
                                     " ".join(text_of(part).split()), line(at)))

    def _read_check(self, part: Node, negate: bool
                    ) -> tuple[str, str, int | None, tuple[str, ...]] | None:
        relation = self._relation(part, self._dim_or_threads)
        if relation is not None:
            axis, operator, value = relation
            operator = _NEGATED[operator] if negate else operator
            if operator == "!=":
                return None
            return axis, operator, value.number, value.parameters
        node = _unwrap(part)
        # `blockDim.x % 32 == 0` (or `!= 0` in an early exit).
        if node.type == "binary_expression":
            operator = text_of(node.child_by_field_name("operator") or node)
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            zero = self.values.value(right) if right is not None else None
            inner = _unwrap(left) if left is not None else None
            if zero is None or zero.number != 0 or inner is None \
                    or inner.type != "binary_expression":
                return None
            wanted = "==" if not negate else "!="
            if operator != wanted:
                return None
            inner_operator = text_of(inner.child_by_field_name("operator") or inner)
            dim, other = inner.child_by_field_name("left"), inner.child_by_field_name("right")
            dim_axis = self._dim_or_threads(dim) if dim is not None else None
            if dim_axis is None or other is None:
                return None
            if inner_operator == "%":
                divisor = self.values.value(other)
                if divisor is not None and divisor.number > 0:
                    return dim_axis, "multiple", divisor.number, divisor.parameters
            if inner_operator == "&" and self._is_minus_one_of(other, dim):
                return dim_axis, "pow2", None, ()
        return None

    def _is_minus_one_of(self, node: Node, dim: Node | None) -> bool:
        node = _unwrap(node)
        if dim is None or node.type != "binary_expression" or text_of(
                node.child_by_field_name("operator") or node) != "-":
            return False
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        one = self.values.value(right) if right is not None else None
        return left is not None and one is not None and one.number == 1 and \
            "".join(text_of(_unwrap(left)).split()) == "".join(text_of(_unwrap(dim)).split())

    def _dim_or_threads(self, node: Node) -> str | None:
        """An axis for `blockDim.x`, "threads" for `blockDim.x * blockDim.y (* blockDim.z)`."""
        axis = self.dim_axis(node)
        if axis is not None:
            return axis
        factors: list[Node] = []
        if _product_factors(_unwrap(node), factors) and len(factors) > 1:
            axes = [self.dim_axis(f) for f in factors]
            if None not in axes and len(set(axes)) == len(axes):
                return "threads"
        return None

    def _mentions_dim(self, node: Node) -> bool:
        return any(self.dim_axis(n) is not None for n in _walk(node)
                   if n.type in ("field_expression", "identifier"))

    def _halving(self, loop: Node) -> None:
        """`for (s = blockDim.x / 2; s > 0; s >>= 1)` and its doubling twin: the loop visits
        every element only when blockDim is a power of two, unless it checks blockDim inside."""
        body = loop.child_by_field_name("body")
        header = loop.child_by_field_name("condition")
        if body is None:
            return
        if loop.type == "for_statement":
            start = loop.child_by_field_name("initializer")
            update = loop.child_by_field_name("update")
            if start is None or update is None:
                return
            variable, initial = _assigned_value(start)
            halves = _halving_update(update, variable)
        else:
            condition = header
            variable = _compared_variable(condition) if condition is not None else None
            initial = self._declared_value(loop, variable)
            halves = next((h for s in _walk(body) if s.type == "assignment_expression"
                           and (h := _halving_update(s, variable)) is not None), None)
        if variable is None or initial is None or halves is None:
            return
        axis: Axis3 | None = None
        if halves == "halve":
            axis = self._halved_dim(initial)
        else:
            # Doubling from 1 while below blockDim: `for (s = 1; s < blockDim.x; s *= 2)`.
            start_value = self.values.value(initial)
            compared = _conjuncts(header)[0] if header is not None and _conjuncts(header) \
                else None
            if start_value is not None and start_value.number == 1 and compared is not None \
                    and compared.type == "binary_expression" and text_of(
                        compared.child_by_field_name("operator") or compared) in ("<", "<="):
                right = compared.child_by_field_name("right")
                axis = self.dim_axis(right) if right is not None else None
        if axis is None:
            return
        if halves == "double" and not self._reads_partner(body, variable):
            return  # a scan reads `tid - s`, which every block size keeps in range
        if any(self._mentions_dim(n) for n in _walk(body) if n.type == "binary_expression"
               and text_of(n.child_by_field_name("operator") or n) in _COMPARISONS):
            return
        shown = text_of(loop).split("{", 1)[0].split(")", 1)[0] + ")"
        self.halving.append((axis, " ".join(shown.split()), line(loop)))

    def _reads_partner(self, body: Node, variable: str) -> bool:
        """Whether the loop indexes with `threadIdx + stride` (a reduction's partner)."""
        for node in _walk(body):
            if node.type != "subscript_expression":
                continue
            arguments = node.child_by_field_name("indices") or node.child_by_field_name("index")
            for index in expression_children(arguments) if arguments is not None else []:
                terms: list[tuple[int, Node]] = []
                if _sum_terms(_unwrap(index), 1, terms) and any(
                        sign > 0 and text_of(term) == variable for sign, term in terms) and any(
                        self.thread_axis(term) is not None for _, term in terms):
                    return True
        return False

    def _halved_dim(self, node: Node) -> Axis3 | None:
        node = _unwrap(node)
        if node.type != "binary_expression":
            return None
        operator = text_of(node.child_by_field_name("operator") or node)
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        amount = self.values.value(right) if right is not None else None
        if left is None or amount is None:
            return None
        if (operator, amount.number) in (("/", 2), (">>", 1)):
            return self.dim_axis(left)
        return None

    def _declared_value(self, loop: Node, variable: str | None) -> Node | None:
        """The value `variable` is declared with before `loop`, in the same block."""
        if variable is None or loop.parent is None:
            return None
        found: Node | None = None
        for statement in loop.parent.named_children:
            if statement.start_byte >= loop.start_byte:
                break
            if statement.type == "declaration":
                name, value = _assigned_value(statement)
                if name == variable:
                    found = value
        return found

    # -- library primitives ------------------------------------------------------------------

    def _library(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        arguments = node.child_by_field_name("arguments")
        if name_node is None or arguments is None:
            return
        name = text_of(name_node)
        positions = CUB_BLOCK_DIMS.get(name)
        if positions is None:
            return
        parent = node.parent
        namespace = ""
        if parent is not None and parent.type == "qualified_identifier":
            scope = parent.child_by_field_name("scope")
            namespace = text_of(scope) if scope is not None else ""
        if namespace not in ("", "cub", "hipcub"):
            return
        items = expression_children(arguments)
        extents: list[int] = []
        parameters: list[str] = []
        for index, default in zip(positions, (None, 1, 1), strict=True):
            if index < len(items):
                value = self.values.value(items[index])
                if value is None:
                    return
                extents.append(value.number)
                parameters.extend(value.parameters)
            elif default is None:
                return
            else:
                extents.append(default)
        shown = parent if namespace and parent is not None else node
        written = " ".join(text_of(shown).split())
        self.libraries.append(LibraryShape(written, (extents[0], extents[1], extents[2]),
                                           tuple(dict.fromkeys(parameters)), line(node)))

    def _tile(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        arguments = node.child_by_field_name("arguments")
        if name_node is None or arguments is None:
            return
        if text_of(name_node).rsplit("::", 1)[-1] != "tiled_partition":
            return
        items = expression_children(arguments)
        value = self.values.value(items[0]) if items else None
        if value is None or value.number <= 1:
            return
        self.tiles.append(TileSize(value.number, value.parameters,
                                   " ".join(text_of(node).split()), line(node)))

    def result(self) -> KernelCode:
        def lines(found: dict[str, list[int]]) -> dict[str, tuple[int, ...]]:
            return {axis: tuple(sorted(set(values))) for axis, values in found.items()}

        return KernelCode(
            thread_uses=lines(self.thread_uses),
            block_dim_uses=lines(self.dim_uses),
            builtins=frozenset(self.builtins),
            shared_bounds=tuple(self.bounds),
            thread_tests=tuple(self.tests),
            checks=tuple(self.checks),
            unreadable_checks=tuple(self.unreadable),
            halving_loops=tuple(self.halving),
            full_mask_lines=tuple(sorted(set(self.full_mask))),
            libraries=tuple(dict.fromkeys(self.libraries)),
            tiles=tuple(self.tiles),
            named_parameters=tuple(self.named.values()),
            parameter_splits=tuple(self.splits),
            guarded_axes={axis: (None if None in bounds else max(b for b in bounds if b))
                          for axis, bounds in self.guards.items() if axis not in self.unguarded},
            asm_lines=tuple(sorted(set(self.asm))),
            unreadable_lines=tuple(sorted(set(self.errors))),
        )


# -- helpers --------------------------------------------------------------------------------

def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def _unwrap(node: Node) -> Node:
    """Without parentheses and casts: `(unsigned)(threadIdx.x)` -> `threadIdx.x`."""
    while True:
        node = strip_parentheses(node)
        if node.type == "cast_expression":
            value = node.child_by_field_name("value")
            if value is None:
                return node
            node = value
            continue
        if node.type == "call_expression":
            # `static_cast<int>(threadIdx.x)`, `int(threadIdx.x)`
            callee = node.child_by_field_name("function")
            arguments = node.child_by_field_name("arguments")
            items = expression_children(arguments) if arguments is not None else []
            if callee is not None and len(items) == 1 and re.fullmatch(
                    r"(static_cast<[^>]*>|int|unsigned|uint32_t|int32_t|size_t|long)",
                    "".join(text_of(callee).split())):
                node = items[0]
                continue
        return node


def _builtin(node: Node) -> tuple[str, Axis3] | None:
    """("threadIdx", "x") for `threadIdx.x`; also blockDim."""
    if node.type != "field_expression":
        return None
    argument = node.child_by_field_name("argument")
    field_node = node.child_by_field_name("field")
    if argument is None or field_node is None:
        return None
    base, axis = text_of(argument), text_of(field_node)
    if base in ("threadIdx", "blockDim") and axis in _BUILTIN_AXES:
        return base, axis
    return None


def _is_shared(declaration: Node) -> bool:
    qualifiers = [text_of(c) for c in declaration.children
                  if c.type in ("type_qualifier", "storage_class_specifier")]
    return "__shared__" in qualifiers and "extern" not in qualifiers


def _sum_terms(node: Node, sign: int, terms: list[tuple[int, Node]]) -> bool:
    if node.type == "binary_expression":
        operator = text_of(node.child_by_field_name("operator") or node)
        if operator in ("+", "-"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or right is None:
                return False
            return _sum_terms(_unwrap(left), sign, terms) and _sum_terms(
                _unwrap(right), sign if operator == "+" else -sign, terms)
    terms.append((sign, node))
    return True


def _product_factors(node: Node, factors: list[Node]) -> bool:
    if node.type == "binary_expression" and text_of(
            node.child_by_field_name("operator") or node) == "*":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return False
        return _product_factors(_unwrap(left), factors) and _product_factors(_unwrap(right),
                                                                             factors)
    factors.append(node)
    return True


def _conjuncts(node: Node) -> list[Node]:
    node = _unwrap(node) if node.type != "condition_clause" else node
    if node.type == "condition_clause":
        items = expression_children(node)
        return _conjuncts(items[-1]) if items else []
    if node.type == "binary_expression" and text_of(
            node.child_by_field_name("operator") or node) == "&&":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        return (_conjuncts(left) if left else []) + (_conjuncts(right) if right else [])
    return [node]


def _disjuncts(node: Node) -> list[Node]:
    node = _unwrap(node) if node.type != "condition_clause" else node
    if node.type == "condition_clause":
        items = expression_children(node)
        return _disjuncts(items[-1]) if items else []
    if node.type == "binary_expression" and text_of(
            node.child_by_field_name("operator") or node) == "||":
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        return (_disjuncts(left) if left else []) + (_disjuncts(right) if right else [])
    return [node]


def _exits(statement: Node) -> bool:
    """An `if` whose consequence leaves the kernel: `return`, `__trap()`, `abort()`."""
    consequence = statement.child_by_field_name("consequence")
    if consequence is None:
        return False
    if consequence.type == "return_statement":
        return True
    for node in _walk(consequence):
        if node.type == "return_statement":
            return True
        if node.type == "call_expression":
            callee = node.child_by_field_name("function")
            if callee is not None and text_of(callee) in _TRAPS:
                return True
    return False


def _assigned_value(node: Node) -> tuple[str | None, Node | None]:
    """`int s = v` or `s = v` as ("s", v)."""
    if node.type == "declaration":
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type == "init_declarator":
                name = declarator_name(declarator.child_by_field_name("declarator"))
                value = declarator.child_by_field_name("value")
                if name is not None:
                    return text_of(name), value
        return None, None
    if node.type == "assignment_expression":
        left = node.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return text_of(left), node.child_by_field_name("right")
    return None, None


def _halving_update(node: Node, variable: str | None) -> str | None:
    """"halve" for `s >>= 1`, `s /= 2`, `s = s / 2`; "double" for `s <<= 1`, `s *= 2`, ..."""
    if variable is None:
        return None
    node = _unwrap(node)
    if node.type != "assignment_expression":
        return None
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None or right is None or text_of(left) != variable:
        return None
    operator = text_of(node.child_by_field_name("operator") or node)
    amount = "".join(text_of(right).split()).rstrip("uUlL")
    compact = operator + amount
    if compact in (">>=1", "/=2"):
        return "halve"
    if compact in ("<<=1", "*=2", f"+={variable}"):
        return "double"
    if operator == "=":
        inner = _unwrap(right)
        if inner.type == "binary_expression":
            inner_operator = text_of(inner.child_by_field_name("operator") or inner)
            a, b = inner.child_by_field_name("left"), inner.child_by_field_name("right")
            if a is not None and b is not None and text_of(a) == variable:
                step = "".join(text_of(b).split()).rstrip("uUlL")
                if (inner_operator, step) in ((">>", "1"), ("/", "2")):
                    return "halve"
                if (inner_operator, step) in (("<<", "1"), ("*", "2")):
                    return "double"
    return None


def _compared_variable(condition: Node) -> str | None:
    parts = _conjuncts(condition)
    for part in parts:
        part = _unwrap(part)
        if part.type == "binary_expression":
            left = part.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                return text_of(left)
    return None
