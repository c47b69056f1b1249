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

from collections.abc import Sequence
from dataclasses import dataclass

from flipflop.analysis.cfg import ControlFlow
from flipflop.analysis.expr import Expr
from flipflop.analysis.memory import AddressKind, describe_address
from flipflop.analysis.poly import DATA, LANE, THREAD, Poly, atom_taint
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

_NO_DESTINATION = frozenset((
    "bra", "brx", "ret", "exit", "call", "trap", "membar", "fence", "nanosleep", "pmevent",
    "griddepcontrol", "setmaxnreg", "prefetch", "prefetchu", "st", "red", "cp", "sust",
    "stmatrix", "discard", "applypriority", "createpolicy_none",
))  # fmt: skip
_SPECIAL_DESTINATION = frozenset(("bar", "barrier", "wmma"))
_IRREGULAR = _NO_DESTINATION | _SPECIAL_DESTINATION
_LOADS = frozenset(("ld", "ldu", "tex", "tld4", "suld", "ldmatrix", "wmma", "txq", "suq"))
_MAX_DEPTH = 48
_COMPARISONS = {
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "lo": "lt", "ls": "le", "hi": "gt", "hs": "ge",
    "equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge",
}  # fmt: skip
NEGATE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}
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


def destinations(instruction: Instruction) -> tuple[str, ...]:
    """Registers an instruction writes."""
    operands = instruction.operands
    if not operands:
        return ()
    opcode = instruction.opcode
    if opcode in _NO_DESTINATION:
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

    def __init__(self, function: Function, flow: ControlFlow, kernel_params: frozenset[str]):
        self.function = function
        self.flow = flow
        self.kernel_params = kernel_params
        self._block_defs: dict[int, dict[str, list[int]]] = {}
        # Most registers are written once: keep the first site, and a list only for the rest.
        first_sites: dict[str, tuple[int, int]] = {}
        more_sites: dict[str, list[tuple[int, int]]] = {}
        for b, block in enumerate(function.blocks):
            for i, instruction in enumerate(block.instructions):
                operands = instruction.operands
                if not operands:
                    continue
                first = operands[0]
                if type(first) is Register and instruction.opcode not in _IRREGULAR:
                    written: tuple[str, ...] = (first.name,)
                else:
                    written = destinations(instruction)
                for name in written:
                    if name in first_sites:
                        more_sites.setdefault(name, [first_sites[name]]).append((b, i))
                    else:
                        first_sites[name] = (b, i)
        self.def_sites: dict[str, list[tuple[int, int]]] = {
            name: more_sites.get(name) or [site] for name, site in first_sites.items()
        }
        self._taints: dict[str, int] = {}
        self.inductions = self._find_induction_variables()
        self._memo: dict[tuple[int, int, str], Poly] = {}
        self._busy: set[tuple[int, int, str]] = set()
        self._reachable: dict[int, frozenset[int]] = {}
        self._described: dict[
            int, tuple[Poly, tuple[AddressKind, tuple[Expr, ...] | None, int]]
        ] = {}

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
        elif opcode in ("atom", "match"):
            base |= DATA | THREAD | LANE
        elif opcode == "shfl":
            base |= THREAD | LANE
        elif opcode in ("vote", "redux", "activemask", "elect"):
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
        if name not in self.def_sites:
            return DATA | THREAD | LANE
        blocks = self.function.blocks
        everything = DATA | THREAD | LANE
        result = 0
        seen = {name}
        stack = [name]
        while stack and result != everything:
            register = stack.pop()
            if register != name:
                memo = self._taints.get(register)
                if memo is not None:
                    result |= memo
                    continue
            for b, i in self.def_sites.get(register, ()):
                sources, base = self._taint_sources(blocks[b].instructions[i])
                result |= base
                for source in sources:
                    if source not in seen:
                        seen.add(source)
                        stack.append(source)
        self._taints[name] = result
        return result

    # ------------------------------------------------------------------ induction variables

    def _find_induction_variables(self) -> dict[str, InductionVariable]:
        found: dict[str, InductionVariable] = {}
        flow = self.flow
        blocks = self.function.blocks
        for name, sites in self.def_sites.items():
            if len(sites) < 2:
                continue
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
            return self.register(operand.name, block, index, depth)
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
    ) -> tuple[AddressKind, tuple[Expr, ...] | None, int]:
        """The address's lane pattern; unrolled code reuses one base register with many
        offsets, so the pattern is worked out once per base value."""
        base = self.operand(address.base, block, index)
        cached = self._described.get(id(base))
        if cached is None:
            cached = (base, describe_address(base))
            self._described[id(base)] = cached  # the entry keeps `base` alive: ids stay unique
        kind, coefficients, offset = cached[1]
        return kind, coefficients, offset + address.offset

    def address(self, address: Address, block: int, index: int, depth: int = 0) -> Poly:
        base = self.operand(address.base, block, index, depth)
        return base + Poly.constant(address.offset) if address.offset else base

    def register(self, name: str, block: int, index: int, depth: int = 0) -> Poly:
        sites = self.def_sites.get(name)
        if not sites:
            return Poly.opaque(DATA | THREAD | LANE, name)  # never written: undefined input
        if len(sites) == 1:
            b, i = sites[0]
            return self.definition(b, i, name, depth)
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
        key = (block, index, name)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        if depth > _MAX_DEPTH or key in self._busy:
            return Poly.opaque(self.taint(name), name)
        self._busy.add(key)
        try:
            value = self._evaluate(self.function.blocks[block].instructions[index], block, index,
                                   name, depth + 1)  # fmt: skip
        finally:
            self._busy.discard(key)
        if value.too_big:
            value = Poly.opaque(self.taint(name), f"{name}@{block}.{index}")
        self._memo[key] = value
        return value

    def _evaluate(self, instruction: Instruction, block: int, index: int, name: str,
                  depth: int) -> Poly:  # fmt: skip
        opcode = instruction.opcode
        modifiers = instruction.modifiers
        operands = instruction.operands
        key = (name, block, index)
        if len(operands) < 2 or not isinstance(operands[0], Register):
            return self._opaque(name, key)

        def value(position: int) -> Poly:
            return self.operand(operands[position], block, index, depth)

        if opcode in ("mov", "cvta") or (opcode == "cvt" and _integer_conversion(modifiers)):
            if isinstance(operands[1], Immediate) and isinstance(operands[1].value, float):
                return self._opaque(name, key)
            return value(1)
        if opcode == "ld" and "param" in modifiers:
            source = operands[1]
            if (
                isinstance(source, Address)
                and isinstance(source.base, Symbol)
                and source.base.name in self.kernel_params
            ):
                suffix = f"+{source.offset}" if source.offset else ""
                return Poly.atom(f"param:{source.base.name}{suffix}")
            return self._opaque(name, key)
        if _is_float(modifiers):
            return self._opaque(name, key)
        if opcode == "add" and len(operands) == 3:
            return value(1) + value(2)
        if opcode == "sub" and len(operands) == 3:
            return value(1) - value(2)
        if opcode == "neg":
            return -value(1)
        if opcode in ("mul", "mul24") and len(operands) == 3 and "hi" not in modifiers:
            return value(1) * value(2)
        if opcode in ("mad", "mad24") and len(operands) == 4 and "hi" not in modifiers:
            return value(1) * value(2) + value(3)
        if opcode == "shl" and len(operands) == 3 and isinstance(operands[2], Immediate):
            return value(1).scale(2 ** int(operands[2].value))
        if opcode == "and" and len(operands) == 3 and isinstance(operands[2], Immediate):
            return self._masked(value(1), int(operands[2].value), name, key)
        if opcode in ("shr", "div") and len(operands) == 3 and isinstance(operands[2], Immediate):
            divisor = int(operands[2].value)
            divisor = 2**divisor if opcode == "shr" else divisor
            dividend = value(1)
            if dividend.is_constant and divisor > 0:
                return Poly.constant(int(dividend.constant_term) // divisor)
            if divisor > 0 and not dividend.taint() & (THREAD | DATA):
                return dividend.scale(1 / divisor)  # a launch-wide value: the floor is dropped
        return self._opaque_from_operands(instruction, key, depth)

    def _opaque_from_operands(
        self, instruction: Instruction, key: tuple[str, int, int], depth: int
    ) -> Poly:
        """An integer value the analysis does not follow: its taint is that of its inputs,
        read from their (memoized) values rather than by a search of the whole function."""
        name, block, index = key
        sources, taint = self._taint_sources(instruction)
        for source in sources:
            taint |= self.register(source, block, index, depth).taint()
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
            op = next((_COMPARISONS[m] for m in instruction.modifiers if m in _COMPARISONS), None)
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
            parts = [self._predicate_operand(o, b, i, depth) for o in operands[1:]]
            if any(part is None for part in parts) or not parts:
                return None
            known = [part for part in parts if part is not None]
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

    def _predicate_operand(self, operand: Operand, block: int, index: int,
                           depth: int) -> Condition | None:  # fmt: skip
        if isinstance(operand, Negated):
            inner = self._predicate_operand(operand.operand, block, index, depth)
            return None if inner is None else negate(inner)
        if isinstance(operand, Register):
            return self.condition(operand.name, block, index, depth + 1)
        return None

    def _definition_site(self, name: str, block: int, index: int) -> tuple[int, int] | None:
        sites = self.def_sites.get(name)
        if sites and len(sites) == 1:
            return sites[0]
        local = self.defs_in_block(block).get(name)
        if local:
            earlier = [i for i in local if i < index]
            if earlier:
                return block, earlier[-1]
        sites = self.def_sites.get(name)
        if sites and len(sites) == 1:
            return sites[0]
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


def _integer_conversion(modifiers: Sequence[str]) -> bool:
    return not _is_float(modifiers)


_FLOAT_TYPES = frozenset(("f32", "f64", "f16", "bf16", "f16x2", "bf16x2", "tf32"))


def _is_float(modifiers: Sequence[str]) -> bool:
    return not _FLOAT_TYPES.isdisjoint(modifiers)


def _names(operand: Operand) -> str | None:
    return operand.name if isinstance(operand, Register) else None
