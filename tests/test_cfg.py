"""Control flow (successors, reverse post-order, dominators, natural loops) checked against the
textbook definitions, computed the slow way, on every function of the corpus and on hand-made
shapes: nested loops, a loop with two latches, an irreducible cycle, unreachable code."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from corpus_ptx import CorpusCompiler, arches_of, corpus_compiler, corpus_files
from flipflop.analysis.cfg import ControlFlow, build_control_flow
from flipflop.ir import Function
from flipflop.ptx import parse_ptx

__all__ = ["corpus_compiler"]  # the session fixture, used by name below

_HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"


def _kernel(body: str) -> Function:
    text = (
        _HEADER
        + ".visible .entry shape(.param .u32 n)\n{\n"
        + "  .reg .pred %p<16>;\n  .reg .b32 %r<16>;\n"
        + "  ld.param.u32 %r1, [n];\n"
        + body
        + "  ret;\n}\n"
    )
    module = parse_ptx(text, "shape.ptx")
    assert not module.unknown_statements
    return module.kernels[0]


def _reachable(flow: ControlFlow) -> set[int]:
    seen = {0}
    stack = [0]
    while stack:
        for following in flow.successors[stack.pop()]:
            if following not in seen:
                seen.add(following)
                stack.append(following)
    return seen


def _dominator_sets(flow: ControlFlow, reachable: set[int]) -> dict[int, set[int]]:
    """Dom(entry) = {entry}; Dom(b) = {b} plus what every reachable predecessor's set holds."""
    dominators = {block: set(reachable) for block in reachable}
    dominators[0] = {0}
    changed = True
    while changed:
        changed = False
        for block in sorted(reachable - {0}):
            incoming = [dominators[p] for p in flow.predecessors[block] if p in reachable]
            new = set.intersection(*incoming) | {block}
            if new != dominators[block]:
                dominators[block] = new
                changed = True
    return dominators


def _check(function: Function) -> ControlFlow:
    flow = build_control_flow(function)
    count = len(function.blocks)
    for block in range(count):
        for following in flow.successors[block]:
            assert block in flow.predecessors[following]
    reachable = _reachable(flow)
    assert set(flow.reachable_order) == reachable
    assert flow.reachable_order[0] == 0
    dominators = _dominator_sets(flow, reachable)
    rank = {block: position for position, block in enumerate(flow.reachable_order)}
    for block in reachable:
        for following in flow.successors[block]:
            # In a reducible graph every edge but a back edge goes forward in the order.
            if following not in dominators[block] and not flow.irreducible:
                assert rank[block] < rank[following], (function.name, block, following)
        strict = dominators[block] - {block}
        expected_idom = next((d for d in strict if strict <= dominators[d]), -1)
        assert flow.idom[block] == expected_idom, (function.name, block)
        for other in reachable:
            assert flow.dominates(other, block) == (other in dominators[block])
    for block in set(range(count)) - reachable:
        assert flow.idom[block] == -1
        assert not flow.dominates(0, block)

    back_edges = {
        (source, target)
        for source in reachable
        for target in flow.successors[source]
        if target in dominators[source]
    }
    assert {(latch, loop.header) for loop in flow.loops for latch in loop.latches} == back_edges
    for loop in flow.loops:
        body = {loop.header}
        stack = [latch for latch in loop.latches if latch != loop.header]
        while stack:  # everything that reaches a latch without passing the header
            member = stack.pop()
            if member not in body:
                body.add(member)
                stack.extend(p for p in flow.predecessors[member] if p in reachable)
        assert loop.body == frozenset(body)
        if loop.parent is not None:
            assert loop.body < flow.loops[loop.parent].body
    return flow


def test_nested_loops_with_two_latches() -> None:
    flow = _check(
        _kernel(
            """  mov.u32 %r2, 0;
$OUTER:
  mov.u32 %r3, 0;
$INNER:
  add.s32 %r3, %r3, 1;
  setp.eq.s32 %p1, %r3, 7;
  @%p1 bra $INNER;
  setp.lt.s32 %p2, %r3, %r1;
  @%p2 bra $INNER;
  add.s32 %r2, %r2, 1;
  setp.lt.s32 %p3, %r2, %r1;
  @%p3 bra $OUTER;
"""
        )
    )
    assert [loop.depth for loop in flow.loops] == [1, 2]
    assert len(flow.loops[1].latches) == 2


def test_irreducible_cycle_is_reported_and_not_a_loop() -> None:
    flow = _check(
        _kernel(
            """  setp.eq.s32 %p1, %r1, 0;
  @%p1 bra $SECOND;
$FIRST:
  add.s32 %r1, %r1, -1;
$SECOND:
  add.s32 %r1, %r1, -2;
  setp.gt.s32 %p2, %r1, 0;
  @%p2 bra $FIRST;
"""
        )
    )
    assert flow.irreducible
    assert flow.loops == ()


def test_unreachable_block_has_no_dominator() -> None:
    flow = _check(
        _kernel(
            """  bra.uni $END;
$DEAD:
  add.s32 %r1, %r1, 1;
  bra.uni $DEAD;
$END:
  add.s32 %r1, %r1, 2;
"""
        )
    )
    assert len(flow.reachable_order) < len(flow.successors)


def test_diamond_chain_without_loops() -> None:
    body = "".join(
        f"  setp.eq.s32 %p1, %r1, {step};\n  @%p1 bra $J{step};\n"
        f"  add.s32 %r1, %r1, 1;\n$J{step}:\n"
        for step in range(12)
    )
    flow = _check(_kernel(body))
    assert flow.loops == ()
    assert not flow.irreducible


def _random_shape(seed: int, blocks: int) -> str:
    """Blocks that each end in a conditional branch to a random block, an unconditional one, or
    nothing (fall through): loops, irreducible cycles and dead code all turn up."""
    generator = random.Random(seed)
    lines = []
    for block in range(blocks):
        lines.append(f"$B{block}:\n  add.s32 %r2, %r2, {block};\n")
        kind = generator.random()
        target = generator.randrange(blocks)
        if kind < 0.6:
            lines.append(f"  setp.eq.s32 %p1, %r2, {block};\n  @%p1 bra $B{target};\n")
        elif kind < 0.8:
            lines.append(f"  bra.uni $B{target};\n")
    return "".join(lines)


@pytest.mark.parametrize("seed", range(300))
def test_random_shapes_match_the_definitions(seed: int) -> None:
    _check(_kernel(_random_shape(seed, blocks=4 + seed % 9)))


@pytest.mark.parametrize("source", corpus_files(), ids=lambda path: path.stem)
def test_every_corpus_function_matches_the_definitions(
    corpus_compiler: CorpusCompiler, source: Path
) -> None:
    arch = arches_of(source)[0]
    module = parse_ptx(corpus_compiler.ptx(source, arch), f"{source.stem}.{arch}.ptx")
    functions = [function for function in module.functions if function.has_body]
    assert functions
    for function in functions:
        _check(function)
