"""One function's static summary: counts per weight group, access sites, loops, guards, calls.

Every block's executions per thread are a product of factors: the trip counts of the loops
around it and the fractions of threads that pass the guards dominating it. Blocks with the same
factors share a group, so evaluating a launch is one product per group, not per block.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from flipflop.analysis import expr as ex
from flipflop.analysis import opclass as oc
from flipflop.analysis.cfg import ControlFlow, Loop, build_control_flow
from flipflop.analysis.chains import issue_cost, schedule_cycles
from flipflop.analysis.conditions import negate
from flipflop.analysis.control import control_slice
from flipflop.analysis.dataflow import FunctionValues
from flipflop.analysis.guards import fraction
from flipflop.analysis.ifconvert import if_converted
from flipflop.analysis.memory import (
    MAX_COPY_OFFSETS,
    SECTOR_BYTES,
    AddressKind,
    LaneCoefficients,
    StaticSite,
    access_width,
    address_operand,
    memory_space,
)
from flipflop.analysis.poly import DATA, LANE
from flipflop.analysis.scan import FunctionScan, scan_function
from flipflop.analysis.slice_types import ControlSlice, GuardTarget, LoopTarget
from flipflop.analysis.tripcount import DEFAULT_TRIP_COUNT, TripCount, trip_count
from flipflop.analysis.vectorize import (
    CHUNK_BYTES,
    NOTHING_MERGED,
    MergedAccess,
    SharedAccess,
    VectorizedBlock,
    power_of_two_dividing,
    vectorize_block,
)
from flipflop.analysis.work import MemorySpace
from flipflop.ir import Function, Instruction, SpecialRegister, Symbol, split_opcode

Key = tuple[int, ...]
_SPELLING = Instruction._fields.index("full_opcode")  # by position: cheaper than by name
LineOf = Callable[[Instruction], "int | None"]


@dataclass(frozen=True)
class Factor:
    """A multiplier on the executions of the blocks under it."""

    kind: Literal["loop", "guard"]
    expression: ex.Expr
    default: float  # used when the expression needs a parameter the caller did not give
    assumed: bool  # the expression itself is a default (unknown loop bound)
    description: str
    lines: tuple[int, ...]
    function: str
    divergent: bool = False  # guards: the condition differs between lanes of a warp
    exit_of_loop: bool = False  # guards: the rest of an iteration after an exit in the middle
    depth: int = 0  # loops: nesting depth
    parent: int | None = None  # loops: the enclosing loop's factor

    def value(self, env: dict[str, float]) -> tuple[float, bool]:
        """(value, whether a default stood in for a missing parameter)."""
        try:
            return self.expression.evaluate(env), False
        except ex.MissingSymbol:
            return self.default, True


@dataclass(frozen=True)
class CallSite:
    callee: str
    key: Key
    lines: tuple[int, ...]


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    factors: tuple[Factor, ...]
    groups: tuple[tuple[Key, tuple[float, ...]], ...]
    sites: tuple[StaticSite, ...]
    calls: tuple[CallSite, ...]
    divergence_lines: tuple[int, ...]
    unknown_branch_lines: tuple[int, ...]
    uses_tid: frozenset[str]  # "x", "y", "z"
    irreducible: bool
    control: ControlSlice | None = None  # for interpreting the assumed factors per launch
    # Unknown branches left out of interpretation (`MAX_INTERPRETED_BRANCHES`); those that
    # can be interpreted are the assumed guard factors, `unknown_branch_lines` the others.
    uninterpreted_branch_lines: tuple[int, ...] = ()


def summarize(function: Function, kernel_params: frozenset[str], line_of: LineOf,
              function_names: frozenset[str], scan: FunctionScan | None = None,
              arch: str = "", shared_offset: Mapping[str, int | None] | None = None,
              ) -> FunctionSummary:  # fmt: skip
    """`scan` is the function's `scan_function` when the caller already has it; `arch` the
    SASS cost table's architecture for the module (`sass.table_arch`); `shared_offset` the
    module's `vectorize.shared_offsets` (None: ptxas's merging of shared accesses is not
    modelled)."""
    if scan is None:
        scan = scan_function(function)
    flow = build_control_flow(function)
    values = FunctionValues(function, flow, kernel_params, scan)
    factors: list[Factor] = []
    loop_factor: dict[int, int] = {}
    trips: dict[int, TripCount] = {}
    loop_targets: list[LoopTarget] = []
    for loop in flow.loops:
        count = trip_count(function, flow, values, loop)
        trips[loop.index] = count
        parent = loop_factor.get(loop.parent) if loop.parent is not None else None
        loop_factor[loop.index] = len(factors)
        if count.assumed:
            around = _derived_around(flow, loop.header, loop_factor, trips)
            loop_targets.append(LoopTarget(len(factors), loop.header, loop.body, around))
        factors.append(Factor(
            "loop", count.expression, DEFAULT_TRIP_COUNT, count.assumed, count.reason,
            _loop_lines(function, loop, line_of), function.name, depth=loop.depth, parent=parent,
        ))  # fmt: skip

    def halving(register: str) -> tuple[ex.Expr, ex.Expr] | None:
        induction = values.inductions.get(register)
        if (induction is None or not induction.geometric or induction.step_sign < 0
                or len(induction.inits) != 1):
            return None
        b, i = induction.inits[0]
        start = values.definition(b, i, register).to_expr()
        trip = trips[induction.loop]
        return None if start is None or trip.assumed else (start, trip.expression)

    guard_targets: list[GuardTarget] = []
    assumed_loops = frozenset(index for index, count in trips.items() if count.assumed)
    region_guards, divergent_blocks, in_data, left_out = _guards(
        function, flow, values, factors, line_of, halving, guard_targets, assumed_loops
    )
    if flow.loops:
        guard_targets = [
            replace(guard, enclosing=_derived_around(flow, guard.branch, loop_factor, trips))
            for guard in guard_targets
        ]
    keys = _block_keys(flow, loop_factor, region_guards)
    summary = _collect(function, flow, values, factors, keys, divergent_blocks, in_data,
                       line_of, function_names, scan.notable, arch,
                       shared_offset)  # fmt: skip
    control = control_slice(function, flow, scan, kernel_params, loop_targets, guard_targets)
    return replace(summary, control=control, uninterpreted_branch_lines=tuple(left_out))


def _derived_around(flow: ControlFlow, block: int, loop_factor: dict[int, int],
                    trips: dict[int, TripCount]) -> tuple[int, ...]:  # fmt: skip
    """Factors of the loops around a block (itself excluded when it is a header) whose trip
    counts the symbolic analysis derived."""
    return tuple(
        loop_factor[index]
        for index in flow.loops_of(block)
        if flow.loops[index].header != block and not trips[index].assumed
    )


def _loop_lines(function: Function, loop: Loop, line_of: LineOf) -> tuple[int, ...]:
    """The loop statement's lines: its test and update sit at the end of the latches."""
    lines: list[int] = []
    for latch in loop.latches:
        for instruction in function.blocks[latch].instructions[-3:]:
            line = line_of(instruction)
            if line is not None:
                lines.append(line)
    if not lines:
        for block in sorted(loop.body):
            for instruction in function.blocks[block].instructions:
                line = line_of(instruction)
                if line is not None:
                    lines.append(line)
    return tuple(sorted(set(lines)))


