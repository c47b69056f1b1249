"""What the CUDA source says about kernels and launches, as plain immutable data.

Positions follow the Language Server Protocol: 0-based lines and characters counted in UTF-16
code units. Every range also carries UTF-8 byte offsets into the text, which is what the parser
works in and what byte-level tools want.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from flipflop.launch import Dim3


@dataclass(frozen=True, order=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position
    start_byte: int
    end_byte: int


@dataclass(frozen=True)
class TextEdit:
    """Replace the text in `range` by `new_text` (an insertion when the range is empty)."""

    range: Range
    new_text: str


@dataclass(frozen=True)
class Folded:
    """A scalar after constant folding: its value, or the names that kept it symbolic."""

    value: int | None
    unresolved: tuple[str, ...] = ()
    # Something other than a name blocked it (a call, a memory read): the value is computed at
    # run time, so a variable holding it is itself the name to ask for.
    opaque: bool = False


@dataclass(frozen=True)
class FoldedDim3:
    """A `dim3` after constant folding; a component is None when it stayed symbolic."""

    x: int | None
    y: int | None
    z: int | None
    unresolved: tuple[str, ...] = ()

    @property
    def value(self) -> Dim3 | None:
        if self.x is None or self.y is None or self.z is None:
            return None
        return (self.x, self.y, self.z)


@dataclass(frozen=True)
class Annotation:
    """A `// flipflop: key=value ...` comment; see `flipflop.source.annotations`."""

    range: Range
    values: tuple[tuple[str, str], ...]
    grid: Dim3 | None = None
    block: Dim3 | None = None
    threads: Dim3 | None = None
    dynamic_smem_bytes: int | None = None
    params: tuple[tuple[str, int], ...] = ()
    errors: tuple[str, ...] = ()
    # A search space of compile-time tunables, as written (read by `flipflop.space`):
    # `tune` holds `NAME=VALUES` specs, the others Kernel Tuner's launch semantics.
    tune: tuple[str, ...] = ()
    problem: str | None = None
    grid_div: tuple[str | None, str | None, str | None] = (None, None, None)
    block_size_names: str | None = None
    restrictions: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()  # `NAME=EXPR`: preprocessor values computed from the tunables
    # What the kernel's code needs of its block, where the code does not show it:
    # (axis, rule) with axis "x", "y", "z" or "threads" and rule "pow2", "any", "%N" or "=N".
    block_rules: tuple[tuple[str, str], ...] = ()

    @property
    def tunes(self) -> bool:
        return bool(self.tune)


@dataclass(frozen=True)
class KernelParameter:
    name: str
    type: str


@dataclass(frozen=True)
class TemplateParameter:
    name: str
    kind: Literal["type", "value"]
    type: str


@dataclass(frozen=True)
class LaunchBounds:
    """`__launch_bounds__(max_threads[, min_blocks[, max_cluster]])`, written or via a macro."""

    range: Range
    arguments: tuple[str, ...]
    max_threads: int | None
    min_blocks: int | None
    max_cluster: int | None
    unresolved: tuple[str, ...] = ()
    macro: str | None = None


@dataclass(frozen=True)
class Kernel:
    """A `__global__` function, defined here or only declared."""

    name: str
    qualified_name: str
    name_range: Range
    range: Range
    line: int
    parameters: tuple[KernelParameter, ...]
    template_parameters: tuple[TemplateParameter, ...]
    launch_bounds: LaunchBounds | None
    is_definition: bool
    annotation: Annotation | None = None
    # Where `__launch_bounds__(...) ` goes when the kernel has none: before its declarator.
    bounds_insert_byte: int = 0
    bounds_insert_position: Position = field(default_factory=lambda: Position(0, 0))


GridAxisKind = Literal["fixed", "covers", "unknown"]


@dataclass(frozen=True)
class GridAxis:
    """How one grid component relates to the block.

    "fixed": independent of the block (`num_heads`, `64`). "covers": enough blocks to cover
    `threads_expression` threads along the same block axis (`(n + 255) / 256` with a block of 256,
    `ceil_div(n, block.x)`); `rounding` says whether a partial block is launched.
    """

    kind: GridAxisKind
    value: int | None
    # The axis as written, with every name that folds replaced by its value.
    expression: str = ""
    threads: int | None = None
    threads_expression: str = ""
    rounding: Literal["ceil", "floor"] = "ceil"
    unresolved: tuple[str, ...] = ()
    # A fixed axis written with names the block's extents use too, through constants
    # (`(rows + per_block - 1) / per_block` with `per_block = THREADS / 32`, block `THREADS`):
    # it follows the block when the source changes it.
    tied_to_block: bool = False


@dataclass(frozen=True)
class ConfigArgument:
    """One argument of `<<<grid, block, smem, stream>>>`, as written."""

    text: str
    range: Range


@dataclass(frozen=True)
class LaunchExpressions:
    """A launch's arguments as text, every name that folds replaced by its value and every local
    variable by its initializer: the names left are those the source leaves open (a parameter
    without callers, a template parameter, a value read at run time)."""

    block: tuple[str, str, str]
    shared_memory: str
    arguments: tuple[str, ...]


@dataclass(frozen=True)
class LaunchSite:
    """`kernel<<<grid, block[, smem[, stream]]>>>(args)` and what the folding made of it."""

    kernel: str
    callee: str
    template_arguments: tuple[str, ...]
    kernel_name_range: Range
    range: Range
    config_range: Range
    line: int
    grid: ConfigArgument
    block: ConfigArgument
    shared_memory: ConfigArgument | None
    stream: ConfigArgument | None
    arguments: tuple[str, ...]
    grid_folded: FoldedDim3
    block_folded: FoldedDim3
    shared_memory_folded: Folded
    grid_axes: tuple[GridAxis, GridAxis, GridAxis]
    enclosing_function: str | None
    in_loop: bool
    annotation: Annotation | None = None
    # Integer constants visible at the launch (local and file scope), for re-folding later.
    constants: tuple[tuple[str, int], ...] = ()
    # The template arguments folded to integers, in order (None: not an integer constant).
    template_values: tuple[int | None, ...] = ()
    # The kernel arguments folded where they are passed (None: not a constant there).
    argument_values: tuple[int | None, ...] = ()
    expressions: LaunchExpressions | None = None
    # The names the launch's grid, block or shared memory wait for, as the source spells them.
    needs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Declaration:
    """A variable declared `dim3` or integer whose value the folding used."""

    name: str
    type: str
    range: Range
    value_range: Range | None
    value_text: str
    folded: FoldedDim3
    function: str | None


@dataclass(frozen=True)
class MacroDefinition:
    """`#define NAME value`: where its value is written, and whether it is only a default.

    `is_default`: the definition sits inside `#ifndef NAME`, so a `-D NAME=…` (or Kernel Tuner's
    prepended `#define`) overrides it — the usual way tunable kernels give their defaults.
    """

    name: str
    value: str
    value_range: Range
    line: int  # 0-based
    is_default: bool


@dataclass(frozen=True)
class SourceFile:
    text: str
    kernels: tuple[Kernel, ...]
    launches: tuple[LaunchSite, ...]
    declarations: tuple[Declaration, ...]
    annotations: tuple[Annotation, ...]
    macros: tuple[tuple[str, str], ...]
    constants: tuple[tuple[str, int], ...]
    syntax_errors: tuple[Range, ...] = ()
    definitions: tuple[MacroDefinition, ...] = ()

    def default_of(self, name: str) -> MacroDefinition | None:
        """The `#ifndef`-guarded definition of `name`, else its first definition."""
        matches = [d for d in self.definitions if d.name == name]
        guarded = [d for d in matches if d.is_default]
        chosen = guarded or matches
        return chosen[0] if chosen else None

    def kernel(self, name: str) -> Kernel | None:
        """The definition of `name` if there is one, otherwise its first declaration."""
        matches = [k for k in self.kernels if k.name == name or k.qualified_name == name]
        definitions = [k for k in matches if k.is_definition]
        chosen = definitions or matches
        return chosen[0] if chosen else None

    def launches_of(self, name: str) -> tuple[LaunchSite, ...]:
        return tuple(s for s in self.launches if s.kernel == name or s.callee == name)
