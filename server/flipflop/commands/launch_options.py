"""Command-line options shared by `analyze` and `measure`: which kernel, which launches."""

from __future__ import annotations

import argparse
from pathlib import Path

from flipflop.launch import Dim3
from flipflop.pipeline import AnalysisOptions


def dim3_argument(text: str) -> Dim3:
    """`X[,Y[,Z]]` → (x, y, z); every extent a positive integer."""
    parts = text.split(",")
    if not 1 <= len(parts) <= 3:
        raise argparse.ArgumentTypeError(f"expected X[,Y[,Z]], got '{text}'")
    values = [_positive(part, text) for part in parts]
    values += [1] * (3 - len(values))
    return (values[0], values[1], values[2])


def blocks_argument(text: str) -> tuple[Dim3, ...]:
    """`256,128x2,8x8x4` → ((256,1,1), (128,2,1), (8,8,4))."""
    shapes: list[Dim3] = []
    for item in text.split(","):
        parts = item.lower().split("x")
        if not item or len(parts) > 3:
            raise argparse.ArgumentTypeError(f"expected BX[xBY[xBZ]],..., got '{text}'")
        values = [_positive(part, text) for part in parts] + [1] * (3 - len(parts))
        shapes.append((values[0], values[1], values[2]))
    return tuple(shapes)


def param_argument(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got '{text}'")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{value}' in '{text}' is not a number") from None


def fraction_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0.0 <= value <= 10.0:
        raise argparse.ArgumentTypeError(f"slack must be between 0 and 10, got {value}")
    return value


def _positive(part: str, whole: str) -> int:
    try:
        value = int(part.strip(), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{part}' in '{whole}' is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"extents must be positive, got {value} in '{whole}'")
    return value


def add_compile_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu", default="rtx3070", help="GPU profile id (see `flipflop profiles`)")
    parser.add_argument("--arch", help="target architecture, e.g. sm_86 (default: the GPU's)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]")
    parser.add_argument("--std", help="C++ standard passed to nvcc, e.g. c++17")
    parser.add_argument("--compile-commands", type=Path, metavar="PATH",
                        help="compile_commands.json holding this file's flags")
    parser.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: discovered)")
    parser.add_argument("--compile-timeout", type=float, default=60.0, metavar="SECONDS")


def add_launch_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", metavar="NAME", help="only this kernel (source or PTX name)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--grid", type=dim3_argument, metavar="X[,Y[,Z]]",
                      help="fixed grid whatever the block (e.g. one block per head)")
    size.add_argument("--threads", type=dim3_argument, metavar="X[,Y[,Z]]",
                      help="total work items; the grid is ceil(threads/block) per dimension")
    parser.add_argument("--dynamic-smem", type=int, metavar="BYTES",
                        help="dynamic shared memory per block")
    parser.add_argument("--param", type=param_argument, action="append", default=[],
                        metavar="NAME=VALUE", help="value of a scalar kernel parameter")
    parser.add_argument("--blocks", type=blocks_argument, metavar="BXxBY[xBZ],...",
                        help="evaluate exactly these block shapes")


def analysis_options(args: argparse.Namespace) -> AnalysisOptions:
    """AnalysisOptions from parsed `add_compile_options` + `add_launch_options` arguments."""
    return AnalysisOptions(
        gpu=args.gpu,
        arch=args.arch,
        nvcc_path=args.nvcc,
        include_dirs=tuple(Path(d) for d in args.include_dirs),
        defines=tuple(args.defines),
        std=args.std,
        compile_commands=args.compile_commands,
        compile_timeout_s=args.compile_timeout,
        kernel=args.kernel,
        grid=args.grid,
        threads=args.threads,
        dynamic_smem_bytes=args.dynamic_smem,
        params=tuple(args.param),
        blocks=args.blocks,
        slack=getattr(args, "slack", 0.05),
        power_limits=getattr(args, "power_limits", False),
    )
