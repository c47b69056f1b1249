"""The control slice of one function as data: what `flipflop.analysis.control` extracts and
`flipflop.analysis.slice_program` compiles into a register program."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from flipflop.ir import Instruction

TerminatorKind = Literal["exit", "jump", "branch", "opaque"]
"""How a slice block ends: leaving the function, a jump, a branch on a predicate it can follow,
or a branch it cannot."""
InputKind = Literal["special", "param", "pointer", "symbol"]
"""What a slice reads from outside: a special register, a kernel parameter (its value or its use
as an address) or a symbol."""


@dataclass(frozen=True)
class LoopTarget:
    """An assumed loop: trips per entry = header visits / entries from outside the body."""

    factor: int  # the function's own factor index
    header: int
    body: frozenset[int]
    enclosing: tuple[int, ...] = ()  # factors of the derived loops around it


@dataclass(frozen=True)
class GuardTarget:
    """An unknown branch: the share of the threads reaching `branch` that go on to `region`."""

    factor: int
    branch: int
    region: int
    enclosing: tuple[int, ...] = ()  # factors of the derived loops around it


class SliceEnd(NamedTuple):
    """How a block of the slice ends (see `flipflop.analysis.slice_program.Terminator`), the
    predicate named by its register."""

    kind: TerminatorKind
    taken: int = -1
    fallthrough: int = -1
    predicate: str = ""
    negated: bool = False


class SliceBlock(NamedTuple):
    instructions: tuple[Instruction, ...]  # the block's instructions the slice needs, in order
    end: SliceEnd


class _Memo:
    """Per-object cache (the compiled program, evaluations): neither part of the value nor
    pickled."""

    def __init__(self) -> None:
        self.program: object = None  # built on first use
        self.entries: OrderedDict[object, object] = OrderedDict()  # least recent first

    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]


@dataclass(frozen=True)
class ControlSlice:
    """The control slice of one function, with what to measure when it runs."""

    function: str
    blocks: tuple[SliceBlock | None, ...]  # None: unreachable, or no target reachable from it
    order: tuple[int, ...]  # schedule priority per block (loop bodies contiguous), -1: never run
    entry: int
    loops: tuple[LoopTarget, ...]
    guards: tuple[GuardTarget, ...]
    reach: tuple[int, ...]  # per block: bit set of targets (loops, then guards) reachable from it
    excluded: tuple[tuple[int, str], ...]  # (factor, why its own branch cannot be interpreted)
    specials: frozenset[str] = frozenset()  # special registers the slice reads
    params: tuple[str, ...] = ()  # kernel parameters it reads
    kernel_params: frozenset[str] = frozenset()
    pointer_params: frozenset[str] = frozenset()  # of `params`, those used as addresses
    offset: int = 0  # where the function's factors start among the kernel's
    memo: _Memo = field(default_factory=_Memo, compare=False, repr=False)

    @property
    def targets(self) -> int:
        return len(self.loops) + len(self.guards)

    def entries_at_least(self, values: Sequence[float]) -> float:
        """A lower bound on the block executions a run needs: the most times any target is
        reached, by the trips of the derived loops around it (the kernel's factor values)."""
        most = 0.0
        around = [t.enclosing for t in self.loops] + [t.enclosing for t in self.guards]
        for factors in around:
            most = max(most, math.prod(values[self.offset + i] for i in factors))
        return most

    def reads(self, kind: InputKind, names: Iterable[str]) -> bool:
        wanted = set(names)
        if kind == "special":
            return not self.specials.isdisjoint(wanted)
        return any(name in wanted for name in self.params)
