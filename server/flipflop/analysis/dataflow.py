"""Register values of one function: taint (what a value depends on) and polynomial forms.

PTX is not in SSA form: nvcc reuses a register across loop iterations and sometimes elsewhere.
The analysis is conservative about that:
- a use reads the nearest earlier definition in its own block when there is one;
- otherwise a register defined once in the function has that definition's value;
- a register defined once inside a loop as `r = r ± step` (in a block every iteration runs) and
  elsewhere only outside that loop is an induction variable: `init + step · iter:L`;
- any other register defined more than once is an opaque value carrying the union of the taints
  of all its definitions (computed flow-insensitively to a fixed point).

Approximations (documented because they are not exact):
- `and x, 2^k - 1` with a small mask on a value that is the same for every thread (a loop
  remainder `n & 3`) is taken as its mean, (2^k - 1) / 2; any other mask made of one run of set
  bits (`(tid + 1) % 256`, rounding down with `-2^k`) is taken as x: right for the lanes of a
  warp as long as they do not wrap around.
- `shr`/`div` by a constant of a value that is the same for every thread (`blockDim.x / 2`) is
  taken as exact division; on thread-dependent values it is opaque.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter

from flipflop.analysis.cfg import ControlFlow
from flipflop.analysis.memory import AddressKind, LaneCoefficients, describe_address
from flipflop.analysis.poly import DATA, LANE, MAX_TERMS, THREAD, Monomial, Poly, atom_taint
from flipflop.analysis.scan import FunctionScan, destinations, scan_function
from flipflop.ir import (
    Address,
    Function,
    Immediate,
    Instruction,
    Negated,
    Operand,
    PredicatePair,
    Register,
    SpecialRegister,
    Symbol,
    Vector,
)

_LOADS = frozenset(("ld", "ldu", "tex", "tld4", "suld", "ldmatrix", "wmma", "txq", "suq"))
_MAX_DEPTH = 48
_COMPARISONS = {
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "lo": "lt", "ls": "le", "hi": "gt", "hs": "ge",
    "equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge",
}  # fmt: skip
NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
_COPIES = frozenset(("mov", "cvta"))
_MULTIPLIES = frozenset(("mul", "mul24"))
_MULTIPLY_ADDS = frozenset(("mad", "mad24"))
_first = itemgetter(0)
# Opcodes `_evaluate` follows with two sources, or with a constant second source.
_BINARY = frozenset(("add", "sub", "mul", "mul24", "shl", "and", "shr", "div"))
_PREDICATE_LOGIC = frozenset(("and", "or", "xor", "not", "mov"))
_ANY_LANE_DATA = frozenset(("atom", "match"))
_LANE_EXCHANGES = frozenset(("shfl",))
_WARP_WIDE = frozenset(("vote", "redux", "activemask", "elect"))
# Opcodes whose value depends on more than their operands: `_taint_sources` adds the rest.
_ADDS_TAINT = _LOADS | _ANY_LANE_DATA | _LANE_EXCHANGES | _WARP_WIDE
SWAP = {"eq": "eq", "ne": "ne", "lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}


# --------------------------------------------------------------------------- conditions


@dataclass(frozen=True)
class Compare:
    left: Poly
    op: str  # eq ne lt le gt ge
    right: Poly
    site: tuple[int, int]  # (block, instruction) of the setp


@dataclass(frozen=True)
class Not:
    inner: Condition


@dataclass(frozen=True)
class Both:
    left: Condition
    right: Condition


@dataclass(frozen=True)
class Either:
    left: Condition
    right: Condition


Condition = Compare | Not | Both | Either


def negate(condition: Condition) -> Condition:
    if isinstance(condition, Not):
        return condition.inner
    if isinstance(condition, Compare):
        return Compare(condition.left, NEGATE[condition.op], condition.right, condition.site)
    if isinstance(condition, Both):
        return Either(negate(condition.left), negate(condition.right))
    return Both(negate(condition.left), negate(condition.right))


# --------------------------------------------------------------------------- registers


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


@dataclass(frozen=True)
class InductionVariable:
    register: str
    loop: int
    increment: tuple[int, int]  # (block, instruction) of `r = r + step`
    step: Operand
    step_sign: int  # +1 for add, -1 for sub
    geometric: bool  # `r = r >> step`: halving loops
    inits: tuple[tuple[int, int], ...]


class FunctionValues:
    """Taints and polynomial values of the registers of one function."""

    def __init__(
        self,
        function: Function,
        flow: ControlFlow,
        kernel_params: frozenset[str],
        scan: FunctionScan | None = None,
    ):
        self.function = function
        self.flow = flow
        self.kernel_params = kernel_params
        self._instructions = tuple(block.instructions for block in function.blocks)
        self._block_defs: dict[int, dict[str, list[int]]] = {}
        tables = scan if scan is not None else scan_function(function)
        self._single_site = tables.single_site
        self._multiple_sites = tables.multiple_sites
        self._taints: dict[str, int] = {}
        self.inductions = self._find_induction_variables()
        self._memo: dict[tuple[int, int, str], Poly] = {}
        # Most registers are written once: their value is the same at every use, so it is
        # kept by name and a use finds it with one lookup.
        self._single_values: dict[str, Poly] = {}
        self._busy: set[tuple[int, int, str]] = set()
        self._busy_single: set[str] = set()
        self._reachable: dict[int, frozenset[int]] = {}
        self._lanes: dict[LaneCoefficients, LaneCoefficients] = {}
        self._patterns: dict[
            tuple[tuple[Monomial, float], ...], tuple[AddressKind, LaneCoefficients | None]
        ] = {}
        self._described: dict[
            int, tuple[Poly, tuple[AddressKind, LaneCoefficients | None, int]]
        ] = {}

    def definition_sites(self, name: str) -> Sequence[tuple[int, int]]:
        """Every (block, instruction) that writes the register, in program order."""
        single = self._single_site.get(name)
        if single is not None:
            return (single,)
        return self._multiple_sites.get(name, ())

    def is_written(self, name: str) -> bool:
        return name in self._single_site or name in self._multiple_sites

    def defs_in_block(self, block: int) -> dict[str, list[int]]:
        """Registers written in a block, with the positions that write them."""
        known = self._block_defs.get(block)
        if known is None:
            known = {}
            for index, instruction in enumerate(self.function.blocks[block].instructions):
                for name in destinations(instruction):
                    known.setdefault(name, []).append(index)
            self._block_defs[block] = known
        return known

    # ------------------------------------------------------------------ taint

    def _taint_sources(self, instruction: Instruction) -> tuple[tuple[str, ...], int]:
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
        if opcode in _LOADS:
            space = instruction.modifiers
            if opcode == "ld" and "param" in space:
                if not self._reads_kernel_param(instruction):
                    base |= DATA | THREAD | LANE  # a callee's argument or a call's result
            else:
                base |= DATA
        elif opcode in _ANY_LANE_DATA:
            base |= DATA | THREAD | LANE
        elif opcode in _LANE_EXCHANGES:
            base |= THREAD | LANE
        elif opcode in _WARP_WIDE:
            base |= DATA
        return tuple(sources), base

    def _reads_kernel_param(self, instruction: Instruction) -> bool:
        for operand in instruction.operands[1:]:
            if isinstance(operand, Address) and isinstance(operand.base, Symbol):
                return operand.base.name in self.kernel_params
        return False

    def taint(self, name: str) -> int:
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
            sources, taint = self._taint_sources(self._instructions[site[0]][site[1]])
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
            return self._taint_sources(instructions[single[0]][single[1]])
        sources: list[str] = []
        base = 0
        for b, i in self._multiple_sites.get(name, ()):
            read, added = self._taint_sources(instructions[b][i])
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

    def _find_induction_variables(self) -> dict[str, InductionVariable]:
        found: dict[str, InductionVariable] = {}
        flow = self.flow
        blocks = self.function.blocks
        for name, sites in self._multiple_sites.items():
            looped = [site for site in sites if flow.innermost_loop[site[0]] is not None]
            for b, i in looped:
                instruction = blocks[b].instructions[i]
                step = _self_update(instruction, name)
                if step is None:
                    continue
                operand, sign, geometric = step
                loop_index = flow.innermost_loop[b]
                assert loop_index is not None
                loop = flow.loops[loop_index]
                others = [site for site in sites if site != (b, i)]
                if any(site[0] in loop.body for site in others):
                    continue
                if not all(flow.dominates(b, latch) for latch in loop.latches):
                    continue
                found[name] = InductionVariable(
                    name, loop_index, (b, i), operand, sign, geometric, tuple(others)
                )
                break
        return found

    # ------------------------------------------------------------------ values

    def operand(self, operand: Operand, block: int, index: int, depth: int = 0) -> Poly:
        if type(operand) is Register:
            return self._value_of(operand.name, block, index, depth)
        if isinstance(operand, Immediate):
            return Poly.constant(operand.value)
        if isinstance(operand, SpecialRegister):
            return Poly.atom(operand.name)
        if isinstance(operand, Symbol):
            return Poly.atom(f"sym:{operand.name}")
        if isinstance(operand, Address):
            return self.address(operand, block, index, depth)
        return Poly.opaque(DATA | THREAD | LANE, f"{block}.{index}")

    def describe(
        self, address: Address, block: int, index: int
    ) -> tuple[AddressKind, LaneCoefficients | None, int]:
        """The address's lane pattern; unrolled code reuses one base register with many
        offsets, so the pattern is worked out once per base value."""
        register = address.base
        if type(register) is Register:
            base = self._single_values.get(register.name) or self._value_of(
                register.name, block, index, 0
            )
        else:
            base = self.operand(register, block, index)
        cached = self._described.get(id(base))
        if cached is None:
            cached = (base, self._pattern(base))
            self._described[id(base)] = cached  # the entry keeps `base` alive: ids stay unique
        kind, coefficients, offset = cached[1]
        return kind, coefficients, offset + address.offset

    def _pattern(self, base: Poly) -> tuple[AddressKind, LaneCoefficients | None, int]:
        """`describe_address`, shared between addresses that differ only in their constant
        term (`tile[(threadIdx.x + i) & 255]` for every i of an unrolled loop): the constant
        moves the offset and nothing else."""
        terms = base.terms
        shape = tuple(filter(_first, terms.items()))  # every term but the constant one
        known = self._patterns.get(shape)
        if known is None:
            kind, coefficients, _ = describe_address(base)
            if coefficients is not None:
                # One object per distinct lane pattern: sites then merge on its identity.
                coefficients = self._lanes.setdefault(coefficients, coefficients)
            known = self._patterns[shape] = (kind, coefficients)
        constant = terms.get((), 0)
        return known[0], known[1], int(constant) if float(constant).is_integer() else 0

    def address(self, address: Address, block: int, index: int, depth: int = 0) -> Poly:
        base = self.operand(address.base, block, index, depth)
        return base + Poly.constant(address.offset) if address.offset else base

    def register(self, name: str, block: int, index: int, depth: int = 0) -> Poly:
        if name in self._single_site:
            return self._value_of(name, block, index, depth)
        if name not in self._multiple_sites:
            return Poly.opaque(DATA | THREAD | LANE, name)  # never written: undefined input
        local = self.defs_in_block(block).get(name)
        if local:
            earlier = [i for i in local if i < index]
            if earlier:
                return self.definition(block, earlier[-1], name, depth)
        induction = self.inductions.get(name)
        if induction is not None:
            loop = self.flow.loops[induction.loop]
            if block in loop.body:
                if not induction.geometric:
                    return self._induction_value(induction, block, depth)
            elif len(induction.inits) == 1 and block not in self._after(induction.loop):
                # Read before the loop ever runs: only the initial value reaches here.
                b, i = induction.inits[0]
                return self.definition(b, i, name, depth)
        return Poly.opaque(self.taint(name), name)

    def _after(self, loop_index: int) -> frozenset[int]:
        """Blocks reachable from a loop's header (the loop itself included)."""
        known = self._reachable.get(loop_index)
        if known is None:
            successors = self.flow.successors
            start = self.flow.loops[loop_index].header
            seen = {start}
            stack = [start]
            while stack:
                for following in successors[stack.pop()]:
                    if following not in seen:
                        seen.add(following)
                        stack.append(following)
            known = frozenset(seen)
            self._reachable[loop_index] = known
        return known

    def _induction_value(self, induction: InductionVariable, block: int, depth: int) -> Poly:
        name = induction.register
        loop = self.flow.loops[induction.loop]
        fallback = Poly.opaque(self.taint(name), name)
        step = self.step(induction, depth)
        if step is None:
            return fallback
        if len(induction.inits) == 1:
            b, i = induction.inits[0]
            init = self.definition(b, i, name, depth)
        else:
            init = Poly.opaque(self.taint(name), f"{name}.init")
        value = init + step * Poly.atom(f"iter:{induction.loop}")
        increment_block = induction.increment[0]
        if (
            block != increment_block
            and block != loop.header
            and self.flow.dominates(increment_block, block)
        ):
            value = value + step  # read after this iteration's update
        return value

    def step(self, induction: InductionVariable, depth: int = 0) -> Poly | None:
        b, i = induction.increment
        key = (b, i, "#step")
        if key in self._busy:
            return None
        self._busy.add(key)
        try:
            step = self.operand(induction.step, b, i, depth + 1)
        finally:
            self._busy.discard(key)
        if step.contains(f"iter:{induction.loop}") or step.too_big:
            return None
        if any(atom.startswith("opq:") and atom.endswith(f":{induction.register}")
               for atom in step.atoms()):  # fmt: skip
            return None
        return step.scale(induction.step_sign)

    def definition(self, block: int, index: int, name: str, depth: int = 0) -> Poly:
        single = self._single_site.get(name)
        if single is not None and single == (block, index):
            return self._value_of(name, block, index, depth)
        key = (block, index, name)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        if depth > _MAX_DEPTH or key in self._busy:
            return Poly.opaque(self.taint(name), name)
        self._busy.add(key)
        try:
            value = self._evaluate(self._instructions[block][index], block, index, name, depth + 1)
        finally:
            self._busy.discard(key)
        if len(value.terms) > MAX_TERMS:
            value = Poly.opaque(self.taint(name), f"{name}@{block}.{index}")
        self._memo[key] = value
        return value

    def _value_of(self, name: str, block: int, index: int, depth: int) -> Poly:
        """`register`, with the common case inline: a register written once is evaluated at
        its definition and kept by name, since its value is the same at every use."""
        known = self._single_values.get(name)
        if known is not None:
            return known
        site = self._single_site.get(name)
        if site is None:
            return self.register(name, block, index, depth)
        busy = self._busy_single
        if depth > _MAX_DEPTH or name in busy:
            return Poly.opaque(self.taint(name), name)
        busy.add(name)
        b, i = site
        # No try/finally: an exception here ends the whole analysis of the function.
        value = self._evaluate(self._instructions[b][i], b, i, name, depth + 1)
        busy.discard(name)
        if len(value.terms) > MAX_TERMS:
            value = Poly.opaque(self.taint(name), f"{name}@{b}.{i}")
        self._single_values[name] = value
        return value

    def _evaluate(self, instruction: Instruction, block: int, index: int, name: str,
                  depth: int) -> Poly:  # fmt: skip
        """The value an instruction writes. Address chains of unrolled code make this the
        hottest function of the analysis: known register operands are read inline, and the
        arithmetic opcodes are tested first."""
        opcode, modifiers, operands = instruction[0], instruction[1], instruction[2]
        count = len(operands)
        if count < 2 or type(operands[0]) is not Register:
            return self._opaque(name, (name, block, index))
        float_typed = not _FLOAT_TYPES.isdisjoint(modifiers)
        if count == 3 and not float_typed and opcode in _BINARY:
            first, second = operands[1], operands[2]
            known = self._single_values
            if type(first) is Register:
                left = known.get(first.name) or self._value_of(first.name, block, index, depth)
            else:
                left = self.operand(first, block, index, depth)
            if type(second) is Immediate:
                constant = second.value
                if opcode == "add":
                    return left.plus_constant(constant)
                if opcode in _MULTIPLIES:
                    if "hi" in modifiers:
                        return self._opaque_from_operands(instruction, name, block, index, depth)
                    return left.scale(constant)
                if opcode == "shl":
                    return left.scale(2 ** int(constant))
                if opcode == "and":
                    return self._masked(left, int(constant), name, (name, block, index))
                if opcode == "sub":
                    return left - Poly.constant(constant)
                return self._shifted_down(opcode, left, int(constant), instruction, name, block,
                                          index, depth)  # fmt: skip
            if type(second) is Register:
                right = known.get(second.name) or self._value_of(second.name, block, index, depth)
            else:
                right = self.operand(second, block, index, depth)
            if opcode == "add":
                return left + right
            if opcode == "sub":
                return left - right
            if opcode in _MULTIPLIES and "hi" not in modifiers:
                return left * right
            return self._opaque_from_operands(instruction, name, block, index, depth)
        operand = self.operand
        if opcode in _COPIES or (opcode == "cvt" and not float_typed):
            source = operands[1]
            if type(source) is Immediate and isinstance(source.value, float):
                return self._opaque(name, (name, block, index))
            return operand(source, block, index, depth)
        if opcode == "ld" and "param" in modifiers:
            source = operands[1]
            if (
                isinstance(source, Address)
                and isinstance(source.base, Symbol)
                and source.base.name in self.kernel_params
            ):
                suffix = f"+{source.offset}" if source.offset else ""
                return Poly.atom(f"param:{source.base.name}{suffix}")
            return self._opaque(name, (name, block, index))
        if float_typed:
            return self._opaque(name, (name, block, index))
        if opcode == "neg":
            return -operand(operands[1], block, index, depth)
        if count == 3:
            return self._opaque_from_operands(instruction, name, block, index, depth)
        if opcode in _MULTIPLY_ADDS and count == 4 and "hi" not in modifiers:
            return operand(operands[1], block, index, depth) * operand(
                operands[2], block, index, depth
            ) + operand(operands[3], block, index, depth)
        return self._opaque_from_operands(instruction, name, block, index, depth)

    def _shifted_down(self, opcode: str, dividend: Poly, amount: int, instruction: Instruction,
                      name: str, block: int, index: int, depth: int) -> Poly:  # fmt: skip
        """`shr`/`div` by a constant (and any other binary opcode with a constant operand)."""
        if opcode in ("shr", "div"):
            divisor = 2**amount if opcode == "shr" else amount
            if dividend.is_constant and divisor > 0:
                return Poly.constant(int(dividend.constant_term) // divisor)
            if divisor > 0 and not dividend.taint() & (THREAD | DATA):
                return dividend.scale(1 / divisor)  # a launch-wide value: the floor is dropped
        return self._opaque_from_operands(instruction, name, block, index, depth)

    def _opaque_from_operands(
        self, instruction: Instruction, name: str, block: int, index: int, depth: int
    ) -> Poly:
        """An integer value the analysis does not follow: its taint is that of its inputs,
        read from their (memoized) values rather than by a search of the whole function."""
        known = self._single_values
        taint = 0
        if instruction.opcode not in _ADDS_TAINT:
            # The common case, arithmetic on registers and immediates, without `_taint_sources`.
            for operand in instruction.operands[1:]:
                if type(operand) is Register:
                    source = operand.name
                    value = known.get(source) or self._value_of(source, block, index, depth)
                    taint |= value.taint()
                elif type(operand) is not Immediate:
                    break
            else:
                return Poly.opaque(taint, f"{name}@{block}.{index}")
        sources, taint = self._taint_sources(instruction)
        for source in sources:
            value = known.get(source) or self._value_of(source, block, index, depth)
            taint |= value.taint()
        return Poly.opaque(taint, f"{name}@{block}.{index}")

    def _opaque(self, name: str, key: tuple[str, int, int]) -> Poly:
        return Poly.opaque(self.taint(name), f"{key[0]}@{key[1]}.{key[2]}")

    def _masked(self, operand: Poly, mask: int, name: str, key: tuple[str, int, int]) -> Poly:
        if operand.is_constant:
            return Poly.constant(int(operand.constant_term) & mask)
        low_mask = mask > 0 and (mask & (mask + 1)) == 0
        if low_mask and mask <= 15 and not operand.taint() & THREAD:
            return Poly.constant(mask / 2)  # mean remainder of an unrolled loop's trip count
        lowest = mask & -mask
        contiguous = mask != 0 and ((mask + lowest) & mask) == 0  # one run of set bits
        if contiguous:
            return operand
        return self._opaque(name, key)

    # ------------------------------------------------------------------ conditions

    def condition(self, predicate: str, block: int, index: int, depth: int = 0) -> Condition | None:
        site = self._definition_site(predicate, block, index)
        if site is None or depth > 8:
            return None
        b, i = site
        instruction = self.function.blocks[b].instructions[i]
        operands = instruction.operands
        if instruction.opcode == "setp" and len(operands) >= 3:
            op = _comparison(instruction.modifiers)
            if op is None:
                return None
            condition: Condition = Compare(
                self.operand(operands[1], b, i), op, self.operand(operands[2], b, i), (b, i)
            )
            if len(operands) >= 4:
                extra = self._predicate_operand(operands[3], b, i, depth)
                if extra is None:
                    return None
                if "and" in instruction.modifiers:
                    condition = Both(condition, extra)
                elif "or" in instruction.modifiers:
                    condition = Either(condition, extra)
                else:
                    return None
            destination = operands[0]
            if isinstance(destination, PredicatePair) and _names(destination.second) == predicate:
                return negate(condition)
            return condition
        if "pred" in instruction.modifiers and instruction.opcode in ("and", "or", "not", "mov"):
            known: list[Condition] = []
            for operand in operands[1:]:
                part = self._predicate_operand(operand, b, i, depth)
                if part is None:
                    return None
                known.append(part)
            if not known:
                return None
            if instruction.opcode == "not":
                return negate(known[0])
            if instruction.opcode == "mov":
                return known[0]
            if len(known) != 2:
                return None
            if instruction.opcode == "and":
                return Both(known[0], known[1])
            return Either(known[0], known[1])
        return None

    def predicate_taint(self, predicate: str, block: int, index: int, depth: int = 0) -> int:
        """`taint` of a predicate read at (block, index), through `setp` and predicate logic
        from the values of the compared registers: a branch's condition needs those values
        anyway, so this seldom costs a search of its own. Where the definition is not one of
        those (or not known), the flow-insensitive `taint`."""
        site = self._single_site.get(predicate) or self._definition_site(predicate, block, index)
        if site is None or depth > 8:
            return self.taint(predicate)
        b, i = site
        instruction = self._instructions[b][i]
        opcode, modifiers, operands = instruction[0], instruction[1], instruction[2]
        if opcode == "setp" and len(operands) >= 3:
            left, right = self.operand(operands[1], b, i), self.operand(operands[2], b, i)
            taint = left.taint() | right.taint()
            sources = operands[3:]  # the predicate combined with the comparison, if any
        elif opcode in _PREDICATE_LOGIC and "pred" in modifiers:
            taint = 0
            sources = operands[1:]
        else:
            return self.taint(predicate)
        for operand in sources:
            if type(operand) is Negated:
                operand = operand.operand
            if type(operand) is Register:
                taint |= self.predicate_taint(operand.name, b, i, depth + 1)
            elif type(operand) is not Immediate:
                taint |= DATA | THREAD | LANE
        return taint

    def _predicate_operand(self, operand: Operand, block: int, index: int,
                           depth: int) -> Condition | None:  # fmt: skip
        if isinstance(operand, Negated):
            inner = self._predicate_operand(operand.operand, block, index, depth)
            return None if inner is None else negate(inner)
        if isinstance(operand, Register):
            return self.condition(operand.name, block, index, depth + 1)
        return None

    def _definition_site(self, name: str, block: int, index: int) -> tuple[int, int] | None:
        single = self._single_site.get(name)
        if single is not None:
            return single
        local = self.defs_in_block(block).get(name)
        if local:
            earlier = [i for i in local if i < index]
            if earlier:
                return block, earlier[-1]
        return None


def _self_update(instruction: Instruction, name: str) -> tuple[Operand, int, bool] | None:
    """(step operand, sign, geometric) when the instruction is `name = name ± step` or
    `name = name >> step`."""
    operands = instruction.operands
    if len(operands) != 3 or not isinstance(operands[0], Register):
        return None
    opcode = instruction.opcode
    first, second = operands[1], operands[2]
    if opcode == "add":
        if isinstance(first, Register) and first.name == name:
            return second, 1, False
        if isinstance(second, Register) and second.name == name:
            return first, 1, False
    if opcode == "sub" and isinstance(first, Register) and first.name == name:
        return second, -1, False
    if (
        opcode == "shr"
        and isinstance(first, Register)
        and first.name == name
        and isinstance(second, Immediate)
    ):
        return second, 1, True
    return None


class _GaveUp(Exception):
    """`_shallow_taint` met a cycle (deep=False) or a chain too long to recurse (deep=True)."""

    def __init__(self, deep: bool) -> None:
        super().__init__()
        self.deep = deep


_MAX_SHALLOW_DEPTH = 200  # well inside Python's default recursion limit of 1000
_FLOAT_TYPES = frozenset(("f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "tf32"))


def _comparison(modifiers: tuple[str, ...]) -> str | None:
    for modifier in modifiers:
        op = _COMPARISONS.get(modifier)
        if op is not None:
            return op
    return None


def _names(operand: Operand) -> str | None:
    return operand.name if isinstance(operand, Register) else None
