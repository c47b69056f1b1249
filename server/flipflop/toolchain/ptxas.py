"""Resource usage per kernel from `ptxas -v`, and ptxas errors mapped to CUDA source lines."""

from __future__ import annotations

import bisect
import re
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from flipflop.resources import Resources
from flipflop.toolchain.arches import normalize_arch
from flipflop.toolchain.compile import DEFAULT_TIMEOUT_S
from flipflop.toolchain.diagnostics import (
    ToolDiagnostic,
    ensure_failure_reported,
    parse_tool_output,
)
from flipflop.toolchain.discovery import Toolchain
from flipflop.toolchain.process import run_tool

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_CUMULATIVE_STACK = re.compile(r"(\d+) bytes cumulative stack size")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"')


class AssemblyError(Exception):
    """ptxas rejected the PTX; `diagnostics` say where in the CUDA source."""

    def __init__(self, diagnostics: tuple[ToolDiagnostic, ...]) -> None:
        first = next((d for d in diagnostics if d.severity == "error"), None)
        super().__init__(first.message if first else "ptxas failed")
        self.diagnostics = diagnostics


@dataclass(frozen=True)
class AssemblyResult:
    """ptxas's verdict on a PTX module: resources per kernel, or errors."""

    resources: dict[str, Resources]  # mangled kernel name -> usage
    diagnostics: tuple[ToolDiagnostic, ...]
    command: tuple[str, ...]
    elapsed_s: float
    returncode: int

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def assemble(
    ptx_text: str,
    arch: str,
    toolchain: Toolchain,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    cancel: threading.Event | None = None,
) -> AssemblyResult:
    """Run `ptxas -v` on the PTX for `arch`; errors become diagnostics at CUDA source lines."""
    target = normalize_arch(arch)
    with tempfile.TemporaryDirectory(prefix="flipflop-") as scratch_name:
        ptx_path = Path(scratch_name) / "module.ptx"
        ptx_path.write_text(ptx_text, encoding="utf-8")
        command = [
            str(toolchain.ptxas), "-v", f"-arch={target}", str(ptx_path),
            "-o", str(Path(scratch_name) / "module.cubin"),
        ]  # fmt: skip
        run = run_tool(command, timeout_s, cwd=Path(scratch_name), cancel=cancel)
    output = run.stderr + "\n" + run.stdout
    located = parse_tool_output(output)
    source_map = PtxSourceMap.of(ptx_text)
    diagnostics = ensure_failure_reported(
        tuple(source_map.to_source(d) for d in located), "ptxas", run.returncode, output
    )
    return AssemblyResult(
        resources=parse_ptxas_verbose(output) if run.returncode == 0 else {},
        diagnostics=diagnostics,
        command=tuple(command),
        elapsed_s=run.elapsed_s,
        returncode=run.returncode,
    )


def ptxas_resources(
    ptx_text: str, arch: str, toolchain: Toolchain, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, Resources]:
    """Resource usage of every kernel (`.entry`) by mangled name; `AssemblyError` on failure."""
    result = assemble(ptx_text, arch, toolchain, timeout_s)
    if not result.ok:
        raise AssemblyError(result.diagnostics)
    return result.resources


def parse_ptxas_verbose(output: str) -> dict[str, Resources]:
    """Read the `ptxas info` lines of `ptxas -v` into per-kernel resources.

    ptxas prints, per kernel: "Compiling entry function 'K'", "Function properties for K", the
    stack/spill line, then "Used N registers, used B barriers, [S bytes cumulative stack size,]
    [M bytes smem,] [C bytes cmem[0]]"; device functions get only the properties lines.
    """
    frames: dict[str, tuple[int, int, int]] = {}
    used_lines: dict[str, str] = {}
    entries: list[str] = []
    current_entry: str | None = None
    properties_of: str | None = None
    for line in output.splitlines():
        if match := _ENTRY.search(line):
            current_entry = match.group(1)
            entries.append(current_entry)
        elif match := _PROPERTIES.search(line):
            properties_of = match.group(1)
        elif (match := _FRAME.search(line)) and properties_of is not None:
            frames[properties_of] = (int(match[1]), int(match[2]), int(match[3]))
            properties_of = None
        elif _USED.search(line) and current_entry is not None:
            used_lines[current_entry] = line
    resources: dict[str, Resources] = {}
    for entry in entries:
        used = used_lines.get(entry, "")
        frame, spill_stores, spill_loads = frames.get(entry, (0, 0, 0))
        registers = _USED.search(used)
        barriers = _BARRIERS.search(used)
        cumulative = _CUMULATIVE_STACK.search(used)
        smem = _SMEM.search(used)
        resources[entry] = Resources(
            registers=int(registers[1]) if registers else 0,
            static_smem_bytes=int(smem[1]) if smem else 0,
            # The cumulative size includes the frames of called device functions.
            stack_bytes=max(frame, int(cumulative[1]) if cumulative else 0),
            spill_store_bytes=spill_stores,
            spill_load_bytes=spill_loads,
            barriers=int(barriers[1]) if barriers else 0,
            const_bytes=sum(int(c) for c in _CMEM.findall(used)),
        )
    return resources


@dataclass(frozen=True)
class PtxSourceMap:
    """Which CUDA source position each PTX line came from (the last `.loc` before it)."""

    loc_lines: tuple[int, ...]  # PTX line numbers (1-based) of `.loc` directives, ascending
    positions: tuple[tuple[int, int, int], ...]  # (file index, line, column) of each `.loc`
    files: dict[int, str]

    @classmethod
    def of(cls, ptx_text: str) -> PtxSourceMap:
        loc_lines: list[int] = []
        positions: list[tuple[int, int, int]] = []
        files: dict[int, str] = {}
        for number, line in enumerate(ptx_text.splitlines(), start=1):
            if ".loc" in line and (match := _LOC.match(line)):
                loc_lines.append(number)
                positions.append((int(match[1]), int(match[2]), int(match[3])))
            elif ".file" in line and (match := _FILE.match(line)):
                files[int(match[1])] = match[2].replace('\\"', '"').replace("\\\\", "\\")
        return cls(tuple(loc_lines), tuple(positions), files)

    def source_of(self, ptx_line: int) -> tuple[str, int, int] | None:
        """(file, line, column) of the PTX line, or None when no `.loc` precedes it."""
        index = bisect.bisect_right(self.loc_lines, ptx_line) - 1
        if index < 0:
            return None
        file_index, line, column = self.positions[index]
        if file_index not in self.files or line == 0:
            return None
        return self.files[file_index], line, column

    def to_source(self, diagnostic: ToolDiagnostic) -> ToolDiagnostic:
        """A located ptxas message moved from its PTX line to the CUDA line."""
        if diagnostic.tool != "ptxas" or diagnostic.line is None:
            return diagnostic
        place = self.source_of(diagnostic.line)
        note = f" (PTX line {diagnostic.line})"
        if place is None:
            return replace(diagnostic, file=None, line=None, message=diagnostic.message + note)
        file, line, column = place
        return replace(
            diagnostic,
            file=file,
            line=line,
            column=column or None,
            message=diagnostic.message + note,
        )
