"""Memory access sites: where each load/store goes and how a warp's lanes spread over memory.

Global memory is served in 32-byte sectors; a warp request costs as many sectors as its 32
lanes touch (CUDA C++ Best Practices Guide, "Coalesced Access to Global Memory"). Shared memory
has 32 banks of 4 bytes; a request takes as many wavefronts as the most distinct 4-byte words
any one bank must serve (the same word is broadcast). Accesses wider than 4 bytes are served
in phases of 128 bytes (half a warp for 8-byte, a quarter for 16-byte accesses), each phase
conflict-free at best (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x+).
L1 is the same banked array: a global load it serves is costed at the wavefronts its lanes'
banks take, as a shared load at those addresses (`evaluate_site`).

Lane addresses come from the address's coefficients of `tid.x/y/z` and `laneid`: lane l of a
warp is thread `warp·32 + l` of the block, x fastest. Base pointers are taken as 256-byte
aligned (cudaMalloc); only the numeric constant offset shifts sectors.

Assumptions, reported where used:
- an address computed from loaded data (indirect) touches one sector per lane;
- an address whose lane dependence the analysis cannot follow is taken as coalesced;
- a lane stride that needs a parameter the caller did not give is taken as ≥ 32 bytes
  (one sector per lane).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

from flipflop.analysis import expr as ex
from flipflop.analysis.lanes import EvaluatedFunction, LaneFunction, decode, function_value
from flipflop.analysis.opclass import TYPE_BYTES, data_type, mma_shape
from flipflop.analysis.poly import DATA, LANE_ACROSS, LANE_ROWS, Monomial, Poly, atom_taint
from flipflop.analysis.work import AccessPattern, MemorySpace
from flipflop.fast_init import fast_init
from flipflop.ir import Address, Immediate, Instruction

SECTOR_BYTES = 32
BANKS = 32
BANK_BYTES = 4
BANK_ROW_BYTES = BANKS * BANK_BYTES  # one 128-byte line: every bank once
WARP = 32

# "uniform_data": affine plus an offset loaded from memory that is the same for every lane;
# "row_data": the same, but the offset follows tid.y/tid.z (one per row of the block).
AddressKind = Literal["affine", "uniform", "indirect", "unknown", "contiguous", "uniform_data",
                      "row_data"]  # fmt: skip
LaneCoefficients = tuple[ex.Expr, ex.Expr, ex.Expr, ex.Expr]  # of tid.x, tid.y, tid.z, laneid
BlockCoefficients = tuple[ex.Expr, ex.Expr, ex.Expr]  # of ctaid.x, ctaid.y, ctaid.z
_SPACES: dict[str, MemorySpace] = {
    "global": "global", "shared": "shared", "shared::cta": "shared", "shared::cluster": "shared",
    "local": "local", "const": "const", "param": "param",
}  # fmt: skip
_LANE_ATOMS = ("tid.x", "tid.y", "tid.z", "laneid")
_LANE_SET = frozenset(_LANE_ATOMS)
_BLOCK_INDEX_ATOMS = ("ctaid.x", "ctaid.y", "ctaid.z")
_MEMORY_OPCODES = frozenset(("ld", "ldu", "st", "atom", "red", "tex", "tld4", "suld", "sust",
                             "ldmatrix", "stmatrix", "wmma", "cp"))  # fmt: skip


@dataclass(frozen=True)
class StaticSite:
    """One memory instruction (or several identical ones) before the launch shape is known."""

    space: MemorySpace
    is_store: bool
    operation: str  # e.g. "ld.global.v4.f32"
    width_bytes: int  # per lane and access
    kind: AddressKind
    lane_coefficients: LaneCoefficients | None
    offset: int  # numeric constant part of the address
    lines: tuple[int, ...]
    key: tuple[int, ...]  # weight factors
    accesses: float = 1.0  # identical instructions merged into this site
    async_copy: bool = False
    # The distinct constant offsets of the merged instructions (unrolled copies), ascending,
    # for the block's footprint; None when there were more than `MAX_COPY_OFFSETS`.
    copy_offsets: tuple[int, ...] | None = None
    # Which address base the site is from ("function:number"): sites of one base differ only
    # in their constant offsets ("" when there is no such base).
    base: str = ""
    # Bytes the address moves from one block to the next along each grid axis; None when it is
    # not a plain function of the block index.
    block_coefficients: BlockCoefficients | None = None
    # Terms of the address that divide a thread index by a constant or take it modulo one
    # (`flipflop.analysis.lanes`), added to what `lane_coefficients` give.
    lane_functions: tuple[LaneFunction, ...] = ()

    # Most addresses move by constant bytes per thread and per block: those are read once,
    # not evaluated for every launch.
    @cached_property
    def constant_lane_strides(self) -> tuple[int, int, int, int] | None:
        """`lane_coefficients` in bytes when none depends on the launch, else None."""
        strides = _constant_strides(self.lane_coefficients)
        if strides is None:
            return None
        cx, cy, cz, cl = strides
        return cx, cy, cz, cl

    @cached_property
    def constant_block_strides(self) -> tuple[int, int, int] | None:
        """`block_coefficients` in bytes when none depends on the launch, else None."""
        strides = _constant_strides(self.block_coefficients)
        if strides is None:
            return None
        x, y, z = strides
        return x, y, z

    def lane_strides(self, env: Mapping[str, float]) -> tuple[int, int, int, int]:
        """`lane_coefficients` in bytes for a launch (the site has them); MissingSymbol when
        one needs a parameter `env` lacks."""
        constant = self.constant_lane_strides
        if constant is not None:
            return constant
        assert self.lane_coefficients is not None
        cx, cy, cz, cl = (round(c.evaluate(env)) for c in self.lane_coefficients)
        return cx, cy, cz, cl

    def block_strides(self, env: Mapping[str, float]) -> tuple[int, int, int]:
        """`block_coefficients` in bytes for a launch (the site has them), as `lane_strides`."""
        constant = self.constant_block_strides
        if constant is not None:
            return constant
        assert self.block_coefficients is not None
        x, y, z = (round(c.evaluate(env)) for c in self.block_coefficients)
        return x, y, z


def _constant_strides(coefficients: tuple[ex.Expr, ...] | None) -> tuple[int, ...] | None:
    if coefficients is None or not all(isinstance(c, ex.Const) for c in coefficients):
        return None
    return tuple(round(c.evaluate({})) for c in coefficients)


@fast_init
@dataclass(frozen=True)
class SiteShape:
    """A site evaluated for one block shape: per access of one thread."""

    pattern: AccessPattern
    sectors: float  # per thread and access (global/local)
    # Shared and L1-cached loads: wavefronts per request over the conflict-free count.
    bank_conflict_degree: float
    stride_bytes: int | None
    assumed: str | None  # the assumption used, if any
    # Shared and L1-cached loads: wavefronts one warp request takes in the banked data array,
    # the phases of a wide access included; 0 means not known (shared: a conflict-free
    # request, `conflict_free_wavefronts`; global: one per register returned).
    wavefronts: float = 0.0


def memory_space(instruction: Instruction) -> MemorySpace | None:
    opcode = instruction.opcode
    if opcode not in _MEMORY_OPCODES:
        return None
    if opcode in ("tex", "tld4", "suld", "sust"):
        return "tex"
    if opcode in ("ldmatrix", "stmatrix"):
        return "shared"
    if opcode == "cp":
        copies = "async" in instruction.modifiers and len(_addresses(instruction)) >= 2
        return "global" if copies else None  # commit_group/wait_group move nothing
    if opcode == "wmma" and instruction.modifiers[:1] not in (("load",), ("store",)):
        return None
    for modifier in instruction.modifiers:
        space = _SPACES.get(modifier)
        if space is not None:
            return space
    return "generic"


def access_width(instruction: Instruction) -> int:
    modifiers = instruction.modifiers
    if instruction.opcode == "wmma":
        return _wmma_bytes(modifiers)
    if instruction.opcode in ("ldmatrix", "stmatrix"):
        count = next((int(m[1:]) for m in modifiers if m in ("x1", "x2", "x4")), 1)
        return 4 * count
    if instruction.opcode == "cp":
        size = next((o for o in instruction.operands[2:3] if isinstance(o, Immediate)), None)
        return int(size.value) if size is not None else 16
    kind = data_type(modifiers)
    width = TYPE_BYTES.get(kind or "", 4)
    for modifier in modifiers:
        if modifier in ("v2", "v4", "v8"):
            width *= int(modifier[1])
    return width


def _wmma_bytes(modifiers: tuple[str, ...]) -> int:
    shape = mma_shape(modifiers)
    kind = data_type(modifiers)
    if shape is None or kind is None:
        return 16
    m, n, k = shape
    matrix = modifiers[1] if len(modifiers) > 1 else "c"
    elements = {"a": m * k, "b": k * n}.get(matrix, m * n)
    return max(1, elements * TYPE_BYTES.get(kind, 2) // WARP)


def _addresses(instruction: Instruction) -> list[Address]:
    return [o for o in instruction.operands if isinstance(o, Address)]


def address_operand(instruction: Instruction) -> Address | None:
    """The memory operand; for `cp.async` the global source (the second address)."""
    if instruction.opcode == "cp":
        addresses = _addresses(instruction)
        return addresses[1] if len(addresses) > 1 else None
    for operand in instruction.operands:
        if type(operand) is Address:
            return operand
    return None


def describe_address(address: Poly) -> tuple[AddressKind, LaneCoefficients | None, int]:
    """(kind, lane coefficients, numeric offset) of an address. Terms that are lane functions
    (`lane_functions`) make an address affine but add nothing to its coefficients."""
    terms = address.terms
    constant = terms.get((), 0)
    offset = int(constant) if float(constant).is_integer() else 0
    lane_parts: dict[str, dict[Monomial, float]] = {}
    loaded = 0  # taints of offsets loaded from memory that are the same along a warp's row
    functions = False
    for monomial, coefficient in terms.items():
        lane_atom = ""
        lanes = 0
        data = 0
        function = False
        for atom in monomial:
            if atom in _LANE_SET:
                lane_atom = atom
                lanes += 1
            elif atom.startswith("opq:"):
                taint = atom_taint(atom)
                if taint & DATA and not taint & LANE_ACROSS:
                    data |= taint  # a table entry per row or per block (dedispersion's shifts)
                elif taint & DATA:
                    return "indirect", None, offset
                elif taint and decode(atom) is not None and not function:
                    function = True
                elif taint:
                    return "unknown", None, offset  # an opaque part that may differ between lanes
        if function:
            scale = tuple(atom for atom in monomial if decode(atom) is None)
            if lanes or data or Poly({scale: coefficient}).to_expr() is None:
                return "unknown", None, offset  # not a launch-wide multiple of the function
            functions = True
            continue
        if data:
            if lanes:
                return "indirect", None, offset  # a loaded value scales the lane index
            loaded |= data
            continue
        if not lanes:
            continue
        if lanes > 1:
            return "unknown", None, offset
        if len(monomial) == 1:
            rest: Monomial = ()
        else:
            rest = tuple(atom for atom in monomial if atom != lane_atom)
        lane_parts.setdefault(lane_atom, {})[rest] = coefficient
    if not lane_parts and not loaded and not functions:
        return "uniform", None, offset
    coefficients: list[ex.Expr] = []
    for atom in _LANE_ATOMS:
        part = lane_parts.get(atom)
        if not part:
            coefficients.append(ex.ZERO)
            continue
        if len(part) == 1 and () in part:
            coefficients.append(ex.const(part[()]))  # the common case: a constant stride
            continue
        value = Poly(part).to_expr()
        if value is None:
            return "unknown", None, offset
        coefficients.append(value)
    kind: AddressKind = "affine"
    if loaded:
        kind = "row_data" if loaded & LANE_ROWS else "uniform_data"
    return kind, (coefficients[0], coefficients[1], coefficients[2], coefficients[3]), offset


def lane_functions(address: Poly) -> tuple[LaneFunction, ...] | None:
    """The address's terms that are lane functions, each with its coefficient; None when one
    of them cannot be written as one (`describe_address` then calls the address unknown)."""
    functions: list[LaneFunction] = []
    for monomial, coefficient in address.terms.items():
        for atom in monomial:
            decoded = decode(atom)
            if decoded is None:
                continue
            remainder, divisor, base = decoded
            scale = Poly({tuple(a for a in monomial if a != atom): coefficient}).to_expr()
            kind, lanes, offset = describe_address(base)
            if scale is None or kind != "affine" or lanes is None:
                return None
            functions.append(LaneFunction(scale, remainder, divisor, lanes, offset))
            break
    return tuple(functions)


def block_strides(address: Poly) -> BlockCoefficients | None:
    """The address's coefficients of `ctaid.x/y/z` (bytes per block along each grid axis);
    None when a block index is multiplied by another, by a thread index or by a value the
    analysis does not follow."""
    parts: dict[str, dict[Monomial, float]] = {atom: {} for atom in _BLOCK_INDEX_ATOMS}
    for monomial, coefficient in address.terms.items():
        indices = [atom for atom in monomial if atom in parts]
        if not indices:
            continue
        if len(indices) > 1 or any(a in _LANE_SET or a.startswith("opq:") for a in monomial):
            return None
        rest = tuple(atom for atom in monomial if atom != indices[0])
        parts[indices[0]][rest] = coefficient
    coefficients: list[ex.Expr] = []
    for atom in _BLOCK_INDEX_ATOMS:
        part = parts[atom]
        if not part:
            coefficients.append(ex.ZERO)
            continue
        value = Poly(part).to_expr()
        if value is None:
            return None
        coefficients.append(value)
    return coefficients[0], coefficients[1], coefficients[2]


def evaluate_site(
    site: StaticSite, block: tuple[int, int, int], env: Mapping[str, float]
) -> SiteShape:
    width = site.width_bytes
    shared = site.space == "shared"
    if site.kind == "contiguous":
        return SiteShape("coalesced", width / SECTOR_BYTES, 1.0, width, None)
    if site.kind == "indirect":
        return SiteShape("indirect", float(math.ceil(width / SECTOR_BYTES)), 1.0, None,
                         "address depends on loaded data: one sector per lane")  # fmt: skip
    if site.kind == "unknown":
        return SiteShape("unknown", _contiguous_sectors(width), 1.0, None,
                         "lane pattern not followed: taken as coalesced")  # fmt: skip
    if site.kind == "uniform":
        return SiteShape("uniform", math.ceil(width / SECTOR_BYTES) / WARP, 1.0, 0, None)
    assert site.lane_coefficients is not None
    assumed = None
    bx, by, bz = block
    far_rows = False
    if site.kind in ("row_data", "uniform_data"):
        far_rows = site.kind == "row_data" and (
            (by > 1 and bx % WARP != 0) or (bz > 1 and (bx * by) % WARP != 0)
        )
        if far_rows:
            assumed = ("address offset from loaded data differs between the rows of a warp: "
                       "rows taken as sharing no sector, each contiguous and aligned; the "
                       "block's reuse as if they coincided")  # fmt: skip
        else:
            assumed = ("address offset from loaded data, the same across a warp: taken as "
                       "aligned, the block's reuse as if the whole block shared it")  # fmt: skip
    # A coefficient matters only when its index varies inside a warp.
    needed = (True, by > 1 and (bx % WARP != 0), bz > 1 and ((bx * by) % WARP != 0), True)
    try:
        constant = site.constant_lane_strides
        cx, cy, cz, cl = (
            (value if use else 0 for value, use in zip(constant, needed, strict=True))
            if constant is not None
            else (
                round(c.evaluate(env)) if use else 0
                for c, use in zip(site.lane_coefficients, needed, strict=True)
            )
        )
    except ex.MissingSymbol as missing:
        if shared:
            return SiteShape("unknown", 0.0, 1.0, None, f"lane stride needs '{missing.name}'")
        return SiteShape("strided", float(math.ceil(width / SECTOR_BYTES)), 1.0, None,
                         f"lane stride needs '{missing.name}': taken as >= 32 bytes")  # fmt: skip
    functions: tuple[EvaluatedFunction, ...] = ()
    if site.lane_functions:
        try:
            functions = tuple(function.evaluate(env) for function in site.lane_functions)
            # A function's value differs between the rows of a warp however wide the block
            # is, so every plain coefficient counts too.
            cx, cy, cz, cl = site.lane_strides(env)
        except ex.MissingSymbol as missing:
            assumed = f"lane function needs '{missing.name}': taken as coalesced"
            return SiteShape("unknown", _contiguous_sectors(width), 1.0, None, assumed)
    if far_rows:
        # Each row of the warp at its own loaded offset: as if the rows were far apart (a
        # multiple of the sector, so each row keeps row 0's alignment).
        cy, cz = (_FAR_ROWS if by > 1 else 0), (_FAR_ROWS * by if bz > 1 else 0)
    if shared:
        # Moving every lane by a whole row of banks changes no bank and no word's sharing:
        # sites that differ only so (unrolled copies) share one evaluation.
        row_offset = site.offset % BANK_ROW_BYTES
        degree, stride, wavefronts = bank_conflicts(cx, cy, cz, cl, row_offset, width, *block,
                                                    functions)  # fmt: skip
        pattern: AccessPattern = "coalesced" if degree <= 1.0 else "strided"
        if stride == 0:
            pattern = "uniform"
        return SiteShape(pattern, 0.0, degree, stride, assumed, wavefronts)
    sectors, stride = warp_sectors(cx, cy, cz, cl, site.offset % SECTOR_BYTES, width, *block,
                                   functions)  # fmt: skip
    if stride == 0:
        pattern = "uniform"
    elif sectors <= _contiguous_sectors(width) * 1.3 + 1e-9:
        pattern = "coalesced"
    else:
        pattern = "strided"
    if site.space in _L1_CACHED_SPACES and not site.is_store and stride != 0 and not far_rows:
        # L1 and shared memory are one banked array, and a global load's data stage reads it
        # as a shared load would (Nsight Compute counts "data bank conflicts generated by
        # global loads", l1tex__data_bank_conflicts_pipe_lsu_mem_global_op_ld): a 128-byte
        # line spans the 32 banks, so lanes one line apart at the same offset conflict.
        row_offset = site.offset % BANK_ROW_BYTES
        degree, _, wavefronts = bank_conflicts(cx, cy, cz, cl, row_offset, width, *block,
                                               functions)  # fmt: skip
        return SiteShape(pattern, sectors, degree, stride, assumed, wavefronts)
    return SiteShape(pattern, sectors, 1.0, stride, assumed)


_L1_CACHED_SPACES = frozenset(("global", "generic", "tex"))


_FAR_ROWS = 1 << 24  # bytes between rows whose offsets were loaded: no two share a sector


def _contiguous_sectors(width: int) -> float:
    return max(1.0, WARP * width / SECTOR_BYTES) / WARP


def _lane_addresses(
    cx: int, cy: int, cz: int, cl: int, offset: int, bx: int, by: int, bz: int,
    functions: tuple[EvaluatedFunction, ...] = (),
) -> list[list[int]]:
    """Addresses of each warp's lanes (at most 32 warps: a block holds 1024 threads)."""
    threads = bx * by * bz
    warps: list[list[int]] = []
    for first in range(0, threads, WARP):
        addresses = []
        for lane, thread in enumerate(range(first, min(first + WARP, threads))):
            x = thread % bx
            y = (thread // bx) % by
            z = thread // (bx * by)
            address = offset + cx * x + cy * y + cz * z + cl * lane
            for function in functions:
                address += function_value(function, x, y, z, lane)
            addresses.append(address)
        warps.append(addresses)
    return warps


@lru_cache(maxsize=8192)
def warp_sectors(
    cx: int, cy: int, cz: int, cl: int, offset: int, width: int, bx: int, by: int, bz: int,
    functions: tuple[EvaluatedFunction, ...] = (),
) -> tuple[float, int]:
    """(32-byte sectors per thread per access, stride between lanes 0 and 1)."""
    warps = _lane_addresses(cx, cy, cz, cl, offset, bx, by, bz, functions)
    total = 0
    threads = 0
    for addresses in warps:
        sectors: set[int] = set()
        for address in addresses:
            first, last = address // SECTOR_BYTES, (address + width - 1) // SECTOR_BYTES
            sectors.update(range(first, last + 1))
        total += len(sectors)
        threads += len(addresses)
    first_warp = warps[0] if warps else [0]
    stride = first_warp[1] - first_warp[0] if len(first_warp) > 1 else 0
    return total / max(1, threads), abs(stride)


@lru_cache(maxsize=8192)
def bank_conflicts(
    cx: int, cy: int, cz: int, cl: int, offset: int, width: int, bx: int, by: int, bz: int,
    functions: tuple[EvaluatedFunction, ...] = (),
) -> tuple[float, int, float]:
    """(wavefronts per request relative to a conflict-free one, stride between lanes 0 and 1,
    wavefronts per request). A request of 8- or 16-byte accesses takes at least two or four
    wavefronts, one per phase: the data path returns 128 bytes, one register of 32 lanes, per
    cycle (NVIDIA developer forums, "Unexpected shared memory bank conflict", answer by the
    Nsight Compute team: "LDS.128 requires 4 requests per instruction as it returns 4
    registers"). Compute capability 7.x can pack the return of pairs of lanes that read one
    address into half of that; not counted here."""
    warps = _lane_addresses(cx, cy, cz, cl, offset, bx, by, bz, functions)
    lanes_per_phase = max(1, WARP * BANK_BYTES // max(width, BANK_BYTES))
    actual = 0
    ideal = 0
    for addresses in warps:
        for start in range(0, len(addresses), lanes_per_phase):
            banks: dict[int, set[int]] = {}
            for address in addresses[start : start + lanes_per_phase]:
                for word in range(address // BANK_BYTES, (address + width - 1) // BANK_BYTES + 1):
                    banks.setdefault(word % BANKS, set()).add(word)
            actual += max(len(words) for words in banks.values())
            ideal += 1
    first_warp = warps[0] if warps else [0]
    stride = first_warp[1] - first_warp[0] if len(first_warp) > 1 else 0
    return actual / max(1, ideal), abs(stride), actual / max(1, len(warps))


def conflict_free_wavefronts(width: int, threads: int) -> float:
    """Wavefronts of a conflict-free shared request of `width`-byte accesses: one per phase
    of 128 bytes (`bank_conflicts`), averaged over a block's warps."""
    lanes_per_phase = max(1, WARP * BANK_BYTES // max(width, BANK_BYTES))
    full, rest = divmod(threads, WARP)
    phases = full * math.ceil(WARP / lanes_per_phase) + math.ceil(rest / lanes_per_phase)
    return phases / max(1, math.ceil(threads / WARP))


@lru_cache(maxsize=4096)
def thread_address_range(
    cx: int, cy: int, cz: int, cl: int, bx: int, by: int, bz: int,
    functions: tuple[EvaluatedFunction, ...] = (),
) -> tuple[int, int]:
    """(lowest, highest) address offset a block's threads take."""
    if not functions:
        lanes = min(WARP, bx * by * bz)
        reach = [c * (n - 1) for c, n in ((cx, bx), (cy, by), (cz, bz), (cl, lanes))]
        return sum(min(0, r) for r in reach), sum(max(0, r) for r in reach)
    addresses = [a for warp in _lane_addresses(cx, cy, cz, cl, 0, bx, by, bz, functions)
                 for a in warp]  # fmt: skip
    return min(addresses), max(addresses)


MAX_COPY_OFFSETS = 16_384  # distinct offsets a merged site keeps for its footprint
MAX_FOOTPRINT_INTERVALS = 200_000  # past this a block's footprint is not worked out


@lru_cache(maxsize=4096)
def block_footprint_sectors(
    cx: int, cy: int, cz: int, cl: int, offsets: tuple[int, ...], width: int,
    bx: int, by: int, bz: int, functions: tuple[EvaluatedFunction, ...] = (),
) -> int | None:
    """Distinct 32-byte sectors one block touches through copies of an access at `offsets`
    (unrolled code repeats one access at constant distances), None when the lane pattern is not
    a plain function of the thread index or the footprint is too fragmented to enumerate.

    Each copy's threads with one (y, z) cover `[a, a + |cx|·(bx − 1) + width)`; when `|cx|` is
    more than a sector, or the address has lane functions, every thread is its own interval
    instead. The copies' intervals are merged once, then shifted to every (y, z) of the block
    (every thread) and merged again.
    """
    if not offsets or (cl != 0 and not functions):
        return None
    if functions:
        runs = _merged((o, o + width) for o in sorted(offsets))
        shifts = sorted({a for warp in _lane_addresses(cx, cy, cz, cl, 0, bx, by, bz, functions)
                         for a in warp})  # fmt: skip
    elif abs(cx) <= SECTOR_BYTES:
        row_span = abs(cx) * (bx - 1) + width
        row_start = min(0, cx * (bx - 1))
        runs = _merged((o + row_start, o + row_start + row_span) for o in sorted(offsets))
        shifts = [cy * y + cz * z for z in range(bz) for y in range(by)]
    else:
        runs = _merged((o, o + width) for o in sorted(offsets))
        shifts = [cx * x + cy * y + cz * z for z in range(bz) for y in range(by) for x in range(bx)]
    if len(runs) * len(shifts) > MAX_FOOTPRINT_INTERVALS:
        return None
    merged = _merged(sorted((s + a, s + b) for s in shifts for a, b in runs))
    sectors = 0
    last = None  # the last sector counted: neighbouring runs may share one
    for start, end in merged:
        first, final = start // SECTOR_BYTES, (end - 1) // SECTOR_BYTES
        if last is not None and first <= last:
            first = last + 1
        if final >= first:
            sectors += final - first + 1
        last = final if last is None else max(last, final)
    return sectors


def _merged(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Half-open intervals, sorted by start, merged where they overlap or touch."""
    merged: list[tuple[int, int]] = []
    for start, end in intervals:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged
