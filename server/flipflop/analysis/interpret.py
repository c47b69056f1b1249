"""Running a function's control slice for one launch: trips and guard shares by counting.

The slice (`flipflop.analysis.control`) runs for a sample of threads at once, one numpy lane
per thread: every thread of the block when the block is small, otherwise one thread drawn at
random (with a fixed seed) from each of equal strata of the block's linear thread index; and,
along each grid axis the slice reads `%ctaid` of, every block of a small grid, otherwise the
first, the last (where boundary guards differ) and the middle block of each of equal strata
between them, standing for its stratum. Threads at the same block run together; the block
with the lowest schedule position runs next, so threads that leave a loop early wait at its
exit for the others. When the slice reads the thread index and nothing else of the launch
(block sizes compiled in, as Kernel Tuner kernels have them), a thread's path is its own: the
second block shape asked for runs every thread index a block can have once, and serves every
shape after it exactly (an editor evaluates ~80).

From the weighted counts of block visits and edges:
- an assumed loop's trips per entry = visits of its header / entries from outside its body;
- an unknown branch's share = visits of its region / visits of the branch's block.

A thread that meets a branch it cannot follow (its predicate needs memory) stops, and every
target it could still reach is left as assumed; so are all targets still reachable when the
step budget runs out.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from flipflop.analysis.slice_program import (
    BlockProgram,
    Constant,
    Op,
    SliceProgram,
    Source,
    compile_slice,
)
from flipflop.analysis.slice_types import ControlSlice
from flipflop.launch import LaunchShape

MAX_LANES = 4096
"""Threads run at once (sampled threads × sampled blocks): numpy's cost per operation is flat
up to a few thousand elements, and a block has at most 1024 threads."""
MAX_STEPS = 4000
"""Block executions (of all the threads at that block together) before giving up: a few
milliseconds of numpy calls; a loop whose trips run into the thousands for every thread is
left to its assumed value rather than stalling an editor that evaluates ~80 shapes."""
_MEMO_ENTRIES = 4096  # a launch shape each: an LRU smaller than a sweep would miss on every shape
_POINTER_SPACING = 1 << 40  # stand-in addresses: parameters far apart, never null
_SYMBOL_SPACING = 1 << 24  # variables 16 MB apart, inside 32-bit shared-memory addresses

Array = Any  # numpy arrays of int64 (values) or bool (predicates); numpy's typing is partial here
Program = Callable[[Array], None]


@dataclass(frozen=True)
class Interpretation:
    """What running the slice found for one launch, by the function's own factor index."""

    values: tuple[tuple[int, float, str], ...]  # (factor, value, how it was counted)
    failed: tuple[tuple[int, str], ...]  # (factor, why it stays assumed)
    threads: int  # sampled threads per block
    blocks: int  # sampled blocks
    steps: int


def interpret(control: ControlSlice, shape: LaunchShape, env: Mapping[str, float],
              values: Sequence[float]) -> Interpretation:  # fmt: skip
    """The slice's targets for a launch, cached on the slice by what they depend on.
    `values` are the kernel's factors from their expressions: when the derived loops around
    a target alone reach it more often than the step budget allows, nothing is run."""
    if not control.targets:
        return Interpretation((), (), 0, 0, 0)
    too_long = control.entries_at_least(values) > MAX_STEPS
    key = (_memo_key(control, shape, env), too_long)
    entries = control.memo.entries
    known = entries.get(key)
    if isinstance(known, Interpretation):
        entries.move_to_end(key)
        return known
    if too_long:
        result = _failed(control, tuple(range(control.targets)), _why(MAX_STEPS))
    else:
        result = _from_sweep(control, shape, env) or _run(control, shape, env)
    entries[key] = result
    if len(entries) > _MEMO_ENTRIES:
        entries.popitem(last=False)
    return result


def _memo_key(control: ControlSlice, shape: LaunchShape, env: Mapping[str, float]) -> object:
    grid: tuple[int, ...] = ()
    if control.reads("special", ("ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y",
                                 "nctaid.z")):  # fmt: skip
        grid = shape.grid
    return shape.block, grid, tuple(env.get(name) for name in control.params)


# --------------------------------------------------------------------------- block sweeps

