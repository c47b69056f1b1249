"""Control flow of one function: successors, dominators and natural loops with their nesting."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from flipflop.ir import Function, Instruction, Symbol

_TERMINATORS = frozenset(("ret", "exit", "trap"))


@dataclass(frozen=True)
class Loop:
    """A natural loop: the header and every block that reaches a back edge without it."""

    index: int
    header: int
    latches: tuple[int, ...]
    body: frozenset[int]
    parent: int | None  # enclosing loop's index
    depth: int  # 1 for an outermost loop


@dataclass(frozen=True)
class ControlFlow:
    successors: tuple[tuple[int, ...], ...]
    branch_targets: tuple[int | None, ...]  # the block a block's final `bra` jumps to
    predecessors: tuple[tuple[int, ...], ...]
    reachable_order: tuple[int, ...]  # reverse post-order of the blocks reachable from entry
    idom: tuple[int, ...]  # immediate dominator; -1 for the entry and unreachable blocks
    dom_pre: tuple[int, ...]  # dominator-tree pre/post numbers, for O(1) dominance queries
    dom_post: tuple[int, ...]
    loops: tuple[Loop, ...]  # outer loops before the loops they contain
    innermost_loop: tuple[int | None, ...]  # per block
    irreducible: bool  # a retreating edge whose target does not dominate its source

    def dominates(self, a: int, b: int) -> bool:
        if self.dom_pre[a] < 0 or self.dom_pre[b] < 0:
            return False
        return self.dom_pre[a] <= self.dom_pre[b] and self.dom_post[b] <= self.dom_post[a]

    def loops_of(self, block: int) -> tuple[int, ...]:
        """Indices of the loops containing the block, innermost first."""
        chain: list[int] = []
        current = self.innermost_loop[block]
        while current is not None:
            chain.append(current)
            current = self.loops[current].parent
        return tuple(chain)

    def dominated_by(self, block: int) -> list[int]:
        """Every reachable block the given block dominates (itself included)."""
        low, high = self.dom_pre[block], self.dom_post[block]
        if low < 0:
            return []
        return [
            b for b in self.reachable_order if low <= self.dom_pre[b] and self.dom_post[b] <= high
        ]


def branch_target(instruction: Instruction) -> str | None:
    if instruction.opcode != "bra" or not instruction.operands:
        return None
    target = instruction.operands[0]
    return target.name if isinstance(target, Symbol) else None


def build_control_flow(function: Function) -> ControlFlow:
    blocks = function.blocks
    count = len(blocks)
    labels = {block.label: index for index, block in enumerate(blocks) if block.label}
    jumps = [_branch_target_block(block.instructions, labels) for block in blocks]
    successors: list[tuple[int, ...]] = [
        _successors(index, block.instructions, jumps[index], labels, count)
        for index, block in enumerate(blocks)
    ]
    predecessors: list[list[int]] = [[] for _ in range(count)]
    for index, targets in enumerate(successors):
        for target in targets:
            predecessors[target].append(index)

    order = _reverse_post_order(successors, count)
    idom = _dominators(order, predecessors, count)
    dom_pre, dom_post = _number_dominator_tree(idom, order, count)
    position = {block: rank for rank, block in enumerate(order)}

    back_edges: dict[int, list[int]] = {}
    irreducible = False
    for source in order:
        for target in successors[source]:
            if position.get(target, -1) <= position[source]:
                if _dominates(dom_pre, dom_post, target, source):
                    back_edges.setdefault(target, []).append(source)
                else:
                    irreducible = True

    raw_loops: list[tuple[int, tuple[int, ...], frozenset[int]]] = []
    for header, sources in back_edges.items():
        members = {header}
        stack = [latch for latch in sources if latch != header]
        members.update(stack)
        while stack:
            member = stack.pop()
            for previous in predecessors[member]:
                if previous not in members and previous in position:
                    members.add(previous)
                    stack.append(previous)
        raw_loops.append((header, tuple(sorted(sources)), frozenset(members)))
    # Outer loops first: a loop's parent is the smallest earlier loop containing its header.
    raw_loops.sort(key=lambda loop: (-len(loop[2]), position[loop[0]]))
    loops: list[Loop] = []
    innermost: list[int | None] = [None] * count
    for index, (header, latches, body) in enumerate(raw_loops):
        parent = None
        for candidate in reversed(loops):
            if header in candidate.body and candidate.header != header:
                parent = candidate.index
                break
        depth = 1 if parent is None else loops[parent].depth + 1
        loops.append(Loop(index, header, latches, body, parent, depth))
        for member in body:
            innermost[member] = index  # later (smaller) loops overwrite: innermost wins

    return ControlFlow(
        successors=tuple(successors),
        branch_targets=tuple(jumps),
        predecessors=tuple(tuple(p) for p in predecessors),
        reachable_order=tuple(order),
        idom=tuple(idom),
        dom_pre=tuple(dom_pre),
        dom_post=tuple(dom_post),
        loops=tuple(loops),
        innermost_loop=tuple(innermost),
        irreducible=irreducible,
    )


def _branch_target_block(
    instructions: tuple[Instruction, ...], labels: dict[str, int]
) -> int | None:
    if not instructions:
        return None
    name = branch_target(instructions[-1])
    return labels.get(name) if name is not None else None


def _successors(
    index: int,
    instructions: tuple[Instruction, ...],
    target: int | None,
    labels: dict[str, int],
    count: int,
) -> tuple[int, ...]:
    fallthrough = (index + 1,) if index + 1 < count else ()
    if not instructions:
        return fallthrough
    last = instructions[-1]
    opcode = last.opcode
    if opcode == "bra":
        if target is None:
            return () if last.guard is None else fallthrough
        if last.guard is None or not fallthrough or fallthrough[0] == target:
            return (target,)
        return (target, index + 1)
    if opcode == "brx":
        # An indexed branch may go to any label of its table; every labelled block is a safe
        # over-approximation when the table is not resolved.
        return tuple(sorted(set(labels.values())))
    if opcode in _TERMINATORS and last.guard is None:
        return ()
    return fallthrough


def _reverse_post_order(successors: list[tuple[int, ...]], count: int) -> list[int]:
    if count == 0:
        return []
    visited = [False] * count
    post: list[int] = []
    visited[0] = True
    # Each entry holds an iterator over the block's successors, resumed where it stopped.
    stack: list[tuple[int, Iterator[int]]] = [(0, iter(successors[0]))]
    while stack:
        block, children = stack[-1]
        for child in children:
            if not visited[child]:
                visited[child] = True
                stack.append((child, iter(successors[child])))
                break
        else:
            stack.pop()
            post.append(block)
    post.reverse()
    return post


def _dominators(order: list[int], predecessors: list[list[int]], count: int) -> list[int]:
    """Cooper, Harvey and Kennedy, "A Simple, Fast Dominance Algorithm" (2001). Without back
    edges every block's predecessors come before it in reverse post-order, so the first pass
    is already exact and the confirming pass is skipped."""
    idom = [-1] * count
    if not order:
        return idom
    rank = {block: position for position, block in enumerate(order)}
    entry = order[0]
    idom[entry] = entry
    changed = True
    back_edges = False  # seen in the first pass: a reachable predecessor not processed yet
    while changed:
        changed = False
        for block in order[1:]:
            new_idom = -1
            for previous in predecessors[block]:
                if idom[previous] == -1:
                    back_edges = back_edges or previous in rank
                    continue
                if new_idom == -1:
                    new_idom = previous
                    continue
                a, b = previous, new_idom
                while a != b:
                    while rank[a] > rank[b]:
                        a = idom[a]
                    while rank[b] > rank[a]:
                        b = idom[b]
                new_idom = a
            if new_idom != idom[block]:
                idom[block] = new_idom
                changed = True
        if not back_edges:
            break
    idom[entry] = -1
    return idom


def _number_dominator_tree(
    idom: list[int], order: list[int], count: int
) -> tuple[list[int], list[int]]:
    children: list[list[int]] = [[] for _ in range(count)]
    for block in order[1:]:
        if idom[block] >= 0:
            children[idom[block]].append(block)
    pre = [-1] * count
    post = [-1] * count
    if not order:
        return pre, post
    counter = 0
    stack: list[tuple[int, bool]] = [(order[0], False)]
    while stack:
        block, done = stack.pop()
        if done:
            post[block] = counter
            counter += 1
            continue
        pre[block] = counter
        counter += 1
        stack.append((block, True))
        for child in reversed(children[block]):
            stack.append((child, False))
    return pre, post


def _dominates(pre: list[int], post: list[int], a: int, b: int) -> bool:
    return pre[a] <= pre[b] and post[b] <= post[a]
