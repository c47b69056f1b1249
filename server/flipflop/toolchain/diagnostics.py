"""Compiler messages (nvcc, cudafe++, the host preprocessor, ptxas) as structured data."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

Severity = Literal["error", "warning", "note", "remark"]


@dataclass(frozen=True)
class ToolDiagnostic:
    """One message of a CUDA tool, located in the user's files where the tool says where."""

    file: str | None  # the user's path (temporary copies already mapped back); None: no place
    line: int | None  # 1-based
    column: int | None  # 1-based; only some tools give it
    severity: Severity
    message: str
    tool: str  # "cudafe++", "host compiler", "ptxas", "nvcc"
    code: str | None = None  # the tool's own number, e.g. "177-D"
    # For a message inside a header: the `#include` lines that led there, nearest first,
    # as (file, 1-based line); the last one is in the file that was compiled.
    included_from: tuple[tuple[str, int], ...] = ()


# cudafe++ (the CUDA front end): `a.cu(12): error: identifier "x" is undefined`, then the source
# line echoed with two extra spaces of indent and a caret line under the offending column.
_CUDAFE = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark|note)"
    r"(?: #(?P<code>[\w-]+))?: (?P<msg>.*)$"
)
_CUDAFE_ECHO_INDENT = 2
# The host preprocessor (gcc/clang style): `a.cu:3:10: fatal error: x.h: No such file`.
_GCC = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? "
    r"(?P<sev>fatal error|error|warning|note): (?P<msg>.*)$"
)
# ptxas reporting a place in the PTX: `ptxas /tmp/k.ptx, line 31; error   : Feature ...`.
PTXAS_LOCATED = re.compile(
    r"^ptxas (?P<file>.+?), line (?P<line>\d+); (?P<sev>error|warning|fatal)\s*: (?P<msg>.*)$"
)
# A tool speaking without a place: `nvcc fatal   : Unsupported gpu architecture 'compute_1'`.
_UNLOCATED = re.compile(
    r"^(?P<tool>nvcc|ptxas|cicc|cudafe\+\+|nvlink|fatbinary)\b[^:]*?"
    r"(?P<sev>fatal|error|warning)\s*: (?P<msg>.*)$"
)
# The host preprocessor's include chain before a message in a header:
# `In file included from a.h:2,` then `                 from k.cu:1:`.
_INCLUDED_FROM = re.compile(r"^(?:In file included from|\s+from) (?P<file>.+?):(?P<line>\d+)[:,]$")
# Summaries that only repeat that errors happened.
_NOISE = re.compile(
    r"errors? detected in the compilation of|^compilation terminated|"
    r"Ptx assembly aborted due to errors|^Remark: The warnings can be suppressed"
)


def parse_tool_output(
    output: str, map_path: Callable[[str], str] = lambda path: path
) -> tuple[ToolDiagnostic, ...]:
    """Every diagnostic in nvcc's combined output; `map_path` turns temporary paths into real ones.

    Located ptxas messages keep the PTX file and line; `flipflop.toolchain.ptxas` maps them to
    CUDA source lines because only it knows the PTX text.
    """
    lines = output.splitlines()
    found: list[ToolDiagnostic] = []
    chain: list[tuple[str, int]] = []
    for index, text in enumerate(lines):
        include = _INCLUDED_FROM.match(text)
        if include:
            chain.append((map_path(include["file"]), int(include["line"])))
            continue
        diagnostic = _parse_line(text, map_path)
        if diagnostic is None:
            chain = []
            continue
        if diagnostic.tool == "cudafe++":
            column = _caret_column(lines[index + 1 : index + 3])
            if column is not None:
                diagnostic = replace(diagnostic, column=column)
        if chain and diagnostic.tool == "host compiler":
            diagnostic = replace(diagnostic, included_from=tuple(chain))
        chain = []
        found.append(diagnostic)
    return tuple(found)


def ensure_failure_reported(
    diagnostics: tuple[ToolDiagnostic, ...], tool: str, returncode: int, output: str
) -> tuple[ToolDiagnostic, ...]:
    """Add a diagnostic when a tool failed without an error message we could read."""
    if returncode == 0 or any(d.severity == "error" for d in diagnostics):
        return diagnostics
    status = (
        f"was killed by signal {-returncode}" if returncode < 0 else f"exited with {returncode}"
    )
    tail = " | ".join(line.strip() for line in output.strip().splitlines()[-3:] if line.strip())
    message = f"{tool} {status}" + (f": {tail}" if tail else " without a message")
    return (*diagnostics, ToolDiagnostic(None, None, None, "error", message, tool))


def _parse_line(text: str, map_path: Callable[[str], str]) -> ToolDiagnostic | None:
    if _NOISE.search(text):
        return None
    match = _CUDAFE.match(text)
    if match:
        return ToolDiagnostic(
            file=map_path(match["file"]),
            line=int(match["line"]),
            column=None,
            severity=_severity(match["sev"]),
            message=match["msg"].strip(),
            tool="cudafe++",
            code=match["code"],
        )
    match = PTXAS_LOCATED.match(text)
    if match:
        return ToolDiagnostic(
            file=map_path(match["file"]),
            line=int(match["line"]),
            column=None,
            severity=_severity(match["sev"]),
            message=match["msg"].strip(),
            tool="ptxas",
        )
    match = _UNLOCATED.match(text)
    if match:
        return ToolDiagnostic(
            file=None,
            line=None,
            column=None,
            severity=_severity(match["sev"]),
            message=match["msg"].strip(),
            tool=match["tool"],
        )
    match = _GCC.match(text)
    if match:
        return ToolDiagnostic(
            file=map_path(match["file"]),
            line=int(match["line"]),
            column=int(match["col"]) if match["col"] else None,
            severity=_severity(match["sev"]),
            message=match["msg"].strip(),
            tool="host compiler",
        )
    return None


_SEVERITIES: dict[str, Severity] = {"warning": "warning", "remark": "remark", "note": "note"}


def _severity(word: str) -> Severity:
    return _SEVERITIES.get(word, "error")  # error, fatal, fatal error, catastrophic error


def _caret_column(following: list[str]) -> int | None:
    """Column of the `^` that cudafe++ prints under its echo of the source line."""
    if len(following) < 2:
        return None
    caret_line = following[1]
    if caret_line.strip() != "^":
        return None
    return max(caret_line.index("^") - _CUDAFE_ECHO_INDENT + 1, 1)
