"""`flipflop ptx FILE.ptx`: what the PTX parser sees, per function.

Name, kind, parameters, performance directives, basic blocks, instruction count and an opcode
histogram, as a table or as JSON. Malformed PTX is reported as `FILE:LINE:COL: error: MESSAGE`
followed by the offending line; statements of a newer PTX ISA are reported as warnings.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from flipflop.commands.errors import print_error
from flipflop.ir import Function, Module, Variable
from flipflop.ptx import PtxSyntaxError, parse_ptx

DEFAULT_MAX_SIZE = 64 * 1024 * 1024
_MOST_OPCODES_IN_TABLE = 12
_SIZE = re.compile(r"(?P<number>[0-9]+)\s*(?P<unit>[kKmMgG]?)(?:i?[bB])?")
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def size_argument(text: str) -> int:
    """Bytes, optionally with a binary unit: `1048576`, `512K`, `64M`, `1GiB`."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size in bytes (e.g. 65536, 512K, 64M): {text!r}")
    return int(match["number"]) * _UNITS[match["unit"].lower()]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "ptx",
        help="parse a PTX file and summarise its functions",
        description="Parse a PTX file and show, per function: kind, parameters, performance "
        "directives, basic blocks, instruction count and opcode histogram.",
    )
    parser.add_argument("file", type=Path, metavar="FILE.ptx")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--max-size",
        type=size_argument,
        default=DEFAULT_MAX_SIZE,
        metavar="BYTES",
        help="refuse larger files (default 64M; units K, M, G are powers of 1024)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    text = _read_text(path, args.max_size)
    if text is None:
        return 1
    try:
        module = parse_ptx(text, str(path))
    except PtxSyntaxError as error:
        print_error(path, error.line, error.column, error.message)
        _print_source_line(error.source_line, error.column)
        return 1
    for statement in module.unknown_statements:
        print_error(path, statement.ptx_line, statement.column, statement.message, "warning")
    if args.format == "json":
        json.dump(module_summary(module, str(path)), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(module_table(module, str(path)))
    return 0


def _read_text(path: Path, max_size: int) -> str | None:
    """The file's text, or None after printing why it cannot be PTX."""
    try:
        if not path.is_file():
            reason = "no such file" if not path.exists() else "not a regular file"
            print_error(path, 0, 0, f"cannot read: {reason}")
            return None
        size = path.stat().st_size
        if size > max_size:
            print_error(
                path,
                0,
                0,
                f"file is {_human(size)}, over the {_human(max_size)} limit "
                "(raise it with --max-size)",
            )
            return None
        data = path.read_bytes()
    except OSError as error:
        print_error(path, 0, 0, f"cannot read: {error.strerror or error}")
        return None
    if not data.strip():
        print_error(path, 0, 0, "empty file: PTX starts with a .version directive")
        return None
    if b"\0" in data:
        print_error(path, 0, 0, "binary data, not PTX text")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        print_error(path, 0, 0, f"not UTF-8 text ({error.reason} at byte {error.start})")
        return None


def _human(size: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


def _print_source_line(source_line: str, column: int) -> None:
    if not source_line:
        return
    # keep tabs in the caret's indentation so it lines up under a tab-indented line
    indent = "".join(char if char == "\t" else " " for char in source_line[: max(column - 1, 0)])
    print(f"    {source_line}\n    {indent}^", file=sys.stderr)


# --------------------------------------------------------------------------- summaries


def _variable_summary(variable: Variable) -> dict[str, Any]:
    return {
        "name": variable.name,
        "space": variable.space,
        "type": variable.type,
        "array_dims": list(variable.array_dims),
        "align": variable.align,
        "size_bytes": variable.size_bytes,
    }


def _directive_summary(function: Function) -> dict[str, Any]:
    directives = function.directives
    summary: dict[str, Any] = {}
    for name in ("maxntid", "reqntid", "reqnctapercluster"):
        value = getattr(directives, name)
        if value is not None:
            summary[name] = list(value)
    for name in ("minnctapersm", "maxnctapersm", "maxnreg", "maxclusterrank"):
        value = getattr(directives, name)
        if value is not None:
            summary[name] = value
    for name in ("explicitcluster", "noreturn"):
        if getattr(directives, name):
            summary[name] = True
    if directives.pragmas:
        summary["pragmas"] = list(directives.pragmas)
    return summary


def opcode_histogram(function: Function) -> dict[str, int]:
    """Full dotted opcodes and how often each occurs, most frequent first."""
    counts = Counter(
        instruction.full_opcode for block in function.blocks for instruction in block.instructions
    )
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def function_summary(function: Function) -> dict[str, Any]:
    return {
        "name": function.name,
        "kind": function.kind,
        "linkage": function.linkage,
        "line": function.ptx_line,
        "has_body": function.has_body,
        "params": [_variable_summary(p) for p in function.params],
        "returns": [_variable_summary(r) for r in function.returns],
        "directives": _directive_summary(function),
        "registers": [
            {"type": r.type, "prefix": r.prefix, "count": r.count} for r in function.registers
        ],
        "locals": [_variable_summary(v) for v in function.locals],
        "block_count": len(function.blocks),
        "instruction_count": function.instruction_count,
        "blocks": [
            {
                "label": block.label,
                "instructions": len(block.instructions),
                "first_line": block.instructions[0].ptx_line if block.instructions else None,
            }
            for block in function.blocks
        ],
        "opcodes": opcode_histogram(function),
    }


def module_summary(module: Module, filename: str) -> dict[str, Any]:
    return {
        "file": filename,
        "version": module.version,
        "target": list(module.target),
        "address_size": module.address_size,
        "globals": [_variable_summary(v) | {"linkage": v.linkage} for v in module.globals],
        "functions": [function_summary(f) for f in module.functions],
        "unknown_statements": [
            {"line": s.ptx_line, "column": s.column, "text": s.text, "message": s.message}
            for s in module.unknown_statements
        ],
    }


def module_table(module: Module, filename: str) -> str:
    lines = [
        f"{filename}: PTX {module.version}, target {', '.join(module.target)}, "
        f"{module.address_size}-bit addresses, {len(module.functions)} functions, "
        f"{len(module.globals)} module-scope variables"
    ]
    for function in module.functions:
        lines.append("")
        linkage = f", {function.linkage}" if function.linkage else ""
        body = "" if function.has_body else ", prototype only"
        lines.append(f"{function.name}  ({function.kind}{linkage}{body}, line {function.ptx_line})")
        params = ", ".join(_parameter_text(p) for p in function.params) or "none"
        lines.append(f"  params        {params}")
        if function.returns:
            lines.append(
                f"  returns       {', '.join(_parameter_text(r) for r in function.returns)}"
            )
        directives = _directive_summary(function)
        if directives:
            text = "; ".join(
                f"{name} {','.join(map(str, value)) if isinstance(value, list) else value}"
                for name, value in directives.items()
            )
            lines.append(f"  directives    {text}")
        if not function.has_body:
            continue
        lines.append(
            f"  blocks        {len(function.blocks)}   instructions {function.instruction_count}"
        )
        histogram = opcode_histogram(function)
        shown = list(histogram.items())[:_MOST_OPCODES_IN_TABLE]
        more = len(histogram) - len(shown)
        text = ", ".join(f"{opcode} {count}" for opcode, count in shown)
        lines.append(f"  opcodes       {text}{f', ... ({more} more)' if more > 0 else ''}")
    if module.unknown_statements:
        lines.append("")
        lines.append(f"{len(module.unknown_statements)} unknown statements (newer PTX ISA?)")
    return "\n".join(lines) + "\n"


def _parameter_text(variable: Variable) -> str:
    dims = "".join(f"[{'' if d is None else d}]" for d in variable.array_dims)
    align = f" .align {variable.align}" if variable.align else ""
    return f"{variable.name} .{variable.type}{dims}{align}"
