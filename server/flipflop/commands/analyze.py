"""`flipflop analyze FILE.cu`: predictions, Pareto front and recommendation for every kernel."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.commands.errors import print_error, print_file_error
from flipflop.commands.launch_options import (
    add_compile_options,
    add_launch_options,
    add_space_options,
    analysis_options,
    confidence_argument,
    fraction_argument,
    share_argument,
    shortlist_help,
)
from flipflop.commands.progress import progress_bar
from flipflop.findings import compiler_findings, findings
from flipflop.formats.errors import FormatError
from flipflop.gpu.profiles import UnknownGpuError
from flipflop.model.error import DEFAULT_LEVEL
from flipflop.pipeline import analyze
from flipflop.report.json_report import analysis_to_json
from flipflop.report.sarif import findings_to_sarif
from flipflop.report.table import analysis_to_table
from flipflop.results import AnalysisResult
from flipflop.space.errors import SourcePositionError, SpaceError
from flipflop.toolchain import ToolchainError

# Sources above this size are refused rather than compiled (a generated file, a wrong path).
MAX_SOURCE_BYTES = 8 * 1024 * 1024


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "analyze",
        help="predict time, power and energy of each kernel for every block shape",
        description="Compile FILE.cu to PTX, analyse every kernel and recommend a block shape.",
    )
    parser.add_argument("file", type=Path, metavar="FILE.cu")
    add_compile_options(parser)
    add_launch_options(parser)
    add_space_options(parser)
    parser.add_argument("--emit-kernel-tuner", type=Path, metavar="FILE",
                        help="write the shortlist (--shortlist) as a Kernel Tuner input")
    parser.add_argument("--shortlist", type=share_argument, default=DEFAULT_SHORTLIST_SHARE,
                        metavar="FRACTION", help=shortlist_help())
    parser.add_argument("--slack", type=fraction_argument, default=0.05, metavar="FRACTION",
                        help="slowdown allowed vs the fastest configuration (default 0.05)")
    parser.add_argument("--confidence", type=confidence_argument, default=DEFAULT_LEVEL,
                        metavar="LEVEL",
                        help="change a launch only when its saving exceeds the model's error at"
                        f" this level (0.5, 0.8, 0.9, 0.95 or off; default {DEFAULT_LEVEL:g})")
    parser.add_argument("--power-limits", action="store_true",
                        help="also sweep GPU power limits over the profile's settable range")
    parser.add_argument("--format", choices=("table", "json", "sarif"), default="table")
    parser.add_argument("--all", action="store_true", help="table: show every configuration")
    parser.add_argument("--min-saving", type=fraction_argument, default=0.05, metavar="FRACTION",
                        help="sarif: report launches whose saving is at least this")
    parser.set_defaults(run=run)


def emit_shortlist(result: AnalysisResult, path: Path) -> None:
    """Write the shortlist of the (first) kernel with a search space for Kernel Tuner."""
    from flipflop.formats.emit import kernel_tuner_input, write_kernel_tuner_input

    for kernel in result.kernels:
        launch = kernel.primary
        space = launch.space
        if space is None:
            continue
        shortlist = [dict(p.params) for p in launch.advice.shortlist]
        spec = kernel_tuner_input(space.space, space.launch, shortlist,
                                  kernel.info.display_name.split("(")[0], result.path)
        write_kernel_tuner_input(path, spec)
        return
    raise SpaceError("--emit-kernel-tuner needs a search space: give --tune or a "
                     "`// flipflop: tune` annotation")


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    try:
        size = path.stat().st_size
    except OSError as error:
        print_error(path, 0, 0, f"cannot read: {error.strerror or error}")
        return 1
    if not path.is_file():
        print_error(path, 0, 0, "not a file")
        return 1
    if size > MAX_SOURCE_BYTES:
        print_error(path, 0, 0, f"{size} bytes is over the {MAX_SOURCE_BYTES}-byte limit")
        return 1
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        print_error(path, 0, 0, f"not UTF-8 text ({error.reason} at byte {error.start})")
        return 1
    try:
        with progress_bar("compiling variants") as progress, \
                progress_bar("analysing kernels", unit="kernel") as kernels_done:
            result = analyze(path, text, analysis_options(args), progress=progress,
                             kernel_progress=kernels_done)
    except UnknownGpuError as error:
        print(f"flipflop: error: {error}", file=sys.stderr)
        return 1
    except SourcePositionError as error:
        print_error(path, error.line, error.column, error.reason)
        return 1
    except (SpaceError, FormatError) as error:
        print_file_error(path, str(error))
        return 1
    except ToolchainError as error:
        print_error(path, 0, 0, str(error))
        return 3
    failed = result.failed
    for finding in compiler_findings(result.diagnostics, str(path)):
        if finding.severity == "error" or failed:
            print_error(path, finding.line, 0, finding.message, finding.severity)
    if failed:
        return 1
    if args.format == "json":
        json.dump(analysis_to_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "sarif":
        sarif = findings_to_sarif(path, findings(result, args.min_saving))
        json.dump(sarif, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(analysis_to_table(result, args.all))
    for note in result.notes:
        print(f"flipflop: note: {note}", file=sys.stderr)
    for kernel in result.kernels:
        space = kernel.primary.space
        for warning in space.constraint_warnings if space is not None else ():
            print(f"flipflop: warning: {warning}", file=sys.stderr)
    if args.emit_kernel_tuner is not None:
        try:
            emit_shortlist(result, args.emit_kernel_tuner)
        except (SpaceError, FormatError) as error:
            print_file_error(args.emit_kernel_tuner, str(error))
            return 1
    if args.kernel is not None and not result.kernels:
        return 1
    return 0
