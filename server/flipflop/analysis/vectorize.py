"""ptxas's merging of neighbouring shared-memory accesses into 64- and 128-bit ones.

Unrolled tiles load a thread's operands as runs of `ld.shared.f32` at consecutive constant
offsets from one base register (CLBlast's GEMM: 32 or 40 `ld.shared` a k-step pair); ptxas issues
them as twelve LDS.128. What the model charges a warp request (its wavefronts, at least
`rates.l1_request_cycles`, and an issue slot) is then charged per machine instruction, not per
PTX one. The rules below are what ptxas 13.0 does on sm_75 and sm_86, read with nvdisasm from
`tests/model_kernels/shared_vectorize.cu` (a kernel per rule; `tests/test_shared_vectorize.py`
compares the model with the machine code ptxas makes of each):

- only 4-byte words merge (f32/b32/u32/s32 and their vectors); bytes and halves do not;
- accesses close together in the run (`MAX_APART`) inside one aligned 16-byte chunk, whose
  words form one contiguous stretch, become one access: two words inside one aligned 8-byte
  half an 8-byte access, anything longer the whole 16 bytes (three words at offsets 4-15 are
  read as one LDS.128 from offset 0); words with a gap between them stay apart;
- a run of loads ends at a barrier or fence and at any shared store; a run of stores at a
  barrier or fence and at any shared load;
- the chunks are those of the absolute address, which must be known modulo 16 (modulo 8 for an
  8-byte merge): every non-constant term of the address a multiple of it, but a shared
  variable's address, which is its offset in ptxas's layout (declared order, each at its
  declared alignment, the first at 0: `shared_offsets`; dynamic shared memory starts 16-byte
  aligned after them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from flipflop.fast_init import fast_init
from flipflop.ir import Variable

CHUNK_BYTES = 16
WORD_BYTES = 4
# Accesses to one chunk this many places apart among a run's accesses, or closer, merge:
# one apart do (`second_array`), sixteen apart do not (`far_apart`).
MAX_APART = CHUNK_BYTES // WORD_BYTES


@fast_init
@dataclass(frozen=True)
class SharedAccess:
    """One `ld.shared`/`st.shared` of a basic block, in program order."""

    index: int  # in the block
    is_store: bool
    base: int  # addresses of one base differ only in `offset`
    offset: int  # constant byte offset from the base
    width: int  # bytes per lane
    alignment: int  # the power of two (at most CHUNK_BYTES) the base is known modulo
    residue: int = 0  # the base modulo `alignment`


@fast_init
@dataclass(frozen=True)
class MergedAccess:
    """The access ptxas issues for a run of PTX accesses: where, how wide, how many it is."""

    offset: int
    width: int
    instructions: int


@dataclass(frozen=True)
class VectorizedBlock:
    """A block's shared accesses as ptxas issues them."""

    leaders: Mapping[int, MergedAccess]  # instruction index -> the access it stands for
    absorbed: frozenset[int]  # instructions issued as part of a leader's access


NOTHING_MERGED = VectorizedBlock({}, frozenset())


def vectorize_block(accesses: Sequence[SharedAccess], fences: Iterable[int]) -> VectorizedBlock:
    """Merge a block's shared accesses (`fences`: indices of its barriers and fences)."""
    fence_at = sorted(fences)
    open_runs: dict[tuple[bool, int], list[SharedAccess]] = {}  # (store, base) -> run
    runs: list[list[SharedAccess]] = []
    next_fence = 0
    for access in accesses:
        if next_fence < len(fence_at) and fence_at[next_fence] < access.index:
            while next_fence < len(fence_at) and fence_at[next_fence] < access.index:
                next_fence += 1
            runs.extend(open_runs.values())
            open_runs = {}
        for key in [key for key in open_runs if key[0] != access.is_store]:
            runs.append(open_runs.pop(key))  # ptxas does not move a load past a store
        open_runs.setdefault((access.is_store, access.base), []).append(access)
    runs.extend(open_runs.values())
    leaders: dict[int, MergedAccess] = {}
    absorbed: set[int] = set()
    for run in runs:
        if len(run) > 1:
            _merge_run(run, leaders, absorbed)
    if not leaders:
        return NOTHING_MERGED
    return VectorizedBlock(leaders, frozenset(absorbed))


def _merge_run(run: list[SharedAccess], leaders: dict[int, MergedAccess],
               absorbed: set[int]) -> None:  # fmt: skip
    alignment = min(access.alignment for access in run)
    if alignment < 2 * WORD_BYTES or any(a.width % WORD_BYTES or a.offset % WORD_BYTES
                                         for a in run):  # fmt: skip
        return
    residue = run[0].residue % alignment
    if any(a.residue % alignment != residue for a in run):
        return
    groups: list[tuple[int, list[SharedAccess]]] = []  # (chunk, accesses close together)
    open_group: dict[int, tuple[int, list[SharedAccess]]] = {}  # chunk -> (last position, group)
    for position, access in enumerate(run):
        first = (residue + access.offset) // CHUNK_BYTES
        last = (residue + access.offset + access.width - 1) // CHUNK_BYTES
        if first != last:  # across chunks (an unaligned vector): issued as written
            continue
        known = open_group.get(first)
        if known is not None and position - known[0] <= MAX_APART:
            known[1].append(access)
            open_group[first] = (position, known[1])
        else:
            group: list[SharedAccess] = [access]
            groups.append((first, group))
            open_group[first] = (position, group)
    for chunk, members in groups:
        if len(members) < 2:
            continue
        words = sorted({word for a in members for word in range(
            (residue + a.offset) // WORD_BYTES, (residue + a.offset + a.width) // WORD_BYTES)})
        if words[-1] - words[0] + 1 != len(words):
            continue  # a gap: ptxas keeps the accesses apart
        start = words[0] * WORD_BYTES
        end = (words[-1] + 1) * WORD_BYTES
        pair = 2 * WORD_BYTES
        if end - start <= pair and start // pair == (end - 1) // pair:
            offset, width = start, pair
        elif alignment >= CHUNK_BYTES:
            offset, width = chunk * CHUNK_BYTES, CHUNK_BYTES
        else:
            continue
        if width <= max(a.width for a in members):
            continue
        leader, *rest = sorted(members, key=lambda a: a.index)
        leaders[leader.index] = MergedAccess(offset - residue, width, len(members))
        absorbed.update(a.index for a in rest)


def power_of_two_dividing(value: float, cap: int = CHUNK_BYTES) -> int:
    """The largest power of two (at most `cap`) dividing an integer `value`; 1 for a
    fraction; `cap` for 0."""
    if not float(value).is_integer():
        return 1
    number = int(value)
    if number == 0:
        return cap
    return min(cap, number & -number)


def shared_offsets(variables: Iterable[Variable]) -> dict[str, int | None]:
    """Per shared variable, its byte offset in ptxas's layout of the declarations in order,
    each at its declared alignment; None for an unsized (dynamic) one, which starts 16-byte
    aligned after the others."""
    offsets: dict[str, int | None] = {}
    offset = 0
    for variable in variables:
        if variable.space != "shared":
            continue
        size = variable.size_bytes
        if size is None:
            offsets[variable.name] = None
            continue
        align = max(1, variable.align or 1)
        offset = -(-offset // align) * align
        offsets[variable.name] = offset
        offset += size
    return offsets
