"""Command-line options shared by `analyze` and `measure`: which kernel, which launches."""

from __future__ import annotations

import argparse
from pathlib import Path

from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.formats.tune_file import read_tune_file
from flipflop.launch import Dim3
from flipflop.model.error import DEFAULT_LEVEL
from flipflop.options import AnalysisOptions
from flipflop.space.request import SpaceOptions


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


def confidence_argument(text: str) -> float | None:
    """A level of the model's error intervals (`flipflop.model.error.LEVELS`), or `off`."""
    from flipflop.model.error import LEVELS

    if text.strip().lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number or 'off'") from None
    if not any(abs(value - level) < 1e-9 for level in LEVELS):
        raise argparse.ArgumentTypeError(
            f"the confidence level is one of {', '.join(f'{level:g}' for level in LEVELS)}"
            f" or 'off', got {value:g}")
    return value


def share_argument(text: str) -> float:
    """A share of the search space: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(
            f"the shortlist is a share of the space, above 0 and at most 1, got {value}")
    return value


def shortlist_help() -> str:
    return (f"share of the configurations worth measuring, the predicted fastest (default "
            f"{DEFAULT_SHORTLIST_SHARE:g}); --emit-kernel-tuner writes them")


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


def names_argument(text: str) -> tuple[str, ...]:
    """`A,B[,C]` → ("A", "B", "C"): parameter names or expressions, comma-separated."""
    parts = tuple(part.strip() for part in text.split(","))
    if not parts or any(not part for part in parts):
        raise argparse.ArgumentTypeError(f"expected NAME[,NAME...], got '{text}'")
    return parts


def count_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive count, got {value}")
    return value


def add_space_options(parser: argparse.ArgumentParser) -> None:
    """Compile-time tunables with Kernel Tuner's semantics (README.md, "Search spaces of
    compile-time tunables")."""
    group = parser.add_argument_group(
        "search space of compile-time tunables (Kernel Tuner semantics)"
    )
    group.add_argument("--tune", action="append", default=[], metavar="NAME=V1,V2,...",
                       help="a tunable: values, or an inclusive range NAME=A..B:STEP; repeat")
    group.add_argument("--tune-file", type=Path, metavar="SPACE.json",
                       help="a Kernel Tuner tune_params object (name: list of values)")
    group.add_argument("--restrict", action="append", default=[], metavar="EXPR",
                       help="a Kernel Tuner restriction, e.g. 'block_size_x*block_size_y<=1024'")
    group.add_argument("--define", action="append", default=[], metavar="NAME=EXPR",
                       help="a value computed from the tunables, prepended as #define NAME "
                            "VALUE (Kernel Tuner's defines), e.g. 'N_PER_WARP=N_PER_BLOCK // "
                            "block_size_y'; repeat")
    group.add_argument("--problem-size", type=names_argument, metavar="X[,Y[,Z]]",
                       help="Kernel Tuner's problem_size (integers or expressions)")
    for axis in "xyz":
        group.add_argument(f"--grid-div-{axis}", type=names_argument, metavar="P[,Q...]",
                           help=f"grid_div_{axis}: the grid in {axis} is the problem size "
                                "divided by their product (default: the block size)")
    group.add_argument("--block-size-names", type=names_argument, metavar="X[,Y[,Z]]",
                       help="the tunables that give the block (default block_size_x,y,z)")
    group.add_argument("--sample", type=count_argument, metavar="N",
                       help="evaluate a seeded sample of N configurations")
    group.add_argument("--seed", type=int, default=0, metavar="S", help="the sample's seed")
    group.add_argument("--compiler", choices=("auto", "nvrtc", "nvcc"), default="auto",
                       help="compile variants with NVRTC in-process or with nvcc (auto: NVRTC "
                            "when installed and the source is device code only)")
    group.add_argument("--jobs", type=count_argument, metavar="N",
                       help="worker processes compiling variants (default: one per core)")
    group.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the cache of analysed variants")


def space_options(args: argparse.Namespace) -> SpaceOptions:
    """SpaceOptions from parsed `add_space_options` arguments; raises `FormatError` for a
    `--tune-file` that cannot be read."""
    if not hasattr(args, "tune"):
        return SpaceOptions()
    return SpaceOptions(
        tune=tuple(args.tune),
        tunables=read_tune_file(args.tune_file) if args.tune_file is not None else (),
        restrictions=tuple(args.restrict),
        defines=tuple(args.define),
        problem_size=args.problem_size,
        grid_div=(args.grid_div_x, args.grid_div_y, args.grid_div_z),
        block_size_names=args.block_size_names,
        sample=args.sample,
        seed=args.seed,
        compiler=args.compiler,
        workers=args.jobs or 0,
        use_cache=not args.no_cache,
    )


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
        shortlist_share=getattr(args, "shortlist", DEFAULT_SHORTLIST_SHARE),
        confidence=getattr(args, "confidence", DEFAULT_LEVEL),
        space=space_options(args),
    )
