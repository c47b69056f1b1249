"""What the machine code's schedule explains of the time model's error, configuration by
configuration.

    .venv/bin/python calibration/scripts/machine_code_scores.py RESULT.json --arch sm_86 \\
        --source calibration/validation/xgemm.cu -I calibration/data/measured/gemm \\
        [--kernel Xgemm] [--jobs 2]

RESULT.json is what `flipflop validate --format json` wrote for one measured file: the
configurations it scored with their measured and predicted times and time terms. Each
configuration is compiled again as Kernel Tuner compiles it (`-DNAME=VALUE` for every tunable)
into a cubin for `--arch`, and nvdisasm lists it. Three things the PTX cannot show are measured
there, and the Spearman ρ of each against the model's error (measured over predicted time) is
printed, over every configuration and over those whose FP32 pipe is at least 90% of their
predicted time:

- **register-bank cycles** of the FP32 instructions (FFMA, FADD, FMUL): the register file has
  two banks, a register's bank is its number mod 2, and each bank gives one operand a cycle, so
  an instruction waits for its most-read bank; an operand the previous instruction flagged
  `.reuse` in the same slot comes from the reuse cache instead (Jia et al., "Dissecting the
  NVIDIA Volta GPU Architecture via Microbenchmarking", 2018: two banks from Volta on; NVIDIA
  developer forums, "How to understand register bank on RTX A4000": independent FFMAs at 55% of
  the peak without reuse flags and 95% with them);
- **the main loop's cycles per instruction for one warp**: the warp issues in order, one
  instruction a cycle at most, each once the registers it reads are written — after
  `ALU_DEPENDENT_LATENCY_CYCLES` for arithmetic, `SHARED_LATENCY_CYCLES` for a shared load and
  `L1_HIT_LATENCY_CYCLES` for other loads (the model's constants). The body of the backward
  branch that spans the most instructions runs twice and the second pass is counted, so that
  chains carried around the loop are paid; without a loop, the function's longest block;
- **the main loop's length** in machine instructions (16 bytes each): what instruction fetch
  would cost if the loop outgrew the instruction caches.

docs/validation.md reports what this printed for the gemm files ("Scored and not built").
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sass_costs import (
    MeasureError,
    SassFunction,
    SassInstruction,
    find_tools,
    parse_sass,
)

from flipflop.calibration.validation import spearman
from flipflop.gpu.latencies import (
    ALU_DEPENDENT_LATENCY_CYCLES,
    SHARED_LATENCY_CYCLES,
)
from flipflop.model.constants import L1_HIT_LATENCY_CYCLES
from flipflop.toolchain import ToolchainError, find_toolchain

FP32_OPCODES = frozenset(("FFMA", "FADD", "FMUL"))
# Opcodes whose first operand is read, not written.
NO_DESTINATION = frozenset((
    "ST", "STG", "STS", "STL", "RED", "REDG", "BRA", "BRX", "JMP", "CALL", "RET", "EXIT", "BAR",
    "BSSY", "BSYNC", "WARPSYNC", "NOP", "MEMBAR", "ERRBAR", "CCTL", "YIELD", "BPT", "DEPBAR",
))  # fmt: skip
SHARED_LOADS = frozenset(("LDS", "LDSM"))
OTHER_LOADS = frozenset(("LDG", "LDL", "LD", "ATOM", "ATOMG", "ATOMS"))
FP32_BOUND_SHARE = 0.9
_REGISTER = re.compile(r"\b(?P<kind>UR|R|UP|P)(?P<index>\d+)(?P<reuse>\.reuse)?")
_TIMEOUT_S = 300


@dataclass(frozen=True)
class Operand:
    slot: int  # position among the instruction's operands
    registers: tuple[str, ...]  # "R4", "R5" (a 64-bit pair), "P0"
    reuse: bool


def _width(opcode: str) -> int:
    """Registers a result or a vector operand spans."""
    if ".128" in opcode:
        return 4
    if ".64" in opcode or ".WIDE" in opcode or opcode.startswith("D"):
        return 2
    return 1


def operands_of(instruction: SassInstruction) -> tuple[tuple[str, ...], tuple[Operand, ...]]:
    """(registers written, operands read) of one instruction; the guard predicate is read."""
    base = instruction.opcode.split(".", 1)[0]
    texts = [t.strip() for t in instruction.operands.split(",")] if instruction.operands else []
    written: tuple[str, ...] = ()
    sources = list(enumerate(texts))
    if base not in NO_DESTINATION and texts:
        first = _REGISTER.search(texts[0])
        if first and first["kind"] in ("R", "UR"):
            kind, index = first["kind"], int(first["index"])
            written = tuple(f"{kind}{index + k}" for k in range(_width(instruction.opcode)))
        elif first:
            written = (f"{first['kind']}{first['index']}",)
        sources = sources[1:]
        # Comparisons write a second predicate: ISETP P0, P1, R2, R3, PT.
        if len(texts) > 1 and re.fullmatch(r"!?U?P\d", texts[1]):
            written += (texts[1].lstrip("!"),)
            sources = sources[1:]
    read: list[Operand] = []
    for slot, text in sources:
        width = 1 if "[" in text else _width(instruction.opcode)
        found = [(m["kind"], int(m["index"]), bool(m["reuse"])) for m in _REGISTER.finditer(text)]
        registers = tuple(f"{kind}{index + k}" for kind, index, _ in found
                          for k in range(width if kind in ("R", "UR") else 1))  # fmt: skip
        if registers:
            read.append(Operand(slot, registers, any(reuse for _, _, reuse in found)))
    guard = instruction.guard.lstrip("@!")
    if guard and guard not in ("PT", "UPT"):
        read.append(Operand(-1, (guard,), False))
    return written, tuple(read)


def bank_cycles(instructions: Sequence[SassInstruction]) -> list[int]:
    """Cycles each instruction takes to read its registers from the two banks (module
    docstring): at least one."""
    cycles = []
    cached: dict[int, str] = {}  # slot -> register the previous instruction flagged .reuse
    for instruction in instructions:
        _, read = operands_of(instruction)
        per_bank = [0, 0]
        kept: dict[int, str] = {}
        for operand in read:
            for register in operand.registers:
                if not register.startswith("R"):
                    continue  # predicates and uniform registers have their own files
                if cached.get(operand.slot) != register:
                    per_bank[int(register[1:]) % 2] += 1
            if operand.reuse and operand.registers:
                kept[operand.slot] = operand.registers[0]
        cached = kept
        cycles.append(max(1, *per_bank))
    return cycles


def latency_of(opcode: str) -> float:
    base = opcode.split(".", 1)[0]
    if base in SHARED_LOADS:
        return SHARED_LATENCY_CYCLES
    if base in OTHER_LOADS:
        return L1_HIT_LATENCY_CYCLES
    return ALU_DEPENDENT_LATENCY_CYCLES


def in_order_cycles(instructions: Sequence[SassInstruction]) -> float:
    """Cycles one warp takes through `instructions`, issuing them in order (module
    docstring), until every result is written."""
    ready: dict[str, float] = {}
    issued = -1.0
    for instruction in instructions:
        written, read = operands_of(instruction)
        issued = max([issued + 1.0] + [ready.get(r, 0.0) for o in read for r in o.registers])
        for register in written:
            ready[register] = issued + latency_of(instruction.opcode)
    return max([issued + 1.0, *ready.values()]) if instructions else 0.0


def main_loop(function: SassFunction) -> tuple[SassInstruction, ...]:
    """The body of the backward branch that spans the most instructions, or the longest
    block when nothing branches back."""
    starts: dict[str, int] = {}
    flat: list[SassInstruction] = []
    for label, body in function.blocks:
        starts[label] = len(flat)
        flat.extend(body)
    best: tuple[int, int] | None = None
    for position, instruction in enumerate(flat):
        start = starts.get(instruction.target or "", position + 1)
        backward = start <= position and instruction.opcode[:3] == "BRA"
        if backward and (best is None or position - start > best[1] - best[0]):
            best = (start, position)
    if best is None:
        return max((body for _, body in function.blocks), key=len, default=())
    return tuple(flat[best[0] : best[1] + 1])


def steady_cycles_per_instruction(body: Sequence[SassInstruction]) -> float:
    """In-order cycles an instruction of `body` once the loop is running: its second pass."""
    if not body:
        return 0.0
    return (in_order_cycles([*body, *body]) - in_order_cycles(body)) / len(body)


@dataclass(frozen=True)
class MachineCode:
    fp32_bank_cycles: float  # per FP32 instruction, over the whole kernel
    loop_cycles_per_instruction: float
    loop_instructions: int


def machine_code(listing: str, kernel: str | None = None) -> MachineCode:
    functions = parse_sass(listing)
    names = [n for n in functions if kernel is None or kernel in n]
    if not names:
        raise SystemExit(f"no function named like {kernel!r} in the listing")
    function = max((functions[n] for n in names),
                   key=lambda f: sum(len(body) for _, body in f.blocks))  # fmt: skip
    everything = [i for _, body in function.blocks for i in body]
    cycles = bank_cycles(everything)
    fp32 = [c for i, c in zip(everything, cycles, strict=True)
            if i.opcode.split(".", 1)[0] in FP32_OPCODES]  # fmt: skip
    body = main_loop(function)
    return MachineCode(sum(fp32) / len(fp32) if fp32 else 0.0,
                       steady_cycles_per_instruction(body), len(body))  # fmt: skip


def compile_listing(source: Path, arch: str, includes: Sequence[str],
                    defines: Mapping[str, object], nvcc: Path, nvdisasm: Path) -> str:  # fmt: skip
    """nvdisasm's listing of `source` compiled with `-DNAME=VALUE` for each define."""
    with tempfile.TemporaryDirectory(prefix="machine-code-") as folder:
        cubin = Path(folder, "kernel.cubin")
        flags = [f"-D{name}={value}" for name, value in defines.items()]
        compiled = subprocess.run([str(nvcc), "-cubin", f"-arch={arch}",
                                   *(f"-I{i}" for i in includes), *flags, str(source), "-o",
                                   str(cubin)], capture_output=True, text=True,
                                  timeout=_TIMEOUT_S)  # fmt: skip
        if compiled.returncode != 0:
            raise SystemExit(f"nvcc failed on {source} with {' '.join(flags)}:\n"
                             f"{compiled.stderr.strip()}")  # fmt: skip
        listed = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True,
                                text=True, timeout=_TIMEOUT_S)  # fmt: skip
        if listed.returncode != 0:
            raise SystemExit(f"nvdisasm failed on {source} with {' '.join(flags)}:\n"
                             f"{listed.stderr.strip()}")  # fmt: skip
        return listed.stdout


