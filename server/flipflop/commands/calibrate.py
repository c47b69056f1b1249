"""`flipflop calibrate`: run the microbenchmarks on this GPU and fit a profile to them.

With `--from-data DIR` it only fits, from measurement files made earlier (no GPU needed). The
profile starts from `--base` (default: the shipped profile whose name matches the device) and
every fitted number becomes `kind: measured` with a source naming the data files. A fit report
(`PROFILE.fit.json`) lists every fitted value, including those the profile has no field for.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from flipflop.calibration.device import CudaDevice, GpuError, GpuUnavailable, NvmlDevice
from flipflop.calibration.fit import (
    CalibrationFit,
    FitError,
    dvfs_points,
    fit_profile,
    fit_voltage_curve,
)
from flipflop.calibration.profile_update import apply_fit
from flipflop.calibration.records import (
    MeasurementFileError,
    MeasurementSet,
    read_measurements,
    write_measurement,
)
from flipflop.calibration.runner import MeasureRequest, measure
from flipflop.calibration.spec import SpecError, parse_headers
from flipflop.gpu.profiles import ProfileFormatError, list_profiles
from flipflop.toolchain.errors import ToolchainError

EXIT_BAD_INPUT = 1
EXIT_NO_GPU = 3
REPOSITORY = Path(__file__).resolve().parents[3]
DEFAULT_MICROBENCH = REPOSITORY / "calibration" / "microbench"
# V(f) is fitted only from a kernel whose clock moved by at least this fraction on its own.
MIN_CLOCK_SPREAD = 0.2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="run the microbenchmarks and fit a GPU profile (needs a GPU unless --from-data)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, metavar="PROFILE.json",
                        help="profile to write (default: DATA_DIR/profile.json)")
    parser.add_argument("--gpu-index", type=int, default=0, metavar="N")
    parser.add_argument("--base", metavar="PROFILE_ID",
                        help="profile id or .json file to start from (default: by device name)")
    parser.add_argument("--data-dir", type=Path, default=Path("calibration-data"), metavar="DIR",
                        help="where the microbenchmark measurements are written")
    parser.add_argument("--from-data", type=Path, metavar="DIR",
                        help="fit from these measurement files instead of measuring")
    parser.add_argument("--microbench-dir", type=Path, default=DEFAULT_MICROBENCH, metavar="DIR")
    parser.add_argument("--window", type=float, default=1.0, metavar="SECONDS")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cooldown", type=float, default=0.2, metavar="SECONDS")
    parser.add_argument("--idle", type=float, default=1.0, metavar="SECONDS",
                        help="idle-power measurement before each sweep")
    parser.add_argument("--cubin-dir", type=Path, metavar="DIR",
                        help="compiled cubins, kept and reused when their inputs are the same")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.repeats < 1 or args.window <= 0 or args.cooldown < 0 or args.idle <= 0:
        print("flipflop calibrate: error: --repeats must be >= 1, --window and --idle > 0, "
              "--cooldown >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if args.from_data is not None:
            sets = read_measurements(args.from_data)
            data_dir = args.from_data
        else:
            sets = run_microbenchmarks(args)
            data_dir = args.data_dir
        base_document, base_id = load_base(args.base, sets[0].device.name)
        profile, report = calibrated_profile(base_document, sets, data_dir)
    except GpuUnavailable as exc:
        print(f"flipflop calibrate: error: no GPU to measure on: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except (GpuError, ToolchainError) as exc:
        print(f"flipflop calibrate: error: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except (MeasurementFileError, SpecError, FitError, ProfileFormatError, OSError) as exc:
        print(f"flipflop calibrate: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    out = args.out or data_dir / "profile.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(profile, indent=2) + "\n")
    out.with_suffix(".fit.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"profile (base {base_id}) written to {out}; fit report {out.with_suffix('.fit.json')}")
    for name, entry in sorted(report["values"].items()):
        print(f"  {name:32} {entry['value']:.6g}")
    return 0


def run_microbenchmarks(args: argparse.Namespace) -> tuple[MeasurementSet, ...]:
    """Measure every header of every microbenchmark (each variant in turn) on one GPU."""
    files = sorted(Path(args.microbench_dir).glob("*.cu"))
    if not files:
        raise SpecError(f"{args.microbench_dir}: no microbenchmark .cu files")
    command = ("flipflop", *sys.argv[1:])
    device = CudaDevice(args.gpu_index)
    sets = []
    try:
        nvml = NvmlDevice(device.facts.pci_bus_id)
        try:
            for path in files:
                for spec in parse_headers(path.read_text(), str(path)):
                    for variant in spec.variants or ({},):
                        request = MeasureRequest(
                            file=path, kernel=spec.kernel, spec=spec, params=dict(variant),
                            repeats=args.repeats, window_s=args.window,
                            cooldown_s=args.cooldown, idle_s=args.idle, command=command,
                            cubin_dir=args.cubin_dir,
                        )
                        data = measure(request, device, nvml,
                                       lambda line: print(line, file=sys.stderr))
                        suffix = "".join(f"-{k}{v:g}" for k, v in variant.items())
                        write_measurement(data, args.data_dir / f"{spec.kernel}{suffix}.json")
                        sets.append(data)
        finally:
            nvml.close()
    finally:
        device.close()
    return tuple(sets)


def load_base(base: str | None, device_name: str) -> tuple[dict[str, Any], str]:
    """The base profile document: by id, by .json path, or the one named like the device."""
    if base is not None and base.endswith(".json"):
        return json.loads(Path(base).read_text()), base
    if base is None:
        matches = [p.id for p in list_profiles() if p.name.lower() == device_name.lower()]
        if not matches:
            raise ProfileFormatError(
                f"no shipped profile is named {device_name!r}; give --base PROFILE_ID"
            )
        base = matches[0]
    entry = resources.files("flipflop") / "profiles" / f"{base}.json"
    if not entry.is_file():
        raise ProfileFormatError(f"unknown base profile {base!r}")
    document: dict[str, Any] = json.loads(entry.read_text(encoding="utf-8"))
    return document, base


def calibrated_profile(
    base: dict[str, Any], sets: Sequence[MeasurementSet], data_dir: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(profile document, fit report) from the base profile and the measurements."""
    commits = sorted({s.commit for s in sets if s.commit})
    citation = (
        f"flipflop calibrate on {sets[0].device.name} (driver {sets[0].device.driver_version}), "
        f"data {data_dir}" + (f", commit {', '.join(commits)}" if commits else "")
    )
    fit = fit_profile(sets, citation)
    voltage = _voltage_from_data(sets)
    points = None
    dvfs_source = ""
    if voltage is not None:
        set_, vfit = voltage
        clocks = [c.sm_clock_mhz for c in set_.configs if c.sm_clock_mhz is not None]
        points = dvfs_points(vfit, clocks)
        dvfs_source = (
            f"P(f) = a + b·f·V(f)² fitted to {set_.kernel} at {len(clocks)} clocks "
            f"(rms {vfit.residual_rms_w:.2f} W); {citation}"
        )
    profile, leftovers = apply_fit(base, fit, points, dvfs_source)
    return profile, _report(fit, leftovers, sets, points)