MAX_INTERPRETED_BRANCHES = 64
"""Unknown branches a function may have for them to get factors of their own, interpreted per
launch. Past this (fully unrolled code with a test in every copy) each branch guards little,
and a factor each would make every extraction and evaluation pay for hundreds of groups: they
all stay counted down both paths, as an assumption. Our choice: the measured Kernel Tuner
search spaces (calibration/data/measured) have at most 11 per kernel."""


def _guards(
    function: Function,
    flow: ControlFlow,
    values: FunctionValues,
    factors: list[Factor],
    line_of: LineOf,
    halving: Callable[[str], tuple[ex.Expr, ex.Expr] | None],
    unknown: list[GuardTarget],
    assumed_loops: frozenset[int],
) -> tuple[dict[int, list[int]], set[int], list[int], list[int]]:
    """Guard factors by the block that starts their region; blocks ending in a lane-divergent
    branch; lines of the branches whose condition is unknown (both paths counted in full) and
    that depend on memory; lines of those left out of interpretation. An unknown branch that
    does not depend on memory gets a guard factor per region, worth 1 (an assumption), listed
    in `unknown` so that a launch can interpret it; so does the rest of an iteration after an
    exit from the middle of an assumed loop (unrolled copies of a loop test each copy)."""
    region_guards: dict[int, list[int]] = {}
    divergent: set[int] = set()
    # (block, region, lines, whether an exit's continuation) of the interpretable ones
    candidates: list[tuple[int, int, tuple[int, ...], bool]] = []
    in_data: list[int] = []  # lines of unknown branches on values loaded from memory
    for block in flow.reachable_order:
        instructions = function.blocks[block].instructions
        if not instructions:
            continue
        branch = instructions[-1]
        if branch.opcode != "bra" or branch.guard is None or "uni" in branch.modifiers:
            continue
        predicate = branch.guard.predicate
        taint = values.predicate_taint(predicate, block, len(instructions) - 1)
        if taint & LANE:
            divergent.add(block)
        successors = flow.successors[block]
        if len(successors) != 2:
            continue
        if flow.innermost_loop[block] is not None and _leaves_a_loop(flow, block, successors):
            stay = _continuation(flow, block, successors, assumed_loops)
            if stay is not None and not taint & DATA:
                candidates.append((block, stay, _branch_lines(function, block, line_of), True))
            continue
        regions = [s for s in successors if s != block and len(flow.predecessors[s]) == 1]
        if not regions:
            continue
        target = flow.branch_targets[block]
        condition = values.condition(predicate, block, len(instructions) - 1)
        lines = _branch_lines(function, block, line_of)
        taken = None
        if condition is not None:
            taken = negate(condition) if branch.guard.negated else condition
        for successor in regions:
            holds = None if taken is None else taken if successor == target else negate(taken)
            share = None if holds is None else fraction(holds, halving)
            if share is None:
                if taint & DATA:
                    in_data.extend(lines)
                else:
                    candidates.append((block, successor, lines, False))
                continue
            if isinstance(share, ex.Const) and share.value == 1.0:
                continue
            region_guards.setdefault(successor, []).append(len(factors))
            factors.append(Factor(
                "guard", share, 1.0, False, f"threads reaching line(s) {_text(lines)}: {share}",
                lines, function.name, divergent=block in divergent,
            ))  # fmt: skip
    left_out: list[int] = []
    if len(candidates) > MAX_INTERPRETED_BRANCHES:
        left_out = [line for _, _, lines, exit_of_loop in candidates if not exit_of_loop
                    for line in lines]  # fmt: skip
        candidates = []
    for block, region, lines, exit_of_loop in candidates:
        unknown.append(GuardTarget(len(factors), block, region))
        region_guards.setdefault(region, []).append(len(factors))
        if exit_of_loop:
            description = f"iterations going on past the exit at line(s) {_text(lines)}: all"
        else:
            description = f"threads reaching line(s) {_text(lines)}: condition not followed, all"
        factors.append(Factor(
            "guard", ex.ONE, 1.0, True, description, lines, function.name,
            divergent=block in divergent, exit_of_loop=exit_of_loop,
        ))  # fmt: skip
    return region_guards, divergent, sorted(set(in_data)), sorted(set(left_out))


