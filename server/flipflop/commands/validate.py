"""`flipflop validate MEASUREMENTS`: predictions against measurements, and the same figures for
NVIDIA's occupancy heuristic and the most-threads baseline (DESIGN §2).

A FlipFlop measurement file names the .cu file and kernel it measured; that file is analysed with
the measured block shapes as the candidates, the same problem size and parameters.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from flipflop.calibration.records import (
    MeasurementFileError,
    MeasurementSet,
    measurement_paths,
    read_measurement,
)
from flipflop.calibration.validation import (
    FileValidation,
    ScoredConfig,
    score_file,
    validation_to_json,
)
from flipflop.launch import Dim3, volume
from flipflop.units import format_shape

EXIT_BAD_INPUT = 1
EXIT_TOOLCHAIN = 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="compare predictions with measurements (and NVIDIA's heuristic, and most threads)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("measurements", type=Path, metavar="MEASUREMENTS_FILE_OR_DIR")
    parser.add_argument("--gpu", metavar="ID",
                        help="profile id or .json file (default: the profile named like the "
                             "measured device)")
    parser.add_argument("--slack", type=float, default=0.05, metavar="FRACTION")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: discovered)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from flipflop.gpu.profiles import UnknownGpuError
    from flipflop.toolchain.errors import ToolchainError

    try:
        results = [
            validate_measurements(read_measurement(path), path, args.gpu, args.slack, args.nvcc)
            for path in measurement_paths(args.measurements)
        ]
    except (MeasurementFileError, UnknownGpuError, ValueError, OSError) as exc:
        print(f"flipflop validate: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ToolchainError as exc:
        print(f"flipflop validate: error: {exc}", file=sys.stderr)
        return EXIT_TOOLCHAIN
    if args.format == "json":
        objects = [validation_to_json(result) for result in results]
        single = args.measurements.is_file() and len(objects) == 1
        print(json.dumps(objects[0] if single else objects, indent=2))
    else:
        print(format_table(results))
    return 0


def source_path(data: MeasurementSet, measurements: Path) -> Path:
    """The measured .cu file: as recorded, else relative to a folder above the measurements."""
    recorded = Path(data.file)
    if recorded.is_file():
        return recorded
    for folder in (measurements.resolve(), *measurements.resolve().parents):
        candidate = folder / recorded
        if candidate.is_file():
            return candidate
    raise MeasurementFileError(f"{data.file}: the measured source file is not found")


def gpu_for(device_name: str, gpu: str | None) -> str:
    """The profile id: as given, else the profile named like the measured device."""
    from flipflop.gpu.profiles import list_profiles

    if gpu is not None:
        return gpu
    for profile in list_profiles():
        if profile.name.lower() == device_name.lower():
            return profile.id
    raise MeasurementFileError(
        f"no profile is named {device_name!r}; give --gpu ID (see `flipflop profiles`)"
    )


def validate_measurements(
    data: MeasurementSet, measurements: Path, gpu: str | None, slack: float, nvcc: str | None
) -> FileValidation:
    """Analyse the measured file with exactly the measured block shapes, then score it."""
    from flipflop.pipeline import AnalysisOptions, analyze

    path = source_path(data, measurements)
    options = AnalysisOptions(
        gpu=gpu_for(data.device.name, gpu),
        nvcc_path=nvcc,
        kernel=data.kernel,
        grid=data.grid,
        threads=data.threads,
        # One number for the whole sweep: the largest any measured shape used.
        dynamic_smem_bytes=max(c.dynamic_smem_bytes for c in data.configs),
        params=tuple(sorted(data.params.items())),
        blocks=tuple(c.block for c in data.configs),
        slack=slack,
        power_limits=False,
    )
    result = analyze(path, None, options)
    if not result.kernels:
        notes = "; ".join(result.notes) or "the file did not compile"
        raise MeasurementFileError(f"{path}: kernel {data.kernel} was not analysed ({notes})")
    advice = result.kernels[0].primary.advice
    predicted = {p.block: p for p in advice.predictions if p.power_limit_w is None}
    recommended = {p.block for p in advice.recommended_set if p.power_limit_w is None}
    scored = [
        ScoredConfig(
            label=format_shape(m.block),
            measured_time_s=m.time_s,
            measured_power_w=m.power_w,
            measured_energy_j=m.energy_j,
            predicted_time_s=predicted[m.block].time_s,
            predicted_power_w=predicted[m.block].power_w,
            predicted_energy_j=predicted[m.block].energy_j,
            resident_threads=predicted[m.block].active_blocks_per_sm * volume(m.block),
            threads_per_block=volume(m.block),
            recommended=m.block in recommended,
        )
        for m in data.configs
        if m.block in predicted
    ]
    pick: Dim3 = advice.recommendation.block
    return score_file(
        str(measurements),
        result.profile.id,
        data.kernel,
        scored,
        format_shape(pick),
        excluded=len(data.configs) - len(scored),
    )


def _number(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value * scale:.{digits}f}"


HEADER = [
    "file", "gpu", "configs", "ρ time", "ρ energy", "regret time %", "regret energy %",
    "top-5% recall", "hit", "reduction %", "MAPE time %", "occupancy regret %",
    "most-threads regret %",
]


def _row(result: FileValidation) -> list[str]:
    m = result.metrics
    energy = "energy" in result.measured
    heuristic, naive = result.occupancy_heuristic, result.most_threads
    return [
        Path(result.file).name if Path(result.file).name else result.file,
        result.gpu,
        str(result.configs),
        _number(m.spearman_time),
        _number(m.spearman_energy),
        _number(m.regret_time, 100.0, 1),
        _number(m.regret_energy, 100.0, 1),
        _number(m.top5_recall_time, 100.0, 0),
        "n/a" if m.hit_rate is None else ("yes" if m.hit_rate else "no"),
        _number(m.search_space_reduction, 100.0, 0),
        _number(m.mape_time, digits=1),
        _number(heuristic.regret_energy if energy else heuristic.regret_time, 100.0, 1),
        _number(naive.regret_energy if energy else naive.regret_time, 100.0, 1),
    ]


def format_table(results: Sequence[FileValidation]) -> str:
    """One row per file; the baselines' regret is on energy where measured, else on time."""
    rows = [_row(result) for result in results]
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(HEADER, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)
