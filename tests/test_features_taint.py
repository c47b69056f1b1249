"""Whether a branch depends on the thread index, through register chains of any length.

Unrolled kernels build long chains of single-use registers; the dependence search must give
the same answer on a chain of a few links as on one far longer than any recursion could follow.
The PTX is written here so that the chain length is exact; `ptxas` accepts it as it is.
"""

from __future__ import annotations

import pytest

from flipflop.analysis import extract_features
from flipflop.launch import LaunchShape
from flipflop.ptx import parse_ptx

SHAPE = LaunchShape(block=(256, 1, 1), grid=(64, 1, 1))


def chain_kernel(links: int, source: str) -> str:
    """A kernel whose branch tests the end of `links` xor steps starting from `source`."""
    steps = "\n".join(
        f"\txor.b32 \t%r{i + 1}, %r{i}, {i + 3};" for i in range(links)
    )  # xor is not followed as arithmetic: only the dependence carries through
    return f"""
.version 8.0
.target sm_80
.address_size 64

.visible .entry chain(
\t.param .u32 chain_param_0
)
{{
\t.reg .pred \t%p<2>;
\t.reg .b32 \t%r<{links + 2}>;

\t{source}
{steps}
\tsetp.lt.u32 \t%p1, %r{links}, 5;
\t@%p1 bra \t$L__BB0_2;
\tbar.sync \t0;
$L__BB0_2:
\tret;
}}
"""


@pytest.mark.parametrize("links", [3, 1000])
def test_branch_on_a_thread_index_chain_is_divergent(links: int) -> None:
    module = parse_ptx(chain_kernel(links, "mov.u32 \t%r0, %tid.x;"), "chain.ptx")
    counts = extract_features(module, "chain").counts(SHAPE, {})
    assert counts["divergent_branches"] == 1.0


@pytest.mark.parametrize("links", [3, 1000])
def test_branch_on_a_parameter_chain_is_uniform(links: int) -> None:
    module = parse_ptx(chain_kernel(links, "ld.param.u32 \t%r0, [chain_param_0];"), "chain.ptx")
    counts = extract_features(module, "chain").counts(SHAPE, {})
    assert counts["divergent_branches"] == 0.0


def predicate_kernel(source: str, logic: str) -> str:
    """A kernel whose branch predicate comes from a comparison on `%r1` through predicate
    logic, the way nvcc writes `if (x & 1)`: `%p1` is the comparison, `%p2` a constant."""
    return f"""
.version 8.0
.target sm_80
.address_size 64

.visible .entry logic(
\t.param .u32 logic_param_0
)
{{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<4>;

\t{source}
\tand.b32 \t%r2, %r1, 1;
\tsetp.eq.b32 \t%p1, %r2, 1;
\tmov.pred \t%p2, 0;
{logic}
\t@%p5 bra \t$L__BB0_2;
\tbar.sync \t0;
$L__BB0_2:
\tret;
}}
"""


PREDICATE_LOGIC = {
    "xor-not": "\txor.pred \t%p3, %p1, %p2;\n\tnot.pred \t%p5, %p3;",
    "and-or": "\tor.pred \t%p3, %p1, %p2;\n\tnot.pred \t%p4, %p2;\n\tand.pred \t%p5, %p3, %p4;",
    "setp-combined": "\tsetp.ne.and.b32 \t%p5, %r1, 7, %p1;",
    "mov": "\tmov.pred \t%p5, %p1;",
}


@pytest.mark.parametrize("logic", PREDICATE_LOGIC, ids=str)
def test_predicate_logic_over_a_thread_index_is_divergent(logic: str) -> None:
    kernel = predicate_kernel("mov.u32 \t%r1, %tid.x;", PREDICATE_LOGIC[logic])
    counts = extract_features(parse_ptx(kernel, "logic.ptx"), "logic").counts(SHAPE, {})
    assert counts["divergent_branches"] == 1.0


@pytest.mark.parametrize("logic", PREDICATE_LOGIC, ids=str)
def test_predicate_logic_over_a_parameter_is_uniform(logic: str) -> None:
    kernel = predicate_kernel("ld.param.u32 \t%r1, [logic_param_0];", PREDICATE_LOGIC[logic])
    counts = extract_features(parse_ptx(kernel, "logic.ptx"), "logic").counts(SHAPE, {})
    assert counts["divergent_branches"] == 0.0



