"""From what the code shows to what it needs: the rules that turn a kernel's facts
(`flipflop.constraints.code`, `flipflop.constraints.ptx_facts`) and its `// flipflop:`
annotation into `BlockConstraints`.

- check: `assert(blockDim.x == 32)`, `if (blockDim.x != 256) return;`, `__trap()`: what it states.
- compile-time: `cub::BlockReduce<T, 256>` and the other CUB block primitives: exactly that shape;
  `cg::tiled_partition<16>(block)`: whole tiles; a template or `#define` parameter named like a
  block size and used in a body that reads blockDim: block == its value (inferred).
- literal or compile-time: a shared array indexed by `threadIdx.x (+ c)`: the block fits in it;
  the code indexes with `threadIdx.x` and never reads `blockDim.x`: one block.x, the launch's
  (inferred; `>= n` when every use is under `threadIdx.x < n`).
- algorithm: a stride halved from `blockDim.x / 2` (or doubled up to it): a power of two;
  full-mask warp intrinsics: whole warps (inferred); the code never reads `threadIdx.y` (`z`):
  block.y == 1, since extra rows repeat the work.

"Inferred" requirements follow from how code is usually written rather than from what it states;
an annotation may override them, and a launch that contradicts one keeps the launch as written
(FlipFlop is unsure) instead of being reported as wrong.
"""

from __future__ import annotations

from dataclasses import replace

from flipflop.constraints.code import BLOCK_SIZE_NAME, KernelCode, NamedParameter
from flipflop.constraints.model import (
    AXES,
    Axis,
    BlockConstraints,
    Conflict,
    EvidenceClass,
    Requirement,
    Unsure,
)
from flipflop.constraints.ptx_facts import PtxFacts
from flipflop.model.constants import WARP_SIZE
from flipflop.source.model import Annotation

_LARGEST_EXTENT = 1024  # CUDA's per-axis block limit (x and y; z is 64)


def block_constraints(
    code: KernelCode | None,
    ptx: PtxFacts | None,
    annotation: Annotation | None = None,
) -> BlockConstraints:
    """The block shapes a kernel instance's code supports, with reasons and source lines."""
    requirements: list[Requirement] = []
    unsure: list[Unsure] = []
    if code is not None:
        requirements += _checks(code, unsure)
        requirements += _libraries(code)
        requirements += _shared_bounds(code)
        requirements += _fixed_by_use(code, ptx)
        requirements += _named_parameters(code, ptx, requirements)
        requirements += _halving(code)
        if code.asm_lines:
            unsure.append(Unsure("inline assembly reads the thread index or block size",
                                 code.asm_lines))
        if code.unreadable_lines:
            unsure.append(Unsure("code FlipFlop cannot parse uses threadIdx or blockDim",
                                 code.unreadable_lines))
    requirements += _whole_warps(code, ptx)
    requirements += _unused_dimensions(code, ptx)
    constraints = BlockConstraints(tuple(_deduplicated(requirements)), tuple(unsure))
    if annotation is not None:
        constraints = apply_annotation(constraints, annotation)
    return constraints


# -- the rules ------------------------------------------------------------------------------

def _evidence(parameters: tuple[str, ...]) -> EvidenceClass:
    return "compile-time" if parameters else "literal"


def _parameter(parameters: tuple[str, ...]) -> str | None:
    return parameters[0] if parameters else None


def _checks(code: KernelCode, unsure: list[Unsure]) -> list[Requirement]:
    found = []
    for check in code.checks:
        relation, value = check.relation, check.value
        # `blockDim.x < 512` is `blockDim.x <= 511`: integers only.
        if relation == "<" and value is not None:
            relation, value = "<=", value - 1
        elif relation == ">" and value is not None:
            relation, value = ">=", value + 1
        if relation not in ("==", "<=", ">=", "multiple", "pow2"):
            continue
        found.append(Requirement(
            _axis(check.axis), relation, value, "check",  # type: ignore[arg-type]
            (f"`{check.text}` at line {check.line}",), (check.line,),
            _parameter(check.parameters)))
    for text, line in code.unreadable_checks:
        unsure.append(Unsure(f"`{text}` is checked against a value known only at run time",
                             (line,)))
    return found


def _axis(name: str) -> Axis:
    if name in ("x", "y", "z", "threads"):
        return name  # type: ignore[return-value]
    raise ValueError(f"not a block axis: {name}")


def _libraries(code: KernelCode) -> list[Requirement]:
    found = []
    for library in code.libraries:
        shape = "×".join(str(v) for v in library.shape)
        for axis, value in zip(AXES, library.shape, strict=True):
            found.append(Requirement(
                axis, "==", value, "compile-time",
                (f"`{library.name}` ({shape} threads) at line {library.line}",),
                (library.line,), _parameter(library.parameters)))
    for tile in code.tiles:
        found.append(Requirement(
            "threads", "multiple", tile.size, "compile-time",
            (f"`{tile.text}` (tiles of {tile.size} threads) at line {tile.line}",),
            (tile.line,), _parameter(tile.parameters)))
    return found