_THREAD_INDICES = frozenset(("tid.x", "tid.y", "tid.z"))
_MAX_SWEEP_LANES = 1 << 15


@dataclass(frozen=True)
class _Sweep:
    """Every thread index a block of up to 1024 threads can have, run once, with each lane's
    own tallies: when the slice reads no block size, grid or block index, a thread's path
    depends only on its own index, so any block's counts are sums over its threads."""

    index: tuple[Array | None, Array | None, Array | None]  # per axis read, the lanes' index
    tallies: Array  # tallies x lanes
    steps: int

    def serve(self, control: ControlSlice, block: tuple[int, int, int]) -> Interpretation:
        inside = np.ones(self.tallies.shape[1], dtype=bool)
        for index, extent in zip(self.index, block, strict=True):
            if index is not None:
                inside &= index < extent
        sums = self.tallies @ inside.astype(np.int64)
        threads = block[0] * block[1] * block[2]
        return _results(control, sums.tolist(), 0, threads, 1, self.steps)


def _from_sweep(
    control: ControlSlice, shape: LaunchShape, env: Mapping[str, float]
) -> Interpretation | None:
    """The launch's counts from a sweep of every thread index, once a second block shape of
    the same launch context asks (an editor evaluating ~80 shapes of one kernel); None when
    the slice reads more than the thread index, or for the first shape."""
    if not control.specials <= _THREAD_INDICES or _missing_parameter(control, env) is not None:
        return None
    context = ("sweep", tuple(env.get(name) for name in control.params))
    entries = control.memo.entries
    sweep = entries.get(context)
    if sweep is None:
        first = entries.setdefault(("first block", context), shape.block)
        if first == shape.block:
            return None
        sweep = entries[context] = _sweep(control, env) or False
    entries.move_to_end(context)
    return sweep.serve(control, shape.block) if isinstance(sweep, _Sweep) else None


def _sweep(control: ControlSlice, env: Mapping[str, float]) -> _Sweep | None:
    read = [f"tid.{axis}" in control.specials for axis in "xyz"]
    limits = (1024, 1024, 64)  # CUDA's per-dimension block limits; 1024 threads in all
    points: list[tuple[int, int, int]] = [(0, 0, 0)]
    for axis in range(3):
        if not read[axis]:
            continue
        grown = []
        for point in points:
            room = 1024 // ((point[0] + 1) * (point[1] + 1) * (point[2] + 1))
            for value in range(min(limits[axis], room)):
                moved = list(point)
                moved[axis] = value
                grown.append((moved[0], moved[1], moved[2]))
        points = grown
        if len(points) > _MAX_SWEEP_LANES:
            return None
    coordinates = np.array(points, dtype=np.int64).T
    program, closures = _compiled(control)
    ctaid = [np.zeros(coordinates.shape[1], dtype=np.int64)] * 3
    shape = LaunchShape((1, 1, 1), (1, 1, 1))  # the slice reads neither
    state, zeros = _initial_state(program, shape, env, list(coordinates), ctaid)
    tallies, failed_bits, steps = _execute(control, program, closures, state, zeros, None)
    if failed_bits:
        return None
    index = tuple(coordinates[axis] if read[axis] else None for axis in range(3))
    return _Sweep((index[0], index[1], index[2]), tallies, steps)


# --------------------------------------------------------------------------- running


def _missing_parameter(control: ControlSlice, env: Mapping[str, float]) -> str | None:
    for name in control.params:
        if name not in env and name not in control.pointer_params:
            return name
    return None


