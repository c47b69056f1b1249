"""`flipflop` command line: one subcommand per module in `flipflop.commands`.

Each command module provides `register(subparsers)` (adds its parser and sets `run`) and a
`run(args) -> int`. Exit codes: 0 ok, 1 bad input, 2 usage, 3 missing/failing toolchain.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from flipflop import __version__

COMMANDS = ("analyze", "occupancy", "profiles", "ptx", "measure", "calibrate", "validate")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with `only` the one command about to run: importing a command
    costs what it imports (`validate` brings SciPy), and a run needs one."""
    parser = argparse.ArgumentParser(
        prog="flipflop",
        description="Predict time, power and energy of CUDA kernels for every block shape.",
    )
    parser.add_argument("--version", action="version", version=f"flipflop {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if only is None or name == only:
            module = importlib.import_module(f"flipflop.commands.{name}")
            module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = arguments[0] if arguments and arguments[0] in COMMANDS else None
    parser = build_parser(command)
    args = parser.parse_args(arguments)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
