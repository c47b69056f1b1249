"""`flipflop validate MEASUREMENTS`: predictions against measurements, and the same for NVIDIA's
occupancy heuristic (Spearman ρ, energy regret, hit rate, search-space reduction, MAPE).

Each measurement file names the .cu file and kernel it measured; that file is analysed with the
measured block shapes as the candidates, the same problem size and parameters.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flipflop.calibration.records import MeasurementFileError, MeasurementSet, read_measurements
from flipflop.calibration.validation import (
    KernelPrediction,
    KernelValidation,
    MethodScores,
    PredictedConfig,
    ValidationSummary,
    heuristic_order,
    summarize,
    validation_metrics,
)
from flipflop.launch import volume

EXIT_BAD_INPUT = 1
EXIT_TOOLCHAIN = 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="compare predictions with measurements (and the occupancy heuristic)",
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
        sets = read_measurements(args.measurements)
        kernels = [
            validation_metrics(data, predict(data, args.measurements, args.gpu, args.slack,
                                             args.nvcc))
            for data in sets
        ]
    except (MeasurementFileError, UnknownGpuError, ValueError, OSError) as exc:
        print(f"flipflop validate: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ToolchainError as exc:
        print(f"flipflop validate: error: {exc}", file=sys.stderr)
        return EXIT_TOOLCHAIN
    summary = summarize(kernels)
    if args.format == "json":
        print(json.dumps(summary_to_json(summary), indent=2))
    else:
        print(format_table(summary))
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


def gpu_for(data: MeasurementSet, gpu: str | None) -> str:
    from flipflop.gpu.profiles import list_profiles

    if gpu is not None:
        return gpu
    for profile in list_profiles():
        if profile.name.lower() == data.device.name.lower():
            return profile.id
    raise MeasurementFileError(
        f"no profile is named {data.device.name!r}; give --gpu ID (see `flipflop profiles`)"
    )


def predict(
    data: MeasurementSet, measurements: Path, gpu: str | None, slack: float, nvcc: str | None
) -> KernelPrediction:
    """Run the analysis on the measured file with exactly the measured block shapes."""
    from flipflop.pipeline import AnalysisOptions, analyze

    path = source_path(data, measurements)
    options = AnalysisOptions(
        gpu=gpu_for(data, gpu),
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
    default_limit = [p for p in advice.predictions if p.power_limit_w is None]
    return KernelPrediction(
        configs=tuple(
            PredictedConfig(p.block, p.time_s, p.power_w, p.energy_j) for p in default_limit
        ),
        recommendation=advice.recommendation.block,
        recommended_set=tuple(
            p.block for p in advice.recommended_set if p.power_limit_w is None
        ),
        heuristic=None if advice.heuristic is None else advice.heuristic.block,
        heuristic_order=heuristic_order(
            [p.block for p in default_limit],
            [p.active_blocks_per_sm * volume(p.block) for p in default_limit],
        ),
    )


def summary_to_json(summary: ValidationSummary) -> dict[str, Any]:
    return dataclasses.asdict(summary)


def _number(value: float | None, scale: float = 1.0, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value * scale:.{digits}f}"


def _block(block: Sequence[int] | None) -> str:
    if block is None:
        return "n/a"
    dims = list(block)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return "x".join(str(d) for d in dims)


def _hit(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "no")


def _row(kernel: KernelValidation, method: str, scores: MethodScores) -> list[str]:
    return [
        kernel.kernel, method, str(kernel.candidates), _block(kernel.measured_best),
        _block(scores.pick), _number(scores.spearman_energy), _number(scores.spearman_time),
        _number(scores.energy_regret, 100.0, 1), _hit(scores.hit),
        _number(scores.search_space_reduction, 100.0, 0), _number(scores.mape_time, digits=1),
        _number(scores.mape_power, digits=1), _number(scores.mape_energy, digits=1),
    ]


HEADER = [
    "kernel", "method", "configs", "best", "pick", "ρ energy", "ρ time", "regret %", "hit",
    "reduction %", "MAPE time %", "MAPE power %", "MAPE energy %",
]


def format_table(summary: ValidationSummary) -> str:
    rows = []
    for kernel in summary.kernels:
        rows.append(_row(kernel, "flipflop", kernel.flipflop))
        rows.append(_row(kernel, "occupancy", kernel.heuristic))
    for method, scores, rate in (
        ("flipflop", summary.flipflop, summary.flipflop_hit_rate),
        ("occupancy", summary.heuristic, summary.heuristic_hit_rate),
    ):
        row = _row(
            KernelValidation("MEAN", "", "", len(summary.kernels), (0, 0, 0), scores, scores),
            method, scores,
        )
        row[2], row[3], row[4] = f"{len(summary.kernels)} kernels", "", ""
        row[8] = "n/a" if rate is None else f"{rate * 100:.0f}%"
        rows.append(row)
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(HEADER, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)