def _log_error(config: Mapping[str, object]) -> float:
    measured, predicted = config["measured_time_s"], config["predicted_time_s"]
    assert isinstance(measured, float) and isinstance(predicted, float)
    return math.log(measured / predicted)


def _fp32_bound(config: Mapping[str, object]) -> bool:
    parts = config.get("predicted_time_parts_s")
    predicted = config["predicted_time_s"]
    assert isinstance(predicted, float)
    return isinstance(parts, dict) and parts.get("fp32", 0.0) >= FP32_BOUND_SHARE * predicted


def scores(configs: Sequence[Mapping[str, object]],
           codes: Sequence[MachineCode]) -> Iterable[str]:  # fmt: skip
    """Lines: ρ of the error against each property, everywhere and where FP32 bounds."""
    for name, chosen in (("every configuration", [True] * len(configs)),
                         ("FP32-bound", [_fp32_bound(c) for c in configs])):  # fmt: skip
        picked = [(c, m) for c, m, keep in zip(configs, codes, chosen, strict=True) if keep]
        if len(picked) < 3:
            yield f"{name}: {len(picked)} configurations, too few to rank"
            continue
        errors = [_log_error(c) for c, _ in picked]
        banks = [m.fp32_bank_cycles for _, m in picked]
        loop = [m.loop_cycles_per_instruction for _, m in picked]
        length = [m.loop_instructions for _, m in picked]
        yield (f"{name} ({len(picked)}): FP32 bank cycles {min(banks):.2f}-{max(banks):.2f}, "
               f"ρ(error) {_rho(errors, banks)}; main loop cycles an instruction "
               f"{min(loop):.2f}-{max(loop):.2f}, ρ(error) {_rho(errors, loop)}; main loop "
               f"instructions {min(length)}-{max(length)}, ρ(error) "
               f"{_rho(errors, [float(n) for n in length])}")  # fmt: skip


