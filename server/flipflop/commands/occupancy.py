"""`flipflop occupancy`: NVIDIA's occupancy for register/shared-memory/block-size combinations."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flipflop.gpu.occupancy import WARP_SIZE, OccupancyInputError, occupancy
from flipflop.gpu.profiles import ProfileFormatError, UnknownGpuError, load_profile


def _int_list(text: str) -> list[int]:
    try:
        values = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        message = f"expected integers separated by commas, got {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if not values or any(value < 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected non-negative integers, got {text!r}")
    return values


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "occupancy",
        help="occupancy per registers, shared memory and block size (as cuda_occupancy.h)",
        description="Active blocks per SM, occupancy and the limiting resource, computed exactly "
        "as NVIDIA's cuda_occupancy.h does.",
    )
    parser.add_argument("--gpu", required=True, help="GPU profile id (see `flipflop profiles`)")
    parser.add_argument("--regs", required=True, type=_int_list, metavar="R[,R...]",
                        help="registers per thread")
    parser.add_argument("--smem", required=True, type=_int_list, metavar="BYTES[,BYTES...]",
                        help="shared memory per block in bytes (static + dynamic)")
    parser.add_argument("--block", type=_int_list, metavar="B[,B...]",
                        help="threads per block (default: every multiple of 32 up to 1024)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        profile = load_profile(args.gpu)
    except (UnknownGpuError, ProfileFormatError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    blocks = args.block or list(range(WARP_SIZE, 1024 + 1, WARP_SIZE))
    rows: list[dict[str, Any]] = []
    try:
        for registers in args.regs:
            for smem in args.smem:
                for block in blocks:
                    result = occupancy(
                        profile, threads_per_block=block, registers=registers,
                        static_smem_bytes=smem,
                    )
                    rows.append({
                        "regs": registers,
                        "smem": smem,
                        "block": block,
                        "active_blocks_per_sm": result.active_blocks_per_sm,
                        "occupancy": result.occupancy,
                        "limiter": result.limiter,
                    })
    except OccupancyInputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps(rows, indent=1))
    else:
        print(_table(profile.id, rows))
    return 0


def _table(gpu_id: str, rows: list[dict[str, Any]]) -> str:
    header = f"{'regs':>5} {'smem':>7} {'block':>5} {'blocks/SM':>9} {'occupancy':>9}  limiter"
    lines = [f"occupancy on {gpu_id} (cuda_occupancy.h rules)", header]
    for row in rows:
        lines.append(
            f"{row['regs']:>5} {row['smem']:>7} {row['block']:>5} "
            f"{row['active_blocks_per_sm']:>9} {row['occupancy']:>9.1%}  {row['limiter']}"
        )
    return "\n".join(lines)