def _voltage_from_data(sets: Sequence[MeasurementSet]) -> tuple[MeasurementSet, Any] | None:
    best = None
    for data in sets:
        clocks = [c.sm_clock_mhz for c in data.configs if c.sm_clock_mhz is not None]
        powers = [c.power_w for c in data.configs if c.sm_clock_mhz is not None]
        distinct = {round(c) for c in clocks}
        if len(distinct) < 4 or (max(clocks) - min(clocks)) < MIN_CLOCK_SPREAD * max(clocks):
            continue
        try:
            fitted = fit_voltage_curve(clocks, powers, data.device.max_sm_clock_mhz)
        except FitError:
            continue
        if best is None or fitted.residual_rms_w < best[1].residual_rms_w:
            best = (data, fitted)
    return best


def _report(
    fit: CalibrationFit,
    leftovers: dict[str, Any],
    sets: Sequence[MeasurementSet],
    points: tuple[tuple[float, float], ...] | None,
) -> dict[str, Any]:
    return {
        "values": {k: {"value": v.value, "source": v.source} for k, v in fit.values.items()},
        "not_in_profile": sorted(leftovers),
        "power_residual_rms_w": fit.power_residual_rms_w,
        "samples": fit.samples,
        "dvfs_points": None if points is None else [list(p) for p in points],
        "dvfs_note": (
            "fitted from clock variation in the data" if points is not None else
            "no kernel's clock varied enough to fit V(f): the base profile's points are kept"
        ),
        "measurements": [f"{s.kernel} ({s.kind}, {len(s.configs)} configs)" for s in sets],
    }
