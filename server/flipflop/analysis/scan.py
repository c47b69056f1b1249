"""One pass over a function's instructions, for the tables every later stage looks up.

Large kernels (unrolled loops, hundreds of thousands of statements) make any walk over every
instruction expensive, mostly in memory traffic: the stages therefore share this single pass
rather than each walking the function again.
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.ir import (
    Function,
    Instruction,
    Operand,
    PredicatePair,
    Register,
    Sink,
    SpecialRegister,
    Vector,
)

NO_DESTINATION = frozenset((
    "bra", "brx", "ret", "exit", "call", "trap", "membar", "fence", "nanosleep", "pmevent",
    "griddepcontrol", "setmaxnreg", "prefetch", "prefetchu", "st", "red", "cp", "sust",
    "stmatrix", "discard", "applypriority", "createpolicy_none",
))  # fmt: skip
"""Opcodes that write no register: their first operand, if any, is read."""
_SPECIAL_DESTINATION = frozenset(("bar", "barrier", "wmma"))
_IRREGULAR = NO_DESTINATION | _SPECIAL_DESTINATION

NOTABLE = frozenset((
    "mov", "call", "mbarrier", "ld", "ldu", "st", "atom", "red", "tex", "tld4", "suld", "sust",
    "ldmatrix", "stmatrix", "wmma", "cp",
))  # fmt: skip
"""Opcodes whose operands matter beyond their class: thread indices, calls, memory sites. A
`mov` is notable only when it reads a special register (a thread index)."""

Site = tuple[int, int]  # (block, instruction)


@dataclass(frozen=True)
class FunctionScan:
    """Tables of one function, built once and only read afterwards."""

    single_site: dict[str, Site]  # registers written exactly once
    multiple_sites: dict[str, list[Site]]  # the others: every site, in program order
    notable: tuple[tuple[int, ...], ...]  # per block: positions of NOTABLE opcodes


def destinations(instruction: Instruction) -> tuple[str, ...]:
    """Registers an instruction writes."""
    operands = instruction.operands
    if not operands:
        return ()
    opcode = instruction.opcode
    if opcode in NO_DESTINATION:
        return ()
    first = operands[0]
    if type(first) is Register and opcode not in _SPECIAL_DESTINATION:
        return (first.name,)
    if opcode in ("bar", "barrier") and "red" not in instruction.modifiers:
        return ()
    if opcode == "wmma" and instruction.modifiers[:1] == ("store",):
        return ()
    return _registers_in(operands[0])


def _registers_in(operand: Operand) -> tuple[str, ...]:
    if isinstance(operand, Register):
        return (operand.name,)
    if isinstance(operand, Vector):
        names: list[str] = []
        for element in operand.elements:
            names.extend(_registers_in(element))
        return tuple(names)
    if isinstance(operand, PredicatePair):
        return _registers_in(operand.first) + _registers_in(operand.second)
    return ()


def _vector_registers(vector: Vector) -> tuple[str, ...] | list[str]:
    """`_registers_in` for the common vector destination: registers and sinks only."""
    names = []
    for element in vector.elements:
        if type(element) is Register:
            names.append(element.name)
        elif type(element) is not Sink:
            return _registers_in(vector)
    return names


def scan_function(function: Function) -> FunctionScan:
    """Definition sites of every register and positions of notable opcodes.

    The common instruction (one register written) costs one dictionary operation; the rare
    ones (vectors, predicate pairs, barriers) go through `destinations`."""
    first: dict[str, Site] = {}
    more: dict[str, list[Site]] = {}
    notable_per_block: list[tuple[int, ...]] = []
    irregular = _IRREGULAR
    notable = NOTABLE
    for b, block in enumerate(function.blocks):
        notable_here: list[int] = []
        for i, instruction in enumerate(block.instructions):
            # Fields by position: cheaper than by name, or than unpacking all seven.
            opcode = instruction[0]
            operands = instruction[2]
            if opcode in notable and (
                opcode != "mov" or (len(operands) > 1 and type(operands[1]) is SpecialRegister)
            ):
                notable_here.append(i)
            if not operands:
                continue
            head = operands[0]
            if type(head) is Register and opcode not in irregular:
                site = (b, i)
                earlier = first.setdefault(head.name, site)
                if earlier is not site:
                    _add_site(more, head.name, earlier, site)
                continue
            if opcode in NO_DESTINATION:
                continue
            site = (b, i)
            if type(head) is Vector and opcode not in irregular:
                names = _vector_registers(head)
            else:
                names = destinations(instruction)
            for name in names:
                earlier = first.setdefault(name, site)
                if earlier is not site:
                    _add_site(more, name, earlier, site)
        notable_per_block.append(tuple(notable_here))
    for name in more:
        del first[name]
    return FunctionScan(first, more, tuple(notable_per_block))


def _add_site(more: dict[str, list[Site]], name: str, earlier: Site, site: Site) -> None:
    sites = more.get(name)
    if sites is None:
        more[name] = [earlier, site]
    else:
        sites.append(site)
