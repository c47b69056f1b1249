"""Taint of registers: what a value may depend on (the thread, the lane, memory).

The union over every definition reaching a register backwards through the registers it reads,
computed flow-insensitively (so redefinitions are covered) and memoized per register. Registers
read each other in cycles (loop-carried values): a depth-first search settles the common,
cycle-free case and Tarjan's strongly connected components settle the rest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from flipflop.analysis.poly import DATA, LANE, THREAD, atom_taint
from flipflop.analysis.scan import Site
from flipflop.ir import (
    Address,
    Immediate,
    Instruction,
    Negated,
    Operand,
    Register,
    SpecialRegister,
    Symbol,
    Vector,
)

LOADS = frozenset(("ld", "ldu", "tex", "tld4", "suld", "ldmatrix", "wmma", "txq", "suq"))
_ANY_LANE_DATA = frozenset(("atom", "match"))
_LANE_EXCHANGES = frozenset(("shfl",))
_WARP_WIDE = frozenset(("vote", "redux", "activemask", "elect"))
_STATE_SPACES = frozenset(("global", "shared", "shared::cta", "shared::cluster", "local",
                           "const", "param"))  # fmt: skip
ADDS_TAINT = LOADS | _ANY_LANE_DATA | _LANE_EXCHANGES | _WARP_WIDE
"""Opcodes whose value depends on more than their operands: `RegisterTaints.sources` adds the
rest."""


def source_registers(operand: Operand) -> tuple[str, ...]:
    if isinstance(operand, Register):
        return (operand.name,)
    if isinstance(operand, Address):
        return (operand.base.name,) if isinstance(operand.base, Register) else ()
    if isinstance(operand, Negated):
        return source_registers(operand.operand)
    if isinstance(operand, Vector):
        names: list[str] = []
        for element in operand.elements:
            names.extend(source_registers(element))
        return tuple(names)
    return ()


class RegisterTaints:
    """Taints of the registers of one function, worked out on demand."""

    def __init__(
        self,
        instructions: tuple[tuple[Instruction, ...], ...],
        single_site: dict[str, Site],
        multiple_sites: dict[str, list[Site]],
        kernel_params: frozenset[str],
    ) -> None:
        self._instructions = instructions
        self._single_site = single_site
        self._multiple_sites = multiple_sites
        self.kernel_params = kernel_params
        self._taints: dict[str, int] = {}
        self._local_values: tuple[str, ...] | None = None  # see `_stored_locally`

    def is_written(self, name: str) -> bool:
        return name in self._single_site or name in self._multiple_sites

    def sources(self, instruction: Instruction) -> tuple[tuple[str, ...], int]:
        """(registers read, taint the instruction adds itself); a load's value also carries
        its address's taint, since the address is among the registers read."""
        opcode = instruction.opcode
        sources: list[str] = []
        base = 0
        for operand in instruction.operands[1:]:
            kind = type(operand)
            if kind is Register:
                sources.append(operand.name)  # type: ignore[union-attr]
            elif kind is Address:
                address_base = operand.base  # type: ignore[union-attr]
                if type(address_base) is Register:
                    sources.append(address_base.name)
            elif kind is SpecialRegister:
                base |= atom_taint(operand.name)  # type: ignore[union-attr]
            elif kind is not Immediate and kind is not Symbol:
                sources.extend(source_registers(operand))
        if opcode in LOADS:
            space = instruction.modifiers
            if opcode == "ld" and "param" in space:
                if not self._reads_kernel_param(instruction):
                    base |= DATA | THREAD | LANE  # a callee's argument or a call's result
            elif opcode == "ld" and "local" in space:
                stored = self._stored_locally()
                if stored is None:
                    base |= DATA | THREAD | LANE  # each thread's own memory: per lane
                else:
                    sources.extend(stored)
            else:
                base |= DATA
        elif opcode in _ANY_LANE_DATA:
            base |= DATA | THREAD | LANE
        elif opcode in _LANE_EXCHANGES:
            base |= THREAD | LANE
        elif opcode in _WARP_WIDE:
            base |= DATA
        return tuple(sources), base

    def _stored_locally(self) -> tuple[str, ...] | None:
        """The registers the function stores to local memory, which is private to the thread:
        a local load returns one of them (a `volatile` variable kept on the stack holds the
        thread index it was given, not data). None when local memory may also be written
        another way — a generic store, a call or a local address taken — and a local load is
        then data."""
        if self._local_values is not None:
            return self._local_values or None
        names: list[str] = []
        for block in self._instructions:
            for instruction in block:
                opcode = instruction.opcode
                if opcode == "call" or (opcode == "cvta" and "local" in instruction.modifiers):
                    self._local_values = ()
                    return None
                if opcode not in ("st", "atom", "red") or "param" in instruction.modifiers:
                    continue
                if "local" not in instruction.modifiers:
                    if not any(m in _STATE_SPACES for m in instruction.modifiers):
                        self._local_values = ()  # generic: it may reach the stack
                        return None
                    continue
                for operand in instruction.operands[1:]:
                    names.extend(source_registers(operand))
        self._local_values = tuple(names) if names else ()
        return self._local_values or None

    def _reads_kernel_param(self, instruction: Instruction) -> bool:
        for operand in instruction.operands[1:]:
            if isinstance(operand, Address) and isinstance(operand.base, Symbol):
                return operand.base.name in self.kernel_params
        return False

    def of(self, name: str) -> int:
        """Everything the register may depend on: the union over all definitions reaching it
        backwards through the registers they read (flow-insensitive, so redefinitions are
        covered). A register never written is an unknown input."""
        known = self._taints.get(name)
        if known is not None:
            return known
        if not self.is_written(name):
            return DATA | THREAD | LANE
        try:
            self._shallow_taint(name, set(), 0)
        except _GaveUp as reason:
            if reason.deep and self._settle_acyclic_taints(name):
                return self._taints[name]
            self._settle_taints(name)
        return self._taints[name]

    def _shallow_taint(self, name: str, open_path: set[str], depth: int) -> int:
        """The common case of `_settle_acyclic_taints`, as plain recursion: address and
        predicate chains are short, and a call per register is cheaper than the explicit
        stack. Gives up on a cycle, or past a depth where recursion would be unsafe; the
        registers finished before that are exact, being cycle-free."""
        taints = self._taints
        single = self._single_site
        site = single.get(name)
        sources: Sequence[str]
        if site is not None:
            sources, taint = self.sources(self._instructions[site[0]][site[1]])
        else:
            sources, taint = self._inputs(name)
        open_path.add(name)
        for source in sources:
            settled = taints.get(source)
            if settled is None:
                if source in open_path:
                    raise _GaveUp(deep=False)
                if source not in single and source not in self._multiple_sites:
                    continue  # never written: only a direct query treats it as an input
                if depth >= _MAX_SHALLOW_DEPTH:
                    raise _GaveUp(deep=True)
                settled = self._shallow_taint(source, open_path, depth + 1)
            taint |= settled
        open_path.discard(name)
        taints[name] = taint
        return taint

    def _settle_acyclic_taints(self, root: str) -> bool:
        """The common case of `_settle_taints`: a depth-first search that memoizes every
        register it finishes. It gives up (False) when it meets a register still open on its
        path, a cycle; the registers it finished before that are exact, being cycle-free."""
        taints = self._taints
        single = self._single_site
        multiple = self._multiple_sites
        inputs = self._inputs
        open_path: set[str] = {root}
        sources, base = inputs(root)
        pending: list[tuple[str, Iterator[str], list[int]]] = [(root, iter(sources), [base])]
        while pending:
            register, unread, gathered = pending[-1]
            descended = False
            for source in unread:
                settled = taints.get(source)
                if settled is not None:
                    gathered[0] |= settled
                elif source in open_path:
                    return False
                elif source in single or source in multiple:
                    sources, base = inputs(source)
                    open_path.add(source)
                    pending.append((source, iter(sources), [base]))
                    descended = True
                    break
            if descended:
                continue
            pending.pop()
            open_path.discard(register)
            taints[register] = gathered[0]
            if pending:
                pending[-1][2][0] |= gathered[0]
        return True

    def _inputs(self, name: str) -> tuple[Sequence[str], int]:
        """(registers read by any definition of the register, taint those definitions add)."""
        instructions = self._instructions
        single = self._single_site.get(name)
        if single is not None:
            return self.sources(instructions[single[0]][single[1]])
        sources: list[str] = []
        base = 0
        for b, i in self._multiple_sites.get(name, ()):
            read, added = self.sources(instructions[b][i])
            sources.extend(read)
            base |= added
        return sources, base

    def _settle_taints(self, root: str) -> None:
        """Taints of the root and of every register it reads, transitively, memoized for all
        of them. Registers read each other in cycles (loop-carried values), so the search
        finds strongly connected components (Tarjan, iteratively) and gives each the union of
        its members' taints and of the components it reads. Registers never written add
        nothing here: only a direct query treats one as an unknown input."""
        taints = self._taints
        single = self._single_site
        multiple = self._multiple_sites
        inputs = self._inputs
        # Per register on the search: [visit number, lowest number reachable, taint so far].
        state: dict[str, list[int]] = {}
        component: list[str] = []
        open_members: set[str] = set()
        sources, base = inputs(root)
        state[root] = [0, 0, base]
        component.append(root)
        open_members.add(root)
        pending: list[tuple[str, Iterator[str], list[int]]] = [(root, iter(sources), state[root])]
        while pending:
            register, unread, mine = pending[-1]
            descended = False
            for source in unread:
                settled = taints.get(source)
                if settled is not None:
                    mine[2] |= settled
                    continue
                theirs = state.get(source)
                if theirs is None:
                    if source in single or source in multiple:
                        sources, base = inputs(source)
                        number = len(state)
                        theirs = state[source] = [number, number, base]
                        component.append(source)
                        open_members.add(source)
                        pending.append((source, iter(sources), theirs))
                        descended = True
                        break
                elif source in open_members and theirs[0] < mine[1]:
                    mine[1] = theirs[0]
            if descended:
                continue
            pending.pop()
            if mine[1] == mine[0]:
                members: list[str] = []
                union = 0
                while True:
                    member = component.pop()
                    open_members.discard(member)
                    members.append(member)
                    union |= state[member][2]
                    if member == register:
                        break
                for member in members:
                    taints[member] = union
            if pending:
                reader = pending[-1][2]
                settled = taints.get(register)
                if settled is not None:
                    reader[2] |= settled
                elif mine[1] < reader[1]:
                    reader[1] = mine[1]

    # ------------------------------------------------------------------ induction variables


class _GaveUp(Exception):
    """`_shallow_taint` met a cycle (deep=False) or a chain too long to recurse (deep=True)."""

    def __init__(self, deep: bool) -> None:
        super().__init__()
        self.deep = deep


_MAX_SHALLOW_DEPTH = 200  # well inside Python's default recursion limit of 1000
