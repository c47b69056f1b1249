"""What a kernel's PTX says about its block: the special registers it reads (its own code and
every device function it calls, library code included) and its full-mask warp instructions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flipflop.ir import Function, Immediate, Module, SpecialRegister, Symbol

# Warp-synchronous instructions whose last operand is the member mask (PTX ISA: shfl.sync,
# vote.sync, match.sync, redux.sync, bar.warp.sync).
_MASKED = frozenset(("shfl", "vote", "match", "redux"))
_FULL_MASKS = frozenset((-1, 0xFFFFFFFF))


@dataclass(frozen=True)
class PtxFacts:
    special_reads: frozenset[str]  # "tid.x", "ntid.y", ...
    full_mask_lines: tuple[int, ...]  # source lines (`.loc`) of full-mask warp instructions
    full_mask: bool  # any full-mask warp instruction, wherever its source is

    def reads(self, register: str) -> bool:
        return register in self.special_reads


def ptx_facts(module: Module, kernel: str, source_path: str | None = None) -> PtxFacts | None:
    """The facts of entry `kernel` and its callees; None when the module has no such entry.
    Source lines are kept for instructions of `source_path` only (not of headers)."""
    entry = module.function(kernel)
    if entry is None:
        return None
    functions = {f.name: f for f in module.functions}
    reads: set[str] = set()
    lines: set[int] = set()
    full_mask = False
    pending: list[Function] = [entry]
    seen = {entry.name}
    while pending:
        function = pending.pop()
        for block in function.blocks:
            for instruction in block.instructions:
                for operand in instruction.operands:
                    if isinstance(operand, SpecialRegister):
                        reads.add(operand.name)
                    elif isinstance(operand, Symbol) and instruction.opcode == "call":
                        callee = functions.get(operand.name)
                        if callee is not None and callee.name not in seen:
                            seen.add(callee.name)
                            pending.append(callee)
                if _full_mask(instruction.opcode, instruction.modifiers, instruction.operands):
                    full_mask = True
                    loc = instruction.loc
                    if loc is not None and loc.line > 0 and _same_file(loc.file, source_path):
                        lines.add(loc.line)
    return PtxFacts(frozenset(reads), tuple(sorted(lines)), full_mask)


def _full_mask(opcode: str, modifiers: tuple[str, ...], operands: tuple[object, ...]) -> bool:
    synchronizing = (opcode in _MASKED and "sync" in modifiers) or (
        opcode == "bar" and modifiers[:2] == ("warp", "sync"))
    if not synchronizing or not operands:
        return False
    mask = operands[-1]
    return isinstance(mask, Immediate) and mask.value in _FULL_MASKS


def _same_file(loc_file: str, source_path: str | None) -> bool:
    if source_path is None:
        return True
    return Path(loc_file).name == Path(source_path).name
