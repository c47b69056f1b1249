"""The block shapes a kernel's code supports, as plain immutable data.

A `Requirement` is one thing the code needs of the block (`block.x == 16`, a power of two, whole
warps, one dimension), with the class of evidence it comes from, the reason in words and the
source lines behind it. `BlockConstraints` holds a kernel's requirements and what could not be
read ("unsure"); the advisor only evaluates shapes that meet every requirement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from flipflop.launch import Dim3, volume

# What a requirement is about: one block extent, or the thread count of the block.
Axis = Literal["x", "y", "z", "threads"]
# "==", "<=", ">=": compared with `value`; "multiple": a multiple of `value`; "pow2": a power of
# two; "one": the extent is 1 (the code ignores that dimension).
Relation = Literal["==", "<=", ">=", "multiple", "pow2", "one"]
# The classes of evidence (issue vocabulary): a compile-time parameter (template argument,
# `#define`), literals in the code, an explicit check on `blockDim`, what an algorithm needs,
# and the user's own `// flipflop:` annotation.
EvidenceClass = Literal["compile-time", "literal", "check", "algorithm", "annotation"]

AXES: tuple[Literal["x", "y", "z"], ...] = ("x", "y", "z")


def extent(block: Dim3, axis: Axis) -> int:
    if axis == "threads":
        return volume(block)
    return block[AXES.index(axis)]


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


@dataclass(frozen=True)
class Requirement:
    """One thing the kernel's code needs of its block.

    `value` None with relation "==" means "fixed, at whatever the launch as written uses": the
    code assumes one size without saying which (`BlockConstraints.at_launch` resolves it).
    `proven`: the code states it (an assert, a library template, an array bound); otherwise it
    is inferred from how the code is written, and an annotation may override it.
    """

    axis: Axis
    relation: Relation
    value: int | None
    evidence: EvidenceClass
    # What in the code says so, each with its line: ("shared tile[18][18] at line 7",
    # "`threadIdx.x == 15` at line 17").
    because: tuple[str, ...]
    lines: tuple[int, ...] = ()  # 1-based source lines
    parameter: str | None = None  # the compile-time parameter the value comes from
    proven: bool = True

    def holds(self, block: Dim3) -> bool:
        size = extent(block, self.axis)
        if self.relation == "pow2":
            return is_power_of_two(size)
        if self.relation == "one":
            return size == 1
        if self.value is None:
            return True
        if self.relation == "==":
            return size == self.value
        if self.relation == "<=":
            return size <= self.value
        if self.relation == ">=":
            return size >= self.value
        return size % self.value == 0

    @property
    def condition(self) -> str:
        """The requirement as a short formula: `block.x == 16`, `threads % 32 == 0`."""
        name = "threads" if self.axis == "threads" else f"block.{self.axis}"
        if self.relation == "pow2":
            return f"{name} a power of two"
        if self.relation == "one":
            return f"{name} == 1"
        value = "the launch's" if self.value is None else str(self.value)
        if self.relation == "multiple":
            return f"{name} % {value} == 0"
        return f"{name} {self.relation} {value}"

    @property
    def reason(self) -> str:
        return ", ".join(self.because)

    def describe(self) -> str:
        """`block.x <= 16: shared tile[18][18] at line 7`."""
        return f"{self.condition}: {self.reason}"


@dataclass(frozen=True)
class Unsure:
    """Code that decides what blocks work in a way FlipFlop cannot read."""

    reason: str
    lines: tuple[int, ...] = ()

    def describe(self) -> str:
        where = ""
        if self.lines:
            where = " (line " + ", ".join(str(n) for n in self.lines) + ")"
        return f"{self.reason}{where}"


@dataclass(frozen=True)
class Conflict:
    """An annotation or a launch that asks for a block the code does not support."""

    what: str  # "the annotation `block_x=pow2`", "the launch at line 30"
    block: Dim3 | None
    requirement: Requirement
    line: int  # 1-based line of the annotation or launch

    def describe(self) -> str:
        return f"{self.what} contradicts the code: it needs {self.requirement.describe()}"


@dataclass(frozen=True)
class BlockConstraints:
    """What a kernel's code needs of its block shape; empty means block-generic."""

    requirements: tuple[Requirement, ...] = ()
    unsure: tuple[Unsure, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    # The user declared the kernel block-generic (`// flipflop: block=any`): inferred
    # requirements and doubts give way; proven ones stay.
    declared_generic: bool = False

    @property
    def is_generic(self) -> bool:
        return not self.requirements and not self.unsure

    def violations(self, block: Dim3) -> tuple[Requirement, ...]:
        return tuple(r for r in self.requirements if not r.holds(block))

    def allows(self, block: Dim3) -> bool:
        return not self.violations(block)

    def with_launch_bound(self, threads: int | None, line: int | None) -> BlockConstraints:
        """The same constraints and `__launch_bounds__`: a launch with more threads fails."""
        if threads is None:
            return self
        where = f" at line {line}" if line else ""
        bound = Requirement("threads", "<=", threads, "compile-time",
                            (f"`__launch_bounds__` ({threads} threads){where}",),
                            (line,) if line else ())
        return replace(self, requirements=(*self.requirements, bound))

    def at_launch(self, current: Dim3 | None, launch_line: int | None = None) -> BlockConstraints:
        """The constraints of one launch, whose block is `current` (None when unknown).

        "Fixed at the launch as written" takes the current block's extent; without a current
        block it becomes a doubt. A current block that breaks a proven requirement is a conflict
        (the launch is wrong); one that breaks an inferred requirement means the inference does
        not fit this code, so FlipFlop is unsure and keeps the launch.
        """
        resolved: list[Requirement] = []
        unsure = list(self.unsure)
        conflicts = list(self.conflicts)
        where = f"the launch at line {launch_line}" if launch_line else "the launch"
        for requirement in self.requirements:
            if requirement.relation == "==" and requirement.value is None:
                if current is None:
                    unsure.append(Unsure(
                        f"the code assumes one block.{requirement.axis} without saying which "
                        f"({requirement.reason}) and no launch shows it", requirement.lines))
                    continue
                requirement = replace(requirement, value=extent(current, requirement.axis))
            if current is not None and not requirement.holds(current):
                if requirement.proven:
                    conflicts.append(Conflict(where, current, requirement, launch_line or 0))
                else:
                    unsure.append(Unsure(
                        f"{requirement.condition} ({requirement.reason}) does not hold for the "
                        f"block of {where}", requirement.lines))
                    continue
            resolved.append(requirement)
        # An inference that no block can meet together with what the code proves is wrong.
        proven = [r for r in resolved if r.proven]
        resolved = [r for r in resolved if r.proven or all(_compatible(r, p) for p in proven)]
        return replace(self, requirements=tuple(resolved), unsure=tuple(unsure),
                       conflicts=tuple(conflicts))

    def pinned(self) -> dict[str, int]:
        """The extents fixed by an equality: {"x": 16, "y": 16}."""
        found: dict[str, int] = {}
        for requirement in self.requirements:
            if requirement.relation == "==" and requirement.value is not None:
                found.setdefault(requirement.axis, requirement.value)
            elif requirement.relation == "one":
                found.setdefault(requirement.axis, 1)
        return found

    def fixed_shape(self) -> Dim3 | None:
        """The one block shape the code allows, when its requirements pin every extent."""
        pinned = self.pinned()
        if all(axis in pinned for axis in AXES):
            shape = (pinned["x"], pinned["y"], pinned["z"])
            return shape if self.allows(shape) else None
        return None

    def summary(self) -> str:
        """One sentence for a table, hover or JSON: what the code needs and why, e.g. "the code
        fixes the block at 16×16: shared tile[18][18] at line 7, `threadIdx.x == 15` at line
        17, …"."""
        if not self.requirements and not self.unsure:
            return "the code runs with any block shape FlipFlop considers"
        shape = self.fixed_shape()
        unused = [r for r in self.requirements if r.relation == "one"]
        shown = [r for r in self.requirements if r.relation != "one"]
        conditions = list(dict.fromkeys(r.condition for r in shown))
        if len(unused) == 2:
            conditions.append("a 1-D block")
        else:
            conditions.extend(r.condition for r in unused)
        if shape is not None:
            head = f"the code fixes the block at {_shape(shape)}"
        elif conditions:
            head = "the code needs " + ", ".join(conditions)
        else:
            head = "the code's block shape is unsure"
        because = [item for r in shown for item in r.because]
        if len(unused) == 2:
            because.append("threadIdx.y and threadIdx.z are never read (more rows would repeat "
                           "the same work)")
        elif shape is None:
            because += [item for r in unused for item in r.because]
        because += [u.describe() for u in self.unsure]
        return f"{head}: " + ", ".join(dict.fromkeys(because))


_LARGEST_EXTENT = 1024  # CUDA's largest block extent (x and y; z is 64)


def _compatible(first: Requirement, second: Requirement) -> bool:
    """Whether some block meets both: along their common axis (x and the thread count are one
    axis for a 1-D block); requirements on different axes always can."""
    axes = {first.axis, second.axis}
    if len(axes) > 1 and axes != {"x", "threads"}:
        return True
    axis = first.axis if first.axis != "threads" else second.axis
    for value in range(1, _LARGEST_EXTENT + 1):
        shape: Dim3 = (value, 1, 1)
        if axis == "y":
            shape = (1, value, 1)
        elif axis == "z":
            shape = (1, 1, value)
        if first.holds(shape) and second.holds(shape):
            return True
    return False


def _shape(block: Dim3) -> str:
    x, y, z = block
    return str(x) if y == z == 1 else (f"{x}×{y}" if z == 1 else f"{x}×{y}×{z}")
