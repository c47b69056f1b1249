"""What the model consumes: the dynamic work of one thread for one concrete launch.

`flipflop.analysis` turns a kernel's IR into `KernelFeatures`; `KernelFeatures.work(shape, params)`
evaluates the (block-shape-dependent, parameter-dependent) counts into a `ThreadWork`, which is
all the performance and power model reads. Every count is per launched thread, averaged over all
launched threads of the launch (idle threads included), so totals are `count × shape.threads`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flipflop.fast_init import fast_init

AccessPattern = Literal["coalesced", "strided", "uniform", "indirect", "unknown"]
MemorySpace = Literal["global", "shared", "local", "const", "param", "tex", "generic"]


@fast_init
@dataclass(frozen=True)
class SiteWork:
    """One memory-access site's share of the work, for explaining where bytes come from."""

    space: MemorySpace
    is_store: bool
    pattern: AccessPattern
    lines: tuple[int, ...]  # CUDA source lines (from .loc)
    accesses: float  # per thread
    bytes_requested: float  # per thread
    sectors: float  # 32-byte DRAM/L2 sectors per thread after coalescing (global/local)
    # Shared memory and L1-cached loads: wavefronts per warp request over the conflict-free
    # count (1 = conflict-free).
    bank_conflict_degree: float
    stride_bytes: int | None = None  # lane-to-lane stride when known
    # Fraction of launched threads that pass the guards around the site: `accesses` divided by
    # it is what one executing thread does.
    guard_fraction: float = 1.0
    # Lines of the loops and branches whose counts behind `accesses` are assumptions for this
    # launch (empty when they were all derived or interpreted).
    counted_with_assumed: tuple[int, ...] = ()
    # The part of `sectors` that misses L1 and goes on to L2/DRAM; None: all of it.
    l1_miss_sectors: float | None = None
    # Of `l1_miss_sectors`, the part the block before along the grid's x axis did not read
    # (what it read is still in L2); None: all of it.
    new_sectors: float | None = None
    # Of `new_sectors`, the part the block one grid row earlier read: an L2 hit when the data
    # a grid row brings in fits in L2 (`flipflop.model.l2`).
    row_reuse_sectors: float = 0.0
    # Shared memory and L1-cached loads: wavefronts one warp request takes in the banked
    # data array (a wide access one per phase at least, `flipflop.analysis.memory
    # .bank_conflicts`); 1 where not known.
    wavefronts_per_request: float = 1.0
    # A cp.async copy into shared memory: its shared side is not a load or store of a warp.
    async_copy: bool = False


@fast_init
@dataclass(frozen=True)
class PipeWork:
    """Per-thread machine-code (SASS) counts: issue slots and lane-instructions per pipe.

    From the measured SASS cost of each PTX instruction on the module's architecture
    (`flipflop.analysis.sass`); FLOPs stay in `ThreadWork` as Nsight Compute counts them."""

    issue_slots: float
    fp32: float
    fp64: float
    fp16: float
    integer: float
    sfu: float
    conversion: float


@fast_init
@dataclass(frozen=True)
class ThreadWork:
    """Per-thread dynamic counts for one launch (averages over every launched thread)."""

    instructions: float  # all issued instructions
    fp32_flops: float  # fma counts 2
    fp64_flops: float
    fp16_flops: float  # packed half2/bfloat162 count per lane-element
    int_ops: float
    conversions: float
    sfu_ops: float
    tensor_flops: float  # mma/wmma/wgmma, per thread share of the warp's (or warpgroup's) FLOPs
    global_load_bytes: float  # requested by the thread
    global_store_bytes: float
    global_load_sectors: float  # 32-byte sectors after coalescing
    global_store_sectors: float
    local_bytes: float  # local memory (spills, runtime-indexed arrays)
    shared_accesses: float
    shared_wavefronts: float  # per warp: shared accesses × wavefronts per request
    atomics: float
    barriers: float
    shuffles: float
    branches: float
    divergent_branches: float
    active_fraction: float  # fraction of launched threads that do the guarded main work
    async_copy_bytes: float = 0.0  # cp.async / TMA bytes
    # Load sectors that miss L1 (the block's threads and unrolled copies share the rest);
    # None: every load sector goes to L2/DRAM.
    global_load_l1_misses: float | None = None
    # Of those, the ones the block before along x did not read (it ran at the same time or
    # just before: L2 still holds its data); None: every L1 miss.
    global_load_new_sectors: float | None = None
    # Of the new ones, those the block one grid row earlier read: L2 hits only if the grid row
    # in between fits in L2, which depends on the GPU (`flipflop.model.l2`).
    global_load_row_reuse_sectors: float = 0.0
    # PTX instructions of the kernel as written (callees included), each counted once: with
    # `instructions` it says how often an instruction of the code runs on average.
    static_instructions: float = 0.0
    # Global loads a thread issues before it waits on the first: the static loads of the code
    # region its loads come from (unrolled tiles issue theirs together), load-weighted.
    load_parallelism: float = 1.0
    pipes: PipeWork | None = None  # None: derived from the PTX counts (`pipe_work`)
    # One warp's cycles alone on its SM: issue slots or dependent chains, whichever is longer
    # per block (`flipflop.analysis.chains`); None: every instruction dependent on the last.
    chain_cycles: float | None = None
    sites: tuple[SiteWork, ...] = ()
    idle_lines: tuple[int, ...] = ()  # source lines of the guards that leave threads idle
    divergence_lines: tuple[int, ...] = ()  # source lines of thread-dependent branches
    # What this launch's counts still assume (unknown loop trips, branches, lane patterns):
    # the kernel's assumptions less those that interpreting its control flow resolved.
    assumptions: tuple[str, ...] = ()

    def pipe_work(self) -> PipeWork:
        """The machine-code counts; without measured ones, one slot per PTX instruction and the
        pipes' FLOP-equivalents (an FMA's 2 FLOPs, a half2 FMA's 4, on one lane-instruction)."""
        if self.pipes is not None:
            return self.pipes
        return PipeWork(
            issue_slots=self.instructions,
            fp32=self.fp32_flops / 2.0,
            fp64=self.fp64_flops / 2.0,
            fp16=self.fp16_flops / 4.0,
            integer=self.int_ops,
            sfu=self.sfu_ops,
            conversion=self.conversions,
        )

    @property
    def flops(self) -> float:
        return self.fp32_flops + self.fp64_flops + self.fp16_flops + self.tensor_flops

    @property
    def dram_bytes(self) -> float:
        """Bytes moved between SM and memory: 32-byte sectors of global and local traffic that
        neither L1 nor the data the previous block along x left in L2 serves (the reuse of a
        grid row earlier depends on the GPU's L2: `flipflop.model.l2.dram_bytes_per_thread`)."""
        loads = self.global_load_sectors
        if self.global_load_l1_misses is not None:
            loads = min(loads, self.global_load_l1_misses)
        if self.global_load_new_sectors is not None:
            loads = min(loads, self.global_load_new_sectors)
        return 32.0 * (loads + self.global_store_sectors) + self.local_bytes