def _run(control: ControlSlice, shape: LaunchShape, env: Mapping[str, float]) -> Interpretation:
    missing = _missing_parameter(control, env)
    if missing is not None:
        reason = f"needs the value of parameter {missing}"
        return _failed(control, tuple(range(control.targets)), reason)
    program, closures = _compiled(control)
    blocks, block_weights = _block_sample(control, shape.grid)
    threads, thread_weights = _thread_sample(shape.block, max(64, MAX_LANES // len(block_weights)))
    weight = np.repeat(block_weights, len(thread_weights)) * np.tile(
        thread_weights, len(block_weights)
    )
    tid = [np.tile(axis, len(block_weights)) for axis in threads]
    ctaid = [np.repeat(axis, len(thread_weights)) for axis in blocks]
    state, zeros = _initial_state(program, shape, env, tid, ctaid)
    tallies, failed_bits, steps = _execute(control, program, closures, state, zeros, weight)
    return _results(control, tallies, failed_bits, len(thread_weights), len(block_weights), steps)


def _initial_state(program: SliceProgram, shape: LaunchShape, env: Mapping[str, float],
                   tid: list[Array], ctaid: list[Array]) -> tuple[list[Array], Array]:  # fmt: skip
    """The register file over the lanes (one array per slot; slots never written share one
    array of zeros), its inputs filled in."""
    lanes = tid[0].size
    bx, by, bz = shape.block
    launch = {
        "tid.x": tid[0], "tid.y": tid[1], "tid.z": tid[2],
        "ctaid.x": ctaid[0], "ctaid.y": ctaid[1], "ctaid.z": ctaid[2],
        "ntid.x": bx, "ntid.y": by, "ntid.z": bz,
        "nctaid.x": shape.grid[0], "nctaid.y": shape.grid[1], "nctaid.z": shape.grid[2],
        "laneid": (tid[0] + bx * (tid[1] + by * tid[2])) % 32,
    }  # fmt: skip
    zeros = np.zeros(lanes, dtype=np.int64)
    state: list[Array] = [zeros] * program.slots
    pointers = symbols = 0
    for item in program.inputs:
        if item.kind == "special":
            state[item.slot] = np.broadcast_to(launch[item.name], (lanes,)).astype(np.int64)
        elif item.kind == "symbol":
            symbols += 1
            state[item.slot] = np.full(lanes, symbols * _SYMBOL_SPACING, dtype=np.int64)
        elif item.name in env:
            state[item.slot] = np.full(lanes, _to_int64(env[item.name]), dtype=np.int64)
        else:  # a pointer parameter the launch did not give
            pointers += 1
            state[item.slot] = np.full(lanes, pointers * _POINTER_SPACING, dtype=np.int64)
    return state, zeros


def _execute(control: ControlSlice, program: SliceProgram, closures: list[list[Program]],
             state: list[Array], zeros: Array, weight: Array | None,
             ) -> tuple[Any, int, int]:  # fmt: skip
    """Runs the lanes to the end. Tallies, by the weights of the lanes: block visits of the
    loop headers and guarded branches, and the edges into a loop from outside its body and
    into a guard's region. Without weights, every lane's own tallies (a tallies × lanes array)
    instead. Returns (tallies, bits of the targets left unresolved, steps)."""
    order = control.order
    programs = program.blocks
    block_at = {position: block for block, position in enumerate(order) if position >= 0}
    loop_count = len(control.loops)
    tallies = [0.0] * (2 * loop_count + 2 * len(control.guards))
    visit_tally: dict[int, list[int]] = {}
    for index, loop in enumerate(control.loops):
        visit_tally.setdefault(loop.header, []).append(2 * index)
    edge_tally: dict[tuple[int, int], int] = {}
    for index, loop in enumerate(control.loops):
        for block in range(len(order)):
            code = programs[block]
            if block in loop.body or code is None:
                continue
            for target in (code.end.taken, code.end.fallthrough):
                if target == loop.header:
                    edge_tally[(block, target)] = 2 * index + 1
    for index, guard in enumerate(control.guards):
        visit_tally.setdefault(guard.branch, []).append(2 * (loop_count + index))
        edge_tally[(guard.branch, guard.region)] = 2 * (loop_count + index) + 1
    everyone = zeros.size
    per_lane = np.zeros((len(tallies), everyone), dtype=np.int64) if weight is None else None
    # With equal weights (every thread of one block, or of blocks no guard tells apart) a
    # tally is a count of lanes: no sums over the weights.
    uniform = None
    if weight is not None and bool(np.all(weight == weight[0])):
        uniform = float(weight[0])

    def add(tally: int, lanes: Array) -> None:
        if per_lane is not None:
            per_lane[tally][lanes] += 1
        elif uniform is not None:
            tallies[tally] += lanes.size * uniform
        else:
            tallies[tally] += float(weight[lanes].sum())  # type: ignore[index]

    for index, loop in enumerate(control.loops):
        if loop.header == control.entry:
            add(2 * index + 1, np.arange(everyone))  # entered at the very start

    # Lanes waiting at each block, by its schedule position; the lowest position runs next,
    # every lane waiting there at once.
    every_lane = np.arange(everyone)
    waiting: dict[int, list[Array]] = {order[control.entry]: [every_lane]}
    queue = [order[control.entry]]

    def send(block: int, lanes: Array) -> None:
        position = order[block] if block >= 0 else -1
        if position < 0 or lanes.size == 0:
            return  # the thread is done, or cannot reach a target any more
        group = waiting.get(position)
        if group is None:
            waiting[position] = [lanes]
            heapq.heappush(queue, position)
        else:
            group.append(lanes)

    failed_bits = 0
    steps = 0
    while queue:
        current = heapq.heappop(queue)
        parts = waiting.pop(current)
        block = block_at[current]
        if steps >= MAX_STEPS:
            for position in (current, *queue):
                failed_bits |= control.reach[block_at[position]]
            break
        steps += 1
        lanes = parts[0] if len(parts) == 1 else np.concatenate(parts)
        code = programs[block]
        assert code is not None
        columns = code.columns
        together = lanes.size == everyone
        if together:  # all lanes at this block: the slots' own arrays, no copies
            lanes = every_lane  # in lane order, as those arrays are
            registers = [state[column] for column in columns]
        else:
            registers = [state[column][lanes] for column in columns]
        before = list(registers) if together else None
        for op in closures[block]:
            op(registers)
        for local in code.written:
            column = columns[local]
            value = registers[local]
            if before is not None:
                if np.ndim(value) == 0:
                    value = np.full(everyone, value, dtype=np.int64)
                elif any(value is held for held in before):
                    value = value.copy()  # a copy of a register (`mov`): give it its own array
                state[column] = value
            else:
                if state[column] is zeros:
                    state[column] = zeros.copy()
                state[column][lanes] = value
        counted = visit_tally.get(block)
        if counted is not None:
            for tally in counted:
                add(tally, lanes)
        end = code.end
        if end.kind == "branch":
            taken = registers[end.predicate] != 0
            if end.negated:
                taken = ~taken
            went, fell = lanes[taken], lanes[~taken]
            for target, chosen in ((end.taken, went), (end.fallthrough, fell)):
                edge = edge_tally.get((block, target))
                if edge is not None:
                    add(edge, chosen)
                send(target, chosen)
        elif end.kind == "jump":
            edge = edge_tally.get((block, end.taken))
            if edge is not None:
                add(edge, lanes)
            send(end.taken, lanes)
        elif end.kind == "opaque":
            failed_bits |= control.reach[block]
    return (per_lane if per_lane is not None else tallies), failed_bits, steps


def _results(control: ControlSlice, tallies: Sequence[float], failed_bits: int, threads: int,
             blocks: int, steps: int) -> Interpretation:  # fmt: skip
    sample = f"{threads} thread(s) x {blocks} block(s)"
    measured: list[tuple[int, float, str]] = []
    failed: list[tuple[int, str]] = []
    for index, loop in enumerate(control.loops):
        visits, entries = tallies[2 * index], tallies[2 * index + 1]
        if failed_bits >> index & 1:
            failed.append((loop.factor, _why(steps)))
        elif entries == 0:
            measured.append((loop.factor, 0.0, f"interpreted for {sample}: never entered"))
        else:
            trips = visits / entries
            how = f"interpreted for {sample}: {trips:.4g} trips per entry"
            measured.append((loop.factor, trips, how))
    for index, guard in enumerate(control.guards):
        target = len(control.loops) + index
        if failed_bits >> target & 1:
            failed.append((guard.factor, _why(steps)))
            continue
        reached, passed = tallies[2 * target], tallies[2 * target + 1]
        share = passed / reached if reached else 0.0
        how = f"interpreted for {sample}: {share:.4g} of the threads reaching it"
        measured.append((guard.factor, share, how))
    return Interpretation(tuple(measured), tuple(failed), threads, blocks, steps)


def _why(steps: int) -> str:
    if steps >= MAX_STEPS:
        return f"interpreting the control flow took more than {MAX_STEPS} steps"
    return "a branch on the way depends on values loaded from memory"


def _failed(control: ControlSlice, targets: tuple[int, ...], reason: str) -> Interpretation:
    factors = [loop.factor for loop in control.loops] + [g.factor for g in control.guards]
    return Interpretation((), tuple((factors[t], reason) for t in targets), 0, 0, 0)


def _to_int64(value: float) -> int:
    number = round(value)
    return ((number + (1 << 63)) % (1 << 64)) - (1 << 63)


# --------------------------------------------------------------------------- samples


def _thread_sample(block: tuple[int, int, int], most: int) -> tuple[list[Array], Array]:
    """(tid.x, tid.y, tid.z) of at most `most` sampled threads and how many threads each
    stands for."""
    bx, by, bz = block
    total = bx * by * bz
    if total <= most:
        linear = np.arange(total, dtype=np.int64)
        weights = np.ones(total)
    else:
        strata = most
        edges = (np.arange(strata + 1, dtype=np.int64) * total) // strata
        sizes = np.diff(edges)
        draws = np.random.default_rng(0).random(strata)
        linear = edges[:-1] + np.minimum((draws * sizes).astype(np.int64), sizes - 1)
        weights = sizes.astype(np.float64)
    return [linear % bx, (linear // bx) % by, linear // (bx * by)], weights


_MAX_SAMPLED_BLOCKS = 128
_BLOCKS_PER_AXIS = tuple(
    max(3, int(_MAX_SAMPLED_BLOCKS ** (1 / axes) + 1e-9)) if axes else 1 for axes in range(4)
)
"""Blocks sampled along each grid axis whose %ctaid the slice reads, by how many axes it reads:
(1, 128, 11, 5), at most 128 blocks in all (8192 lanes at the 64 threads sampled from each). A
bounds test on a grid sized for the problem without its tiles (Kernel Tuner's default grid
divisor, the block size, with several outputs a thread) leaves a band of working blocks; each
sampled block stands for its stratum, so with 6 blocks an axis a band narrower than a stratum
was counted at 1/20 to 1.7 times its size (tests/test_control_slice.py)."""


def _axis_sample(size: int, count: int) -> list[tuple[int, float]]:
    """Block indices along one grid axis with how many blocks each stands for: every block of
    a small grid; otherwise the first and the last (where boundary guards differ) and the
    middle of each of `count - 2` equal strata of the blocks between them."""
    if size <= count:
        return [(index, 1.0) for index in range(size)]
    inner = count - 2
    edges = [1 + (size - 2) * stratum // inner for stratum in range(inner + 1)]
    middle = [((low + high - 1) // 2, float(high - low)) for low, high in pairwise(edges)]
    return [(0, 1.0), *middle, (size - 1, 1.0)]


def _block_sample(control: ControlSlice, grid: tuple[int, int, int]) -> tuple[list[Array], Array]:
    """Block indices of the sampled blocks and how many blocks each stands for."""
    read = [control.reads("special", (f"ctaid.{dim}",)) and size > 1 for dim, size in
            zip("xyz", grid, strict=True)]  # fmt: skip
    per_axis = _BLOCKS_PER_AXIS[sum(read)]
    axes: list[list[tuple[int, float]]] = []
    for size, sampled in zip(grid, read, strict=True):
        axes.append(_axis_sample(size, per_axis) if sampled else [(0, float(max(size, 1)))])
    positions: list[list[int]] = [[], [], []]
    weights: list[float] = []
    for x, wx in axes[0]:
        for y, wy in axes[1]:
            for z, wz in axes[2]:
                for axis, value in enumerate((x, y, z)):
                    positions[axis].append(value)
                weights.append(wx * wy * wz)
    return [np.array(axis, dtype=np.int64) for axis in positions], np.array(weights)


# --------------------------------------------------------------------------- compiling ops


def _compiled(control: ControlSlice) -> tuple[SliceProgram, list[list[Program]]]:
    """The slice's program, and each block's ops as Python closures over numpy: built on the
    first run, kept with the slice."""
    known = control.memo.program
    if isinstance(known, tuple):
        return known
    program = compile_slice(control)
    compiled = (program, [_compile_block(block) for block in program.blocks])
    control.memo.program = compiled
    return compiled


def _compile_block(program: BlockProgram | None) -> list[Program]:
    return [] if program is None else [_compile(op) for op in program.ops]


def _compile(op: Op) -> Program:
    compute = _COMPUTE[op.code](op)
    dest, second = op.dest, op.second_dest
    if op.guard < 0:
        if second < 0:

            def run(registers: Array) -> None:
                registers[dest] = compute(registers)

        else:

            def run(registers: Array) -> None:
                registers[dest], registers[second] = compute(registers)

        return run
    guard, negated = op.guard, op.guard_negated

    def guarded(registers: Array) -> None:
        holds = registers[guard] != 0
        if negated:
            holds = ~holds
        result = compute(registers)
        if second < 0:
            registers[dest] = np.where(holds, result, registers[dest])
        else:
            registers[dest] = np.where(holds, result[0], registers[dest])
            registers[second] = np.where(holds, result[1], registers[second])

    return guarded


def _reader(source: Source) -> Callable[[Array], Any]:
    if isinstance(source, Constant):
        value = source.value
        return lambda registers: value
    return lambda registers: registers[source]


def _readers(op: Op) -> list[Callable[[Array], Any]]:
    return [_reader(source) for source in op.sources]


def _read_as(value: Any, bits: int, signed: bool) -> Any:
    """An integer kept modulo 2^64 read as a `bits`-wide integer (uint64 for 64-bit unsigned)."""
    if bits >= 64:
        if signed:
            return value
        if isinstance(value, int):
            return np.uint64(value % (1 << 64))
        return np.asarray(value).view(np.uint64)
    if bits == 1:
        return value
    mask = (1 << bits) - 1
    if not signed:
        return value & mask
    half = 1 << (bits - 1)
    return ((value & mask) ^ half) - half


def _back(value: Any) -> Any:
    """A result to the int64 register file."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint64:
        return value.view(np.int64)
    if isinstance(value, np.unsignedinteger):
        return int(value) - (1 << 64) if int(value) >= 1 << 63 else int(value)
    return value


def _binary(function: Callable[[Any, Any], Any]) -> Callable[[Op], Callable[[Array], Any]]:
    def make(op: Op) -> Callable[[Array], Any]:
        first, second = _readers(op)
        return lambda registers: function(first(registers), second(registers))

    return make


def _typed(function: Callable[[Any, Any], Any]) -> Callable[[Op], Callable[[Array], Any]]:
    """A binary op that reads its operands at their width (comparisons, min/max, division)."""

    def make(op: Op) -> Callable[[Array], Any]:
        first, second = _readers(op)
        bits, signed = op.bits, op.signed
        return lambda registers: _back(
            function(
                _read_as(first(registers), bits, signed), _read_as(second(registers), bits, signed)
            )
        )

    return make


def _make_mov(op: Op) -> Callable[[Array], Any]:
    return _reader(op.sources[0])


def _make_mad(op: Op) -> Callable[[Array], Any]:
    a, b, c = _readers(op)
    return lambda registers: a(registers) * b(registers) + c(registers)


def _make_wide(op: Op) -> Callable[[Array], Any]:
    readers = _readers(op)
    bits, signed = op.bits, op.signed

    def wide(registers: Array) -> Any:
        product = _read_as(readers[0](registers), bits, signed) * _read_as(
            readers[1](registers), bits, signed
        )
        return product + readers[2](registers) if len(readers) == 3 else product

    return wide


def _make_mulhi(op: Op) -> Callable[[Array], Any]:
    a, b = _readers(op)
    bits, signed = op.bits, op.signed

    def high(registers: Array) -> Any:
        left, right = _read_as(a(registers), bits, signed), _read_as(b(registers), bits, signed)
        if signed:
            return (left * right) >> bits
        product = np.asarray(left).astype(np.uint64) * np.asarray(right).astype(np.uint64)
        return _back(product >> np.uint64(bits))

    return high


def _make_shift(op: Op) -> Callable[[Array], Any]:
    value, amount = _readers(op)
    bits, signed, left = op.bits, op.signed, op.code == "shl"

    def shift(registers: Array) -> Any:
        count = np.minimum(_read_as(amount(registers), 32, False), bits)
        operand = value(registers)
        if left:
            return np.where(count >= bits, 0, operand << np.minimum(count, 63))
        read = _read_as(operand, bits, signed)
        if signed:
            return read >> np.minimum(count, bits - 1)
        if bits >= 64:
            return _back(
                np.where(count >= 64, np.uint64(0), read >> np.minimum(count, 63).astype(np.uint64))
            )
        return read >> np.minimum(count, 63)

    return shift


def _divide(left: Any, right: Any) -> Any:
    """PTX integer division: truncated toward zero; a zero divisor gives 0 here."""
    zero = right == 0
    safe = np.where(zero, 1, right)
    if isinstance(left, np.uint64) or (isinstance(left, np.ndarray) and left.dtype == np.uint64):
        return np.where(zero, np.uint64(0), left // safe)
    quotient = np.abs(left) // np.abs(safe)
    return np.where(zero, 0, np.where((left < 0) != (safe < 0), -quotient, quotient))


def _remainder(left: Any, right: Any) -> Any:
    return left - _divide(left, right) * right


def _make_unary(op: Op) -> Callable[[Array], Any]:
    (a,) = _readers(op)
    bits, signed = op.bits, op.signed
    if op.code == "neg":
        return lambda registers: -a(registers)
    if op.code == "not":
        if bits == 1:
            return lambda registers: a(registers) ^ 1
        return lambda registers: ~a(registers)
    return lambda registers: np.abs(_read_as(a(registers), bits, signed))


def _make_cvt(op: Op) -> Callable[[Array], Any]:
    (a,) = _readers(op)
    source_bits, source_signed = _CVT_TYPES[op.detail]
    if source_bits >= 64:
        return a
    return lambda registers: _read_as(a(registers), source_bits, source_signed)


_CVT_TYPES = {
    f"{kind}{bits}": (bits, kind == "s") for kind in ("s", "u", "b") for bits in (8, 16, 32, 64)
}
_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}  # fmt: skip
_BOOLEANS: dict[str, Callable[[Any, Any], Any]] = {
    "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
}  # fmt: skip


def _make_setp(op: Op) -> Callable[[Array], Any]:
    readers = _readers(op)
    compare_name, _, boolean_name = op.detail.partition(".")
    compare = _COMPARISONS[compare_name]
    bits, signed = op.bits, op.signed
    pair = op.second_dest >= 0

    def setp(registers: Array) -> Any:
        holds = compare(
            _read_as(readers[0](registers), bits, signed),
            _read_as(readers[1](registers), bits, signed),
        )
        complement = np.logical_not(holds) if pair else None
        if boolean_name:
            other = readers[2](registers) != 0
            combine = _BOOLEANS[boolean_name]
            holds = combine(holds, other)
            if pair:
                complement = combine(complement, other)
        return (holds, complement) if pair else holds

    return setp


def _make_selp(op: Op) -> Callable[[Array], Any]:
    a, b, p = _readers(op)
    return lambda registers: np.where(p(registers) != 0, a(registers), b(registers))


_COMPUTE: dict[str, Callable[[Op], Callable[[Array], Any]]] = {
    "mov": _make_mov,
    "add": _binary(lambda a, b: a + b),
    "sub": _binary(lambda a, b: a - b),
    "mul": _binary(lambda a, b: a * b),
    "and": _binary(lambda a, b: a & b),
    "or": _binary(lambda a, b: a | b),
    "xor": _binary(lambda a, b: a ^ b),
    "min": _typed(np.minimum),
    "max": _typed(np.maximum),
    "div": _typed(_divide),
    "rem": _typed(_remainder),
    "mad": _make_mad,
    "mulwide": _make_wide,
    "madwide": _make_wide,
    "mulhi": _make_mulhi,
    "shl": _make_shift,
    "shr": _make_shift,
    "neg": _make_unary,
    "not": _make_unary,
    "abs": _make_unary,
    "cvt": _make_cvt,
    "setp": _make_setp,
    "selp": _make_selp,
}
