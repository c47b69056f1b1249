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