def _continuation(flow: ControlFlow, block: int, successors: tuple[int, ...],
                  assumed_loops: frozenset[int]) -> int | None:  # fmt: skip
    """The block an iteration of an assumed innermost loop goes on to when `block` exits the
    loop from the middle of its body (not towards its header)."""
    innermost = flow.innermost_loop[block]
    if innermost is None or innermost not in assumed_loops:
        return None
    loop = flow.loops[innermost]
    inside = [s for s in successors if s in loop.body]
    if len(inside) != 1 or inside[0] == loop.header or len(flow.predecessors[inside[0]]) != 1:
        return None
    return inside[0]


def _leaves_a_loop(flow: ControlFlow, block: int, successors: tuple[int, ...]) -> bool:
    for loop_index in flow.loops_of(block):
        body = flow.loops[loop_index].body
        if sum(s in body for s in successors) == 1:
            return True
        if any(s == flow.loops[loop_index].header for s in successors):
            return True
    return False


def _branch_lines(function: Function, block: int, line_of: LineOf) -> tuple[int, ...]:
    lines = []
    for instruction in function.blocks[block].instructions[-2:]:
        line = line_of(instruction)
        if line is not None:
            lines.append(line)
    return tuple(sorted(set(lines)))


def _block_keys(flow: ControlFlow, loop_factor: dict[int, int],
                region_guards: dict[int, list[int]]) -> dict[int, Key]:  # fmt: skip
    guards: dict[int, tuple[int, ...]] = {}
    keys: dict[int, Key] = {}
    innermost = flow.innermost_loop
    for block in flow.reachable_order:  # a block's immediate dominator comes before it
        parent = flow.idom[block]
        own = region_guards.get(block)
        if parent >= 0 and own is None and innermost[block] == innermost[parent]:
            guards[block] = guards[parent]  # the same loops and guards: the same key
            keys[block] = keys[parent]
            continue
        inherited = guards.get(parent, ()) if parent >= 0 else ()
        guards[block] = inherited + tuple(own or ())
        loops = tuple(loop_factor[index] for index in flow.loops_of(block))
        keys[block] = tuple(sorted(loops + guards[block]))
    return keys


