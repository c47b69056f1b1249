"""`flipflop profiles`: the GPU profiles that ship with flipflop."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flipflop.gpu.profile import GpuProfile
from flipflop.gpu.profiles import (
    ProfileFormatError,
    UnknownGpuError,
    list_profiles,
    load_profile,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "profiles",
        help="list the GPU profiles",
        description="List the bundled GPU profiles, or only the GPUs named.",
    )
    parser.add_argument("gpus", nargs="*", metavar="GPU",
                        help="profile id or device name as NVML reports it (default: all)")
    parser.add_argument("--gpu", dest="more_gpus", action="append", default=[], metavar="ID",
                        help="same as a GPU argument; may be repeated")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(run=run)


def summary(profile: GpuProfile) -> dict[str, Any]:
    return {
        "id": profile.id,
        "name": profile.name,
        "arch": profile.arch,
        "compute_capability": list(profile.compute_capability),
        "sms": profile.sms,
        "boost_clock_mhz": profile.boost_clock_mhz,
        "memory_bandwidth_gbs": profile.memory_bandwidth_gbs,
        "dram_peak_bandwidth_gbs": profile.dram_peak_bandwidth_gbs,
        "l2_bytes": profile.l2_bytes,
        "tdp_w": profile.tdp_w,
        "power_limit_w": [profile.power_limit_min_w, profile.power_limit_max_w],
    }


def run(args: argparse.Namespace) -> int:
    wanted = [*args.gpus, *args.more_gpus]
    try:
        profiles = [load_profile(gpu) for gpu in wanted] if wanted else list_profiles()
    except (UnknownGpuError, ProfileFormatError) as error:
        print(f"flipflop: error: {error}", file=sys.stderr)
        return 1
    if args.format == "json":
        print(json.dumps([summary(profile) for profile in profiles], indent=1))
        return 0
    print(f"{'id':<16} {'arch':<7} {'SMs':>4} {'boost MHz':>9} {'DRAM GB/s':>9} {'TDP W':>6}  name")
    for p in profiles:
        print(
            f"{p.id:<16} {p.arch:<7} {p.sms:>4} {p.boost_clock_mhz:>9.0f} "
            f"{p.memory_bandwidth_gbs:>9.0f} {p.tdp_w:>6.0f}  {p.name}"
        )
    return 0
