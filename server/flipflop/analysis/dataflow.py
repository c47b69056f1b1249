"""Register values of one function as polynomials, with its loops' induction variables.

What a value depends on is `flipflop.analysis.taint`; branch conditions over these values are
`flipflop.analysis.conditions`.

PTX is not in SSA form: nvcc reuses a register across loop iterations and sometimes elsewhere.
The analysis is conservative about that:
- a use reads the nearest earlier definition in its own block when there is one;
- otherwise a register defined once in the function has that definition's value;
- a register defined once inside a loop as `r = r ± step` (in a block every iteration runs) and
  elsewhere only outside that loop is an induction variable: `init + step · iter:L`; the update
  may read a copy of r made earlier in the iteration (`mov c, r; ...; add r, c, step`), go
  through a temporary (`add t, r, step; ...; mov r, t`) or end a chain of adds of one step
  (`add t, r, s; add u, t, s; add r, u, s`: an unrolled pointer walk, 3 steps);
- any other register defined more than once is an opaque value carrying the union of the taints
  of all its definitions (computed flow-insensitively to a fixed point).

Approximations (documented because they are not exact):
- `and x, 2^k - 1` with a small mask on a value that is the same for every thread (a loop
  remainder `n & 3`) is taken as its mean, (2^k - 1) / 2; any other mask made of one run of set
  bits (`(tid + 1) % 256`) is taken as x: right for the lanes of a warp as long as they do not
  wrap around. Rounding a thread index down (`and x, -2^k`) is exact: x minus a lane function.
- `shr`/`div` by a constant of a value that is the same for every thread (`blockDim.x / 2`) is
  taken as exact division. Of a nonnegative function of the thread's position in its block,
  `shr`/`div`/`rem` by a constant are lane functions (`flipflop.analysis.lanes`), and the sign
  test of a signed division (`shr.s32 x, 31`) is 0; other thread-dependent values are opaque.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from operator import itemgetter

from flipflop.analysis.cfg import ControlFlow
from flipflop.analysis.conditions import Condition, predicate_taint, read_condition
from flipflop.analysis.lanes import LaneFunction, function_atom, is_nonnegative
from flipflop.analysis.memory import (
    AddressKind,
    BlockCoefficients,
    LaneCoefficients,
    block_strides,
    describe_address,
    lane_functions,
)
from flipflop.analysis.poly import DATA, LANE, MAX_TERMS, THREAD, Monomial, Poly
from flipflop.analysis.scan import FunctionScan, destinations, scan_function
from flipflop.analysis.taint import ADDS_TAINT, RegisterTaints
from flipflop.ir import (
    Address,
    Function,
    Immediate,
    Instruction,
    Operand,
    Register,
    SpecialRegister,
    Symbol,
)

# (kind, lane coefficients, constant offset, number of the base within the function)
AddressPattern = tuple[AddressKind, LaneCoefficients | None, int, int]

_MAX_DEPTH = 48
_MAX_CHAIN = 64  # adds an unrolled pointer walk may chain between two updates of its pointer
# A mask whose set bits run from 2^k to at least this bit rounds any thread index down to a
# multiple of 2^k (a block holds at most 1024 threads, a grid row far fewer than 2^20 blocks).
_HIGH_BITS = 1 << 20
_COPIES = frozenset(("mov", "cvta"))
_MULTIPLIES = frozenset(("mul", "mul24"))
_MULTIPLY_ADDS = frozenset(("mad", "mad24"))
_first = itemgetter(0)
# Opcodes `_evaluate` follows with two sources, or with a constant second source.
_BINARY = frozenset(("add", "sub", "mul", "mul24", "shl", "and", "shr", "div", "rem"))


@dataclass(frozen=True)
class InductionVariable:
    register: str
    loop: int
    increment: tuple[int, int]  # (block, instruction) of `r = r + step`
    step: Operand
    step_sign: int  # +1 for add, -1 for sub
    geometric: bool  # `r = r >> step` (step_sign +1, halving) or `r = r << step` (-1, doubling)
    inits: tuple[tuple[int, int], ...]
    # The update adds `step` this many times, through a chain of temporaries (an unrolled
    # pointer walk: `t1 = r + s; t2 = t1 + s; r = t2 + s`).
    repeats: int = 1


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
        self._taints = RegisterTaints(
            self._instructions, self._single_site, self._multiple_sites, kernel_params
        )
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
            tuple[tuple[Monomial, float], ...], tuple[AddressKind, LaneCoefficients | None, int]
        ] = {}
        self._described: dict[int, tuple[Poly, AddressPattern]] = {}
        self._block_strides: list[BlockCoefficients | None] = []  # by number of address base
        self._lane_functions: list[tuple[LaneFunction, ...]] = []  # by number of address base

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

    def taint(self, name: str) -> int:
        """Everything the register may depend on (see `flipflop.analysis.taint`)."""
        return self._taints.of(name)

    # ------------------------------------------------------------------ induction variables

    def _find_induction_variables(self) -> dict[str, InductionVariable]:
        found: dict[str, InductionVariable] = {}
        flow = self.flow
        blocks = self.function.blocks
        for name, sites in self._multiple_sites.items():
            looped = [site for site in sites if flow.innermost_loop[site[0]] is not None]
            for b, i in looped:
                instruction = blocks[b].instructions[i]
                loop_index = flow.innermost_loop[b]
                assert loop_index is not None
                loop = flow.loops[loop_index]
                copies = partial(self._copies_at, name=name, block=b, index=i, body=loop.body)
                repeats = 1
                step = _self_update(instruction, name, copies)
                if step is None:
                    step = self._update_through_temporary(instruction, name, b, i, loop.body)
                if step is None:
                    chain = self._update_through_chain(instruction, name, b, i, loop.body)
                    if chain is not None:
                        step, repeats = (chain[0], 1, False), chain[1]
                if step is None:
                    continue
                operand, sign, geometric = step
                others = [site for site in sites if site != (b, i)]
                if any(site[0] in loop.body for site in others):
                    continue
                if not all(flow.dominates(b, latch) for latch in loop.latches):
                    continue
                found[name] = InductionVariable(
                    name, loop_index, (b, i), operand, sign, geometric, tuple(others), repeats
                )
                break
        return found

    def _update_through_temporary(
        self, instruction: Instruction, name: str, block: int, index: int, body: frozenset[int]
    ) -> tuple[Operand, int, bool] | None:
        """`add t, name, step; ...; mov name, t`, the other way nvcc writes an update: the
        temporary's only definition updates `name` earlier in the same iteration."""
        operands = instruction.operands
        if instruction.opcode != "mov" or len(operands) != 2 or instruction.guard is not None:
            return None
        temporary = operands[1]
        if not isinstance(temporary, Register) or not self._before_in_iteration(
            temporary.name, block, index, body
        ):
            return None
        b, i = self._single_site[temporary.name]
        copies = partial(self._copies_at, name=name, block=b, index=i, body=body)
        return _self_update(self._instructions[b][i], name, copies)

    def _update_through_chain(
        self, instruction: Instruction, name: str, block: int, index: int, body: frozenset[int]
    ) -> tuple[Operand, int] | None:
        """(step, how many times) when `add name, t, step` ends a chain of adds of one step
        that starts from `name` (or its copy) earlier in the same basic block."""
        current, b, i = instruction, block, index
        step: Operand | None = None
        for repeats in range(1, _MAX_CHAIN + 1):
            operands = current.operands
            if current.opcode != "add" or len(operands) != 3 or current.guard is not None:
                return None
            source, increment = operands[1], operands[2]
            if not isinstance(source, Register):
                source, increment = increment, source
            if not isinstance(source, Register) or (step is not None and increment != step):
                return None
            if isinstance(increment, Register) and (
                increment.name == name or any(site[0] in body for site in
                                              self.definition_sites(increment.name))
            ):  # fmt: skip
                return None  # the step must be the same in every iteration
            step = increment
            if source.name == name or self._copies_at(source.name, name=name, block=b, index=i,
                                                      body=body):  # fmt: skip
                return (step, repeats) if repeats > 1 else None
            if not self._before_in_iteration(source.name, b, i, body):
                return None
            b, i = self._single_site[source.name]
            if b != block:
                return None  # an exit between two links (unrolled early exits) ends the walk
            current = self._instructions[b][i]
        return None

    def _before_in_iteration(self, register: str, block: int, index: int,
                             body: frozenset[int]) -> bool:  # fmt: skip
        """Whether the register's only definition is in the loop and runs before (block,
        index) in every iteration that reaches it."""
        site = self._single_site.get(register)
        if site is None or site[0] not in body:
            return False
        if site[0] == block:
            return site[1] < index
        return self.flow.dominates(site[0], block)

    def _copies_at(self, register: str, *, name: str, block: int, index: int,
                   body: frozenset[int]) -> bool:  # fmt: skip
        """Whether `register` holds `name`'s value from the start of the iteration when read at
        (block, index): nvcc often copies the counter (`mov r12, r48`) at the top of the loop
        and updates it from the copy (`add r48, r12, 8`). The copy must be the register's only
        definition, inside the loop and before the read on every path; the caller checks that
        the loop writes `name` nowhere else."""
        if not self._before_in_iteration(register, block, index, body):
            return False
        b, i = self._single_site[register]
        copy = self._instructions[b][i]
        source = copy.operands[1] if copy.opcode == "mov" and len(copy.operands) == 2 else None
        return copy.guard is None and isinstance(source, Register) and source.name == name

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

    def describe(self, address: Address, block: int, index: int) -> AddressPattern:
        """The address's lane pattern, its constant offset and which base it is from (the same
        number for addresses that differ only in their constant part: one array, one stencil
        window); unrolled code reuses one base register with many offsets, so the pattern is
        worked out once per base value."""
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
        kind, coefficients, offset, base_number = cached[1]
        return kind, coefficients, offset + address.offset, base_number

    def _pattern(self, base: Poly) -> AddressPattern:
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
            known = self._patterns[shape] = (kind, coefficients, len(self._patterns))
            self._block_strides.append(block_strides(base))
            self._lane_functions.append(lane_functions(base) or ())
        constant = terms.get((), 0)
        return known[0], known[1], int(constant) if float(constant).is_integer() else 0, known[2]

    def base_block_strides(self, number: int) -> BlockCoefficients | None:
        """`block_strides` of the address base `number` (as `describe` numbers them)."""
        return self._block_strides[number] if 0 <= number < len(self._block_strides) else None

    def base_lane_functions(self, number: int) -> tuple[LaneFunction, ...]:
        """`lane_functions` of the address base `number` (as `describe` numbers them)."""
        return self._lane_functions[number] if 0 <= number < len(self._lane_functions) else ()

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
        return step.scale(induction.step_sign * induction.repeats)

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
        """`shr`/`div`/`rem` by a constant (and any other binary opcode with a constant
        operand)."""
        if opcode in ("shr", "div", "rem"):
            divisor = 2**amount if opcode == "shr" else amount
            remainder = opcode == "rem"
            if dividend.is_constant and divisor > 0:
                value = int(dividend.constant_term)
                return Poly.constant(value % divisor if remainder else value // divisor)
            if divisor > 0 and not remainder and not dividend.taint() & (THREAD | DATA):
                return dividend.scale(1 / divisor)  # a launch-wide value: the floor is dropped
            if (opcode == "shr" and amount == _register_bits(instruction) - 1
                    and is_nonnegative(dividend)):  # fmt: skip
                return Poly.constant(0)  # the sign of a thread index: a signed division's test
            function = function_atom(dividend, divisor, remainder)
            if function is not None:
                return function
        return self._opaque_from_operands(instruction, name, block, index, depth)

    def _opaque_from_operands(
        self, instruction: Instruction, name: str, block: int, index: int, depth: int
    ) -> Poly:
        """An integer value the analysis does not follow: its taint is that of its inputs,
        read from their (memoized) values rather than by a search of the whole function."""
        known = self._single_values
        taint = 0
        if instruction.opcode not in ADDS_TAINT:
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
        sources, taint = self._taints.sources(instruction)
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
        if mask >= 1 << 31:  # written as an unsigned constant: its two's complement value
            mask -= 1 << (64 if mask >= 1 << 32 else 32)
        lowest = mask & -mask
        contiguous = mask != 0 and ((mask + lowest) & mask) == 0  # one run of set bits
        if contiguous and lowest > 1 and (mask < 0 or mask >= _HIGH_BITS):
            # Rounding down to a multiple of 2^k (the run reaches past any thread index):
            # x − x mod 2^k, the remainder kept as a lane function.
            remainder = function_atom(operand, lowest, True)
            if remainder is not None:
                return operand - remainder
        if contiguous:
            return operand
        return self._opaque(name, key)

    # ------------------------------------------------------------------ conditions

    def condition(self, predicate: str, block: int, index: int) -> Condition | None:
        """See `flipflop.analysis.conditions.read_condition`."""
        return read_condition(self, predicate, block, index)

    def predicate_taint(self, predicate: str, block: int, index: int) -> int:
        """`taint` of a predicate read at (block, index), through `setp` and predicate logic
        (see `flipflop.analysis.conditions.predicate_taint`)."""
        return predicate_taint(self, predicate, block, index)

    def definition_site(self, name: str, block: int, index: int) -> tuple[int, int] | None:
        """The definition a use at (block, index) reads, when it is known: the register's
        only one, or the nearest earlier one in the same block."""
        single = self._single_site.get(name)
        if single is not None:
            return single
        local = self.defs_in_block(block).get(name)
        if local:
            earlier = [i for i in local if i < index]
            if earlier:
                return block, earlier[-1]
        return None


def _register_bits(instruction: Instruction) -> int:
    return 64 if not {"s64", "u64", "b64"}.isdisjoint(instruction.modifiers) else 32


def _self_update(
    instruction: Instruction, name: str, copies: Callable[[str], bool]
) -> tuple[Operand, int, bool] | None:
    """(step operand, sign, geometric) when the instruction is `name = name ± step`,
    `name = name >> step` or `name = name << step`, reading `name` itself or a register that
    `copies` it."""
    operands = instruction.operands
    if len(operands) != 3 or not isinstance(operands[0], Register):
        return None

    def reads_name(register: str) -> bool:
        return register == name or copies(register)

    opcode = instruction.opcode
    first, second = operands[1], operands[2]
    first_reads = isinstance(first, Register) and reads_name(first.name)
    if opcode == "add":
        if first_reads:
            return second, 1, False
        if isinstance(second, Register) and reads_name(second.name):
            return first, 1, False
    if opcode == "sub" and first_reads:
        return second, -1, False
    if opcode == "shr" and first_reads and isinstance(second, Immediate):
        return second, 1, True
    if opcode == "shl" and first_reads and isinstance(second, Immediate):
        return second, -1, True
    return None


_FLOAT_TYPES = frozenset(("f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "tf32"))