def _collect(
    function: Function,
    flow: ControlFlow,
    values: FunctionValues,
    factors: list[Factor],
    keys: dict[int, Key],
    divergent_blocks: set[int],
    unknown_lines: list[int],
    line_of: LineOf,
    function_names: frozenset[str],
    notable: tuple[tuple[int, ...], ...],
    arch: str,
    shared_offset: Mapping[str, int | None] | None,
) -> FunctionSummary:
    grouped_instructions: dict[Key, list[tuple[Instruction, ...]]] = {}  # counted once per key
    extra: dict[Key, list[float]] = {}  # counts that depend on operands, not the opcode
    # Identical accesses (unrolled code repeats one line many times) merge into one site; the
    # fields are kept as a plain tuple until the end, when the merged sites are built once.
    sites: dict[tuple[object, ...], list[Any]] = {}  # merge key -> [fields, count]
    static: dict[str, _StaticAccess | None] = {}  # by opcode spelling
    calls: list[CallSite] = []
    uses_tid: set[str] = set()
    divergence_lines: set[int] = set()
    full_opcode = itemgetter(_SPELLING)
    blocks = function.blocks
    costs: dict[str, tuple[float, float]] = {}

    def cost(spelling: str) -> tuple[float, float]:
        known = costs.get(spelling)
        if known is None:
            slots = oc.classify(*split_opcode(spelling), arch)[oc.ISSUE_SLOTS]
            known = costs[spelling] = issue_cost(spelling, slots)
        return known

    def slots_of(instruction: Instruction) -> float:
        return oc.classify(*split_opcode(instruction.full_opcode), arch)[oc.ISSUE_SLOTS]

    predicated = if_converted(function, flow, slots_of)
    predicated_blocks = predicated.inside()
    # Blocks scheduled with their leader count there when they also weigh as much (one key).
    schedules = {lead: tuple(b for b in rest if keys.get(b) == keys.get(lead))
                 for lead, rest in predicated.schedules.items()}  # fmt: skip
    scheduled_elsewhere = {b for rest in schedules.values() for b in rest}
    for block in flow.reachable_order:
        key = keys[block]
        instructions = blocks[block].instructions
        grouped = grouped_instructions.get(key)
        if grouped is None:
            grouped = grouped_instructions[key] = []
            extra[key] = [0.0] * oc.VECTOR_LENGTH
        vector = extra[key]
        grouped.append(instructions)
        region = predicated.regions.get(block)
        dropped = _dropped_branch(instructions, block in predicated_blocks or region is not None)
        if dropped is not None:
            # ptxas predicates the skipped instructions: the branch issues nothing.
            for position, amount in enumerate(oc.classify(*split_opcode(dropped.full_opcode),
                                                          arch)):  # fmt: skip
                vector[position] -= amount
        together = schedules.get(block)
        if together is not None:  # one schedule with the blocks predicated into it
            vector[oc.CHAIN_CYCLES] += schedule_cycles(
                _without_branches(instructions, *(blocks[b].instructions for b in together)),
                cost)  # fmt: skip
        elif block not in scheduled_elsewhere:
            vector[oc.CHAIN_CYCLES] += schedule_cycles(instructions, cost)
        merged = NOTHING_MERGED
        if shared_offset is not None:
            merged = _vectorized(instructions, notable[block], block, values, shared_offset,
                                 static)  # fmt: skip
        for index in notable[block]:
            instruction = instructions[index]
            if index in merged.absorbed:
                # Issued as part of an earlier instruction's wider access: no request, no slot.
                vector[oc.ISSUE_SLOTS] -= slots_of(instruction)
                continue
            opcode = instruction.opcode
            if opcode == "mov":
                source = instruction.operands[1] if len(instruction.operands) > 1 else None
                if isinstance(source, SpecialRegister) and source.name.startswith("tid."):
                    uses_tid.add(source.name[-1])
            elif opcode == "call":
                callee = _callee(instruction, function_names)
                if callee is not None:
                    line = line_of(instruction)
                    calls.append(CallSite(callee, key, (line,) if line is not None else ()))
            else:
                fields = _site(instruction, block, index, values, key, line_of, vector, static)
                wider = merged.leaders.get(index)
                if fields is not None and wider is not None:
                    fields = _widened(fields, wider)
                if fields is not None:
                    # Lane coefficient tuples are shared per distinct pattern (see
                    # `FunctionValues.describe`): their identity stands for their value.
                    space, store, operation, width, kind, lane, offset, lines, _, copy, base = (
                        fields
                    )
                    merge = (space, store, operation, width, kind, id(lane),
                             offset % SECTOR_BYTES, lines, key, copy, base)  # fmt: skip
                    known = sites.get(merge)
                    if known is None:
                        sites[merge] = [fields, 1.0, {offset}]
                    else:  # the latest occurrence describes the merged site
                        known[0] = fields
                        known[1] += 1.0
                        if len(known[2]) <= MAX_COPY_OFFSETS:
                            known[2].add(offset)
        if block in divergent_blocks and dropped is None:
            vector[oc.DIVERGENT_BRANCHES] += 1.0
            branch_line = line_of(instructions[-1])
            if branch_line is not None:
                divergence_lines.add(branch_line)
    groups: dict[Key, tuple[float, ...]] = {}
    classes: dict[str, list[tuple[int, float]]] = {}  # spelling -> its nonzero counts
    for key, blocks_of_key in grouped_instructions.items():
        counter = Counter(map(full_opcode, chain.from_iterable(blocks_of_key)))
        totals = list(extra[key])
        for spelling, count in counter.items():
            nonzero = classes.get(spelling)
            if nonzero is None:
                classified = oc.classify(*split_opcode(spelling), arch)
                nonzero = classes[spelling] = [(i, a) for i, a in enumerate(classified) if a]
            for position, amount in nonzero:
                totals[position] += amount * count
        groups[key] = tuple(totals)
    return FunctionSummary(
        name=function.name,
        factors=tuple(factors),
        groups=tuple(groups.items()),
        sites=tuple(_build_site(fields, count, offsets, function.name, values)
                    for fields, count, offsets in sites.values()),
        calls=tuple(calls),
        divergence_lines=tuple(sorted(divergence_lines)),
        unknown_branch_lines=tuple(unknown_lines),
        uses_tid=frozenset(uses_tid),
        irreducible=flow.irreducible,
    )