def _shared_bounds(code: KernelCode) -> list[Requirement]:
    tightest: dict[str, Requirement] = {}
    for bound in code.shared_bounds:
        if bound.bound >= _LARGEST_EXTENT:
            continue
        requirement = Requirement(
            _axis(bound.axis), "<=", max(bound.bound, 0), _evidence(bound.parameters),
            (f"shared {bound.array} at line {bound.declared_line}",),
            (bound.declared_line, bound.line), _parameter(bound.parameters))
        known = tightest.get(bound.axis)
        if known is None or (requirement.value or 0) < (known.value or 0):
            tightest[bound.axis] = requirement
    return list(tightest.values())


def _fixed_by_use(code: KernelCode, ptx: PtxFacts | None) -> list[Requirement]:
    """An axis whose thread index the code uses while it never reads the block's extent: the
    code was written for one size, the launch's."""
    found = []
    for axis in AXES:
        uses = code.thread_uses.get(axis, ())
        if not uses or code.block_dim_uses.get(axis):
            continue
        if ptx is not None and (ptx.reads(f"ntid.{axis}") or not ptx.reads(f"tid.{axis}")):
            continue
        if axis in code.guarded_axes:
            # Every use sits under `threadIdx.x < bound`: threads past it idle, so any block
            # that reaches the bound does the same work (a bound known only at run time is the
            # problem size's business: see `flipflop.advice.coverage`).
            floor = code.guarded_axes[axis]
            if floor is not None and floor > 1:
                found.append(Requirement(
                    axis, ">=", floor, "literal",
                    (f"threadIdx.{axis} is used only below {floor} at line {uses[0]}",),
                    (uses[0],), proven=False))
            continue
        named = _named_for_axis(code, axis, ptx)
        evidence: list[str] = []
        lines = [uses[0]]
        for bound in code.shared_bounds:
            if bound.axis == axis:
                evidence.append(f"shared {bound.array} at line {bound.declared_line}")
                lines.append(bound.declared_line)
        for test in code.thread_tests:
            if test.axis == axis:
                evidence.append(f"`{test.text}` at line {test.line}")
                lines.append(test.line)
        splits = [s for s in code.parameter_splits if s.axis == axis][:2]
        for split in splits:
            evidence.append(f"`{split.text}` at line {split.line}")
            lines.append(split.line)
        parameters = tuple(p for b in code.shared_bounds if b.axis == axis for p in b.parameters)
        parameters += tuple(p for s in splits for p in s.parameters)
        # The launch says which size the code was written for; a parameter named like a block
        # size is evidence, not the value (`BLOCKSIZE` = 32 in a kernel launched with 32 * 32).
        parameter = None
        if named is not None:
            parameter = named.name
            evidence.append(f"`{named.name}` = {named.value} at line {named.line}")
            parameters = (named.name, *parameters)
        evidence.append(f"threadIdx.{axis} indexes data at line {uses[0]} and blockDim.{axis} "
                        "is never read")
        found.append(Requirement(
            axis, "==", None, _evidence(parameters), tuple(dict.fromkeys(evidence)),
            tuple(sorted(set(lines))), parameter, proven=False))
    return found


def _named_for_axis(code: KernelCode, axis: str, ptx: PtxFacts | None) -> NamedParameter | None:
    """The compile-time parameter named like this axis's block size, if the body uses one: a
    name with the axis (`BLOCK_SIZE_X`), or a plain one (`blockSize`) in a 1-D kernel."""
    one_dimensional = ptx is not None and not ptx.reads("tid.y") and not ptx.reads("tid.z")
    for named in code.named_parameters:
        match = BLOCK_SIZE_NAME.match(named.name)
        suffix = (match.group(3) or "").lstrip("_").lower() if match is not None else ""
        if suffix == axis or (not suffix and axis == "x" and one_dimensional):
            return named
    return None


def _named_parameters(
    code: KernelCode, ptx: PtxFacts | None, known: list[Requirement]
) -> list[Requirement]:
    """`template <int blockSize>` used in a body that also reads blockDim: the code still
    assumes the block is that size (cuda-samples' reductions)."""
    covered = {r.axis for r in known if r.relation == "==" and not r.proven}
    found = []
    for axis in AXES:
        if axis in covered:
            continue
        named = _named_for_axis(code, axis, ptx)
        if named is None:
            continue
        found.append(Requirement(
            axis, "==", named.value, "compile-time",
            (f"`{named.name}` = {named.value}, named like the block size, at line {named.line}",),
            (named.line,), named.name, proven=False))
    return found


def _halving(code: KernelCode) -> list[Requirement]:
    return [
        Requirement(_axis(axis), "pow2", None, "algorithm",
                    (f"`{header}` at line {line}",), (line,))
        for axis, header, line in code.halving_loops
    ]