def _stack_kernel(store: str) -> str:
    """`volatile int t = threadIdx.x` as NVRTC compiles it: the index goes through the stack."""
    return f"""
.version 8.0
.target sm_80
.address_size 64

.visible .entry stack(
\t.param .u64 stack_param_0
)
{{
\t.local .align 4 .b8 \t__local_depot0[4];
\t.reg .b32 \t%r<4>;
\t.reg .b64 \t%rd<6>;
\t.reg .f32 \t%f<2>;

\tmov.u64 \t%rd1, __local_depot0;
\tld.param.u64 \t%rd2, [stack_param_0];
\tcvta.to.global.u64 \t%rd3, %rd2;
\tmov.u32 \t%r1, %tid.x;
\t{store}
\tld.volatile.local.u32 \t%r2, [%rd1];
\tmul.wide.s32 \t%rd4, %r2, 4;
\tadd.s64 \t%rd5, %rd3, %rd4;
\tld.global.f32 \t%f1, [%rd5];
\tst.global.f32 \t[%rd5], %f1;
\tret;
}}
"""


def test_a_value_kept_on_the_stack_is_not_data() -> None:
    """Local memory is the thread's own: what a local load returns is what the thread stored,
    here its index; the global access is not costed as scattered (one sector per lane)."""
    module = parse_ptx(_stack_kernel("st.volatile.local.u32 \t[%rd1], %r1;"), "stack.ptx")
    (site,) = [s for s in extract_features(module, "stack").sites
               if s.space == "global" and not s.is_store]  # fmt: skip
    assert site.kind == "unknown"  # the lane pattern is not followed through memory
    # A generic store may reach the stack too: the local load is then data, as before.
    generic = parse_ptx(_stack_kernel("st.u32 \t[%rd1], %r1;"), "stack.ptx")
    (site,) = [s for s in extract_features(generic, "stack").sites
               if s.space == "global" and not s.is_store]  # fmt: skip
    assert site.kind == "indirect"


ROW_TABLE = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry rows(
\t.param .u64 rows_param_0,
\t.param .u64 rows_param_1
)
{
\t.reg .b32 \t%r<6>;
\t.reg .b64 \t%rd<10>;
\t.reg .f32 \t%f<2>;

\tld.param.u64 \t%rd1, [rows_param_0];
\tld.param.u64 \t%rd2, [rows_param_1];
\tcvta.to.global.u64 \t%rd3, %rd1;
\tcvta.to.global.u64 \t%rd4, %rd2;
\tmov.u32 \t%r1, %tid.x;
\tmov.u32 \t%r2, %tid.y;
\tmul.wide.u32 \t%rd5, %r2, 4;
\tadd.s64 \t%rd6, %rd4, %rd5;
\tld.global.u32 \t%r3, [%rd6];
\tadd.s32 \t%r4, %r3, %r1;
\tmul.wide.u32 \t%rd7, %r4, 4;
\tadd.s64 \t%rd8, %rd3, %rd7;
\tld.global.f32 \t%f1, [%rd8];
\tst.global.f32 \t[%rd8], %f1;
\tret;
}
"""


def test_an_offset_loaded_per_row_keeps_the_rows_coalesced() -> None:
    """`in[shift[threadIdx.y] + threadIdx.x]`, dedispersion's access: the loaded offset is
    the same across a warp when the block is a whole number of warps wide."""
    features = extract_features(parse_ptx(ROW_TABLE, "rows.ptx"), "rows")
    kinds = [site.kind for site in features.sites]
    assert "row_data" in kinds
    index = kinds.index("row_data")
    wide = features.work(LaunchShape((32, 4, 1), (64, 1, 1)), {}).sites[index]
    narrow = features.work(LaunchShape((8, 16, 1), (64, 1, 1)), {}).sites[index]
    # A warp of 32 consecutive floats: 4 sectors, 1/8 per thread; four rows of 8 lanes at
    # their own offsets: a 32-byte sector each, as many as the rows (not one per lane).
    assert (wide.pattern, wide.sectors) == ("coalesced", pytest.approx(4 / 32))
    assert narrow.sectors == pytest.approx(4 / 32)
    assert narrow.stride_bytes == 4