# StaticSite's fields up to `key`, then `async_copy` and the address base's number (-1: none):
# (space, is_store, operation, width_bytes, kind, lane_coefficients, offset, lines, key,
# async_copy, base).
_SiteFields = tuple[
    MemorySpace, bool, str, int, AddressKind, "LaneCoefficients | None", int, tuple[int, ...],
    Key, bool, int,
]  # fmt: skip


class _StaticAccess(NamedTuple):
    """What an access's opcode and modifiers alone say about it."""

    space: MemorySpace
    is_store: bool
    operation: str
    width: int


_NOT_SEEN = _StaticAccess("global", False, "", 0)  # stands for "not looked up yet"


def _build_site(fields: _SiteFields, count: float, offsets: set[int], function: str,
                values: FunctionValues) -> StaticSite:  # fmt: skip
    space, is_store, operation, width, kind, lane, offset, lines, key, async_copy, base = fields
    kept = tuple(sorted(offsets)) if len(offsets) <= MAX_COPY_OFFSETS else None
    return StaticSite(space, is_store, operation, width, kind, lane, offset, lines, key,
                      accesses=count, async_copy=async_copy, copy_offsets=kept,
                      base=f"{function}:{base}" if base >= 0 else "",
                      block_coefficients=values.base_block_strides(base),
                      lane_functions=values.base_lane_functions(base))  # fmt: skip


