"""`flipflop-lsp [--stdio]` and `python -m flipflop.lsp`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from flipflop import __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flipflop-lsp", description="FlipFlop language server (stdio)."
    )
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
    parser.add_argument("--log-file", help="write the server's log to this file")
    parser.add_argument("--version", action="version", version=f"flipflop-lsp {__version__}")
    args = parser.parse_args(argv)
    if args.log_file:
        logging.basicConfig(filename=args.log_file, level=logging.INFO)
    from flipflop.lsp.server import create_server

    create_server().start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