def _rho(xs: Sequence[float], ys: Sequence[float]) -> str:
    value = spearman(xs, ys)
    return "n/a" if value is None else f"{value:+.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="flipflop validate --format json output")
    parser.add_argument("--arch", required=True, help="e.g. sm_86 for the RTX 3090")
    parser.add_argument("--source", type=Path, required=True)
    parser.add_argument("--kernel", default=None, help="function name (default: the largest)")
    parser.add_argument("-I", dest="includes", action="append", default=[])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    try:
        result = json.loads(args.result.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"{args.result}: cannot read it as JSON ({error})") from error
    if not isinstance(result, dict) or not isinstance(result.get("configurations"), list):
        raise SystemExit(f"{args.result}: not `flipflop validate --format json` output "
                         "(no configurations)")  # fmt: skip
    configs = [c for c in result["configurations"]
               if isinstance(c.get("measured_time_s"), float)
               and isinstance(c.get("predicted_time_s"), float)]  # fmt: skip
    try:
        nvcc = find_toolchain().nvcc
        nvdisasm = find_tools().nvdisasm
    except (ToolchainError, MeasureError) as error:
        raise SystemExit(str(error)) from error

    def one(config: Mapping[str, object]) -> MachineCode:
        parameters = config["parameters"]
        assert isinstance(parameters, dict)
        listing = compile_listing(args.source, args.arch, args.includes, parameters, nvcc,
                                  nvdisasm)  # fmt: skip
        return machine_code(listing, args.kernel)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        codes = list(pool.map(one, configs))
    print(f"{args.result.name}: {len(configs)} configurations on {args.arch}")
    for line in scores(configs, codes):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