def _static_access(instruction: Instruction) -> _StaticAccess | None:
    space = memory_space(instruction)
    if space is None or space == "param":
        return None
    opcode = instruction.opcode
    is_store = opcode in ("st", "red", "sust", "stmatrix") or (
        opcode == "wmma" and instruction.modifiers[:1] == ("store",)
    )
    return _StaticAccess(space, is_store, instruction.full_opcode, access_width(instruction))


def _callee(instruction: Instruction, function_names: frozenset[str]) -> str | None:
    for operand in instruction.operands:
        if isinstance(operand, Symbol) and operand.name in function_names:
            return operand.name
    return None


def _site(
    instruction: Instruction,
    block: int,
    index: int,
    values: FunctionValues,
    key: Key,
    line_of: LineOf,
    vector: list[float],
    static: dict[str, _StaticAccess | None],
) -> _SiteFields | None:
    opcode = instruction.opcode
    if opcode == "mbarrier":
        if "expect_tx" not in instruction.modifiers:
            return None
        if len(instruction.operands) < 2:
            return None
        size = values.operand(instruction.operands[-1], block, index)
        if not size.is_constant or size.constant_term <= 0:
            return None
        # Bulk (TMA) copies announce their bytes to the barrier; count them here, once.
        width = int(size.constant_term)
        vector[oc.ASYNC_COPY_BYTES] += width
        return ("global", False, instruction.full_opcode, width, "contiguous", None, 0,
                _lines(instruction, line_of), key, True, -1)  # fmt: skip
    if opcode == "cp":
        # Whether and how much a `cp` copies depends on its operands, not only its opcode.
        access = _static_access(instruction)
        if access is None or "bulk" in instruction.modifiers:
            return None
        vector[oc.ASYNC_COPY_BYTES] += access.width
    else:
        spelling = instruction.full_opcode
        access = static.get(spelling, _NOT_SEEN)
        if access is _NOT_SEEN:
            access = static[spelling] = _static_access(instruction)
        if access is None:
            return None
    space, is_store, operation, width = access
    line = line_of(instruction)
    lines = (line,) if line is not None else ()
    if opcode == "wmma" or space == "local":
        return (space, is_store, operation, width, "contiguous", None, 0, lines, key, False, -1)
    address = address_operand(instruction)
    if address is None:
        return (space, is_store, operation, width, "unknown", None, 0, lines, key, False, -1)
    kind, coefficients, offset, base = values.describe(address, block, index)
    return (space, is_store, operation, width, kind, coefficients, offset, lines, key,
            opcode == "cp", base)  # fmt: skip