def _whole_warps(code: KernelCode | None, ptx: PtxFacts | None) -> list[Requirement]:
    lines = tuple(code.full_mask_lines) if code is not None else ()
    if not lines and ptx is not None:
        lines = ptx.full_mask_lines
    if not lines and not (ptx is not None and ptx.full_mask):
        return []
    where = (" at line" + ("s " if len(lines) > 1 else " ") + ", ".join(map(str, lines[:3]))
             if lines else "")
    return [Requirement(
        "threads", "multiple", WARP_SIZE, "algorithm",
        (f"full-mask warp intrinsics{where} (every lane of every warp takes part)",),
        lines[:3], proven=False)]


def _unused_dimensions(code: KernelCode | None, ptx: PtxFacts | None) -> list[Requirement]:
    """An axis the kernel never reads: extra rows (layers) repeat the same work. Library code
    may read it (`cg::this_thread_block().thread_rank()` reads every axis to rank threads), yet a
    kernel that indexes with threadIdx.x alone still repeats its work along y."""
    found = []
    for axis in ("y", "z"):
        unread = ptx is not None and not ptx.reads(f"tid.{axis}") and not ptx.reads(
            f"ntid.{axis}")
        if code is not None and not unread:
            unread = not {f"threadIdx.{axis}", f"blockDim.{axis}"} & code.builtins and bool(
                code.thread_uses.get("x"))
        if unread:
            found.append(Requirement(
                _axis(axis), "one", None, "algorithm",
                (f"threadIdx.{axis} is never read (more would repeat the same work)",)))
    return found


def _deduplicated(requirements: list[Requirement]) -> list[Requirement]:
    seen: dict[tuple[str, str, int | None], Requirement] = {}
    for requirement in requirements:
        key = (requirement.axis, requirement.relation, requirement.value)
        if key not in seen:
            seen[key] = requirement
    return list(seen.values())


# -- annotations ----------------------------------------------------------------------------

def apply_annotation(constraints: BlockConstraints, annotation: Annotation) -> BlockConstraints:
    """`// flipflop: block=16x16`, `block_x=pow2`, `block_x%32==0`, `block=any` on a kernel.

    What the user states overrides what FlipFlop inferred; an annotation that contradicts a
    proven requirement is a conflict (a warning) and the code's requirement stands.
    """
    line = annotation.range.start.line + 1
    because = (f"the `// flipflop:` annotation at line {line}",)
    declared: list[Requirement] = []
    generic = False
    if annotation.block is not None:
        for extent_axis, value in zip(AXES, annotation.block, strict=True):
            declared.append(Requirement(extent_axis, "==", value, "annotation", because, (line,)))
    for axis_name, rule in annotation.block_rules:
        if rule == "any":
            generic = True
            continue
        axis = _axis(axis_name)
        if rule == "pow2":
            declared.append(Requirement(axis, "pow2", None, "annotation", because, (line,)))
        elif rule.startswith("%"):
            declared.append(Requirement(axis, "multiple", int(rule[1:]), "annotation", because,
                                        (line,)))
        else:
            declared.append(Requirement(axis, "==", int(rule.lstrip("=")), "annotation",
                                        because, (line,)))
    if not declared and not generic:
        return constraints
    proven = [r for r in constraints.requirements if r.proven]
    conflicts = list(constraints.conflicts)
    clashes = [clash for r in declared if (clash := _clash(r, proven)) is not None]
    for clash in clashes[:1]:
        conflicts.append(Conflict(f"the annotation at line {line}", None, clash, line))
    if generic:
        conflicts.extend(Conflict(f"the annotation `block=any` at line {line}", None, r, line)
                         for r in proven[:1])
    # An annotation that contradicts the code is wrong somewhere: none of it is used.
    consistent = [] if clashes else declared
    annotated_axes = {r.axis for r in consistent}
    kept = [r for r in constraints.requirements
            if r.proven or (not generic and r.axis not in annotated_axes)]
    return replace(
        constraints,
        requirements=tuple(_deduplicated(kept + consistent)),
        unsure=() if generic else constraints.unsure,
        conflicts=tuple(conflicts),
        declared_generic=generic,
    )


def _clash(declared: Requirement, proven: list[Requirement]) -> Requirement | None:
    """The proven requirement no extent allowed by `declared` meets, if any."""
    relevant = [r for r in proven if r.axis == declared.axis]
    for requirement in relevant:
        if not any(declared.holds(_shape(declared.axis, v)) and requirement.holds(
                _shape(declared.axis, v)) for v in range(1, _LARGEST_EXTENT + 1)):
            return requirement
    return None


def _shape(axis: Axis, value: int) -> tuple[int, int, int]:
    if axis == "y":
        return (1, value, 1)
    if axis == "z":
        return (1, 1, value)
    return (value, 1, 1)