def _dropped_branch(instructions: Sequence[Instruction], predicated: bool) -> Instruction | None:
    """The block's final branch when ptxas predicates it away (`flipflop.analysis.ifconvert`)."""
    if predicated and instructions and instructions[-1].opcode == "bra":
        return instructions[-1]
    return None


def _without_branches(*parts: Sequence[Instruction]) -> list[Instruction]:
    return [instruction for part in parts for instruction in part if instruction.opcode != "bra"]


_FENCES = frozenset(("bar", "barrier", "membar", "fence", "call"))


def _vectorized(instructions: Sequence[Instruction], notable: Iterable[int], block: int,
                values: FunctionValues, shared_offset: Mapping[str, int | None],
                static: dict[str, _StaticAccess | None]) -> VectorizedBlock:  # fmt: skip
    """The block's shared loads and stores as ptxas merges them (`flipflop.analysis
    .vectorize`)."""
    accesses: list[SharedAccess] = []
    for index in notable:
        instruction = instructions[index]
        if instruction.opcode not in ("ld", "st") or "volatile" in instruction.modifiers:
            continue
        spelling = instruction.full_opcode
        access = static.get(spelling, _NOT_SEEN)
        if access is _NOT_SEEN:
            access = static[spelling] = _static_access(instruction)
        address = address_operand(instruction)
        if access is None or access.space != "shared" or address is None:
            continue
        _, _, offset, base = values.describe(address, block, index)
        poly = values.address(address, block, index)
        alignment, residue = _alignment(poly.terms, shared_offset)
        accesses.append(SharedAccess(index, access.is_store, base, offset, access.width,
                                     alignment, residue))  # fmt: skip
    if len(accesses) < 2:
        return NOTHING_MERGED
    fences = [i for i, instruction in enumerate(instructions) if instruction.opcode in _FENCES]
    return vectorize_block(accesses, fences)


def _alignment(terms: Mapping[tuple[str, ...], float],
               shared_offset: Mapping[str, int | None]) -> tuple[int, int]:  # fmt: skip
    """(the power of two, at most 16, an address's non-constant part is known modulo, what it
    is modulo that): shared variables' addresses are their layout offsets."""
    alignment, residue = CHUNK_BYTES, 0
    for monomial, coefficient in terms.items():
        if not monomial:
            continue
        if len(monomial) == 1 and monomial[0].startswith("sym:"):
            name = monomial[0][4:]
            if name in shared_offset and float(coefficient).is_integer():
                offset = shared_offset[name]  # None: dynamic, 16-byte aligned
                residue += int(coefficient) * (offset or 0)
                continue
        alignment = min(alignment, power_of_two_dividing(coefficient))
    return alignment, residue % alignment


def _widened(fields: _SiteFields, wider: MergedAccess) -> _SiteFields:
    space, is_store, operation, _, kind, lane, _, lines, key, async_copy, base = fields
    merged = (f"{'st' if is_store else 'ld'}.shared.b{8 * wider.width} "
              f"({wider.instructions}× {operation} merged by ptxas)")
    return (space, is_store, merged, wider.width, kind, lane, wider.offset, lines, key,
            async_copy, base)  # fmt: skip


def _lines(instruction: Instruction, line_of: LineOf) -> tuple[int, ...]:
    line = line_of(instruction)
    return (line,) if line is not None else ()


def _text(lines: tuple[int, ...]) -> str:
    return ", ".join(str(line) for line in lines) or "?"
