"""`flipflop validate MEASUREMENTS`: predictions against measurements, and the same figures for
NVIDIA's occupancy heuristic and the most-threads baseline (README.md, "Command line").

Three kinds of file are read, told apart by content: FlipFlop measurement files (they name the
.cu file and kernel they measured; it is analysed at the measured block shapes), Kernel Tuner
cache files (`.json`, `.json.gz`) and T4 results. A cache or T4 file needs the kernel source and
Kernel Tuner's launch semantics: `--source`/`--kernel` and the tunable options, or a T1 file
(`--t1`; a `T1.json` beside the measurements is used when none is given).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.calibration.records import (
    MeasurementFileError,
    MeasurementSet,
    read_measurement,
)
from flipflop.calibration.scored import ScoredConfig
from flipflop.calibration.validation import (
    FileValidation,
    score_file,
    time_parts,
    validation_to_json,
)
from flipflop.commands.launch_options import (
    count_argument,
    names_argument,
    param_argument,
    share_argument,
)
from flipflop.launch import Dim3, volume
from flipflop.space.request import Compiler, SpaceOptions
from flipflop.units import format_shape

if TYPE_CHECKING:
    from flipflop.formats.t1 import T1Input

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
    parser.add_argument("--shortlist", type=share_argument, default=DEFAULT_SHORTLIST_SHARE,
                        metavar="FRACTION", help="share of the scored configurations in the "
                        "shortlist whose hit rate and reduction are reported (default "
                        f"{DEFAULT_SHORTLIST_SHARE:g})")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: discovered)")
    parser.add_argument("--source", type=Path, metavar="FILE.cu",
                        help="the kernel source of a Kernel Tuner cache or T4 file")
    parser.add_argument("--kernel", metavar="NAME", help="the kernel measured")
    parser.add_argument("--t1", type=Path, metavar="T1.json",
                        help="the T1 file describing the kernel (source, launch, space)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]")
    parser.add_argument("--std", help="C++ standard passed to nvcc, e.g. c++17")
    parser.add_argument("--param", type=param_argument, action="append", default=[],
                        metavar="NAME=VALUE", help="value of a scalar kernel parameter")
    parser.add_argument("--define", action="append", default=[], metavar="NAME=EXPR",
                        help="a value computed from the tunables, as analyze's --define")
    parser.add_argument("--problem-size", type=names_argument, metavar="X[,Y[,Z]]")
    for axis in "xyz":
        parser.add_argument(f"--grid-div-{axis}", type=names_argument, metavar="P[,Q...]")
    parser.add_argument("--block-size-names", type=names_argument, metavar="X[,Y[,Z]]")
    parser.add_argument("--sample", type=count_argument, metavar="N",
                        help="predict a seeded sample of N measured configurations per file")
    parser.add_argument("--seed", type=int, default=0, metavar="S")
    parser.add_argument("--compiler", choices=("auto", "nvrtc", "nvcc"), default="auto",
                        help="what compiles the variants; auto: what Kernel Tuner's backend for "
                        "the measured language used (nvcc for CUDA, through PyCUDA)")
    parser.add_argument("--jobs", type=count_argument, metavar="N")
    parser.add_argument("--no-cache", action="store_true")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Every measured file at the path, scored. In a folder, a file that cannot be validated
    (no kernel source, nothing usable) is reported and the others are still scored; the exit
    code says that one failed."""
    from flipflop.toolchain.errors import ToolchainError

    try:
        inputs = validation_inputs(args.measurements)
    except (MeasurementFileError, ValueError, OSError) as exc:
        return _report(exc)
    results: list[FileValidation] = []
    status = 0
    for path, kind in inputs:
        try:
            if kind == "flipflop":
                results.append(validate_measurements(read_measurement(path), path, args.gpu,
                                                     args.slack, args.nvcc, args.shortlist))
            else:
                results.append(validate_space_file(path, args))
        except ToolchainError as exc:
            return _report(exc)
        except (MeasurementFileError, ValueError, OSError) as exc:
            status = _report(exc)
            if len(inputs) == 1:
                return status
    if not results:
        return status
    if args.format == "json":
        objects = [validation_to_json(result) for result in results]
        single = args.measurements.is_file() and len(objects) == 1
        print(json.dumps(objects[0] if single else objects, indent=2))
    else:
        print(format_table(results))
    return status


def _report(exc: Exception) -> int:
    """Print why a file could not be validated (`FILE: error:` where the file is known);
    the exit code."""
    from flipflop.formats.errors import FormatError
    from flipflop.toolchain.errors import ToolchainError

    if isinstance(exc, FormatError):
        location = exc.path if exc.line is None else f"{exc.path}:{exc.line}:{exc.column or 1}"
        print(f"{location}: error: {exc.reason}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"flipflop validate: error: {exc}", file=sys.stderr)
    return EXIT_TOOLCHAIN if isinstance(exc, ToolchainError) else EXIT_BAD_INPUT


def validation_inputs(path: Path) -> list[tuple[Path, str]]:
    """The measured files at `path` with their kind ("flipflop", "kernel_tuner_cache", "t4").

    A folder is searched for `*.json` and `*.json.gz`; files of other kinds there (T1 files,
    unrelated JSON) are passed over. A single file of another kind is an error."""
    from flipflop.formats.errors import FormatError
    from flipflop.formats.files import read_text
    from flipflop.formats.kernel_tuner_cache import load_cache_json
    from flipflop.formats.measurements import kind_of

    def kind(candidate: Path) -> str | None:
        data, _ = load_cache_json(read_text(candidate), str(candidate))
        return kind_of(data)

    if not path.exists():
        raise MeasurementFileError(f"{path}: no such file or directory")
    if path.is_file():
        found = kind(path)
        # Anything else is read as a FlipFlop file, whose reader says what is wrong with it.
        return [(path, found if found in ("kernel_tuner_cache", "t4") else "flipflop")]
    inputs: list[tuple[Path, str]] = []
    for candidate in sorted([*path.rglob("*.json"), *path.rglob("*.json.gz")]):
        try:
            found = kind(candidate)
        except FormatError:
            continue
        if found in ("flipflop", "kernel_tuner_cache", "t4"):
            inputs.append((candidate, found))
    if not inputs:
        raise MeasurementFileError(f"{path}: no measurement files in this directory")
    return inputs


def validate_space_file(path: Path, args: argparse.Namespace) -> FileValidation:
    """A Kernel Tuner cache or T4 file, with its kernel from the options or a T1 file."""
    from flipflop.calibration.space_validation import MeasuredKernel, validate_measured_space
    from flipflop.formats.measurements import read_measured_space
    from flipflop.formats.t1 import read_t1
    from flipflop.options import AnalysisOptions

    t1_path = args.t1
    if t1_path is None and (path.parent / "T1.json").is_file():
        t1_path = path.parent / "T1.json"
    t1 = read_t1(t1_path, kernel_file=args.source) if t1_path is not None else None
    measured = read_measured_space(path, t1)
    for warning in measured.warnings:
        print(f"{path}: warning: {warning}", file=sys.stderr)
    source = args.source or (Path(t1.kernel_file) if t1 is not None else None)
    if source is None:
        raise MeasurementFileError(
            f"{path}: a Kernel Tuner cache does not say which source it measured: give "
            "--source FILE.cu (and --kernel), or the kernel's T1 file with --t1"
        )
    if not source.is_file():
        raise MeasurementFileError(f"{path}: the kernel source {source} is not a file")
    kernel = args.kernel or (t1.kernel_name if t1 is not None else measured.kernel_name)
    options = AnalysisOptions(
        nvcc_path=args.nvcc,
        include_dirs=tuple(Path(d) for d in args.include_dirs),
        defines=tuple(args.defines),
        std=args.std,
        extra_args=t1.compiler_options if t1 is not None else (),
        # The T1 file's scalar arguments, then --param (a later value wins).
        params=(*(t1.scalar_values if t1 is not None else ()), *args.param),
        slack=args.slack,
        shortlist_share=args.shortlist,
        # Validation scores the point predictions; the intervals are judged on their own.
        confidence=None,
        space=SpaceOptions(
            defines=tuple(args.define),
            problem_size=args.problem_size,
            grid_div=(args.grid_div_x, args.grid_div_y, args.grid_div_z),
            block_size_names=args.block_size_names,
            compiler=measuring_compiler(args.compiler, t1, args.nvcc),
            workers=args.jobs or 0,
            use_cache=not args.no_cache,
        ),
    )
    target = MeasuredKernel(source, kernel, gpu_for(measured.device_name or "", args.gpu),
                            options, t1)
    return validate_measured_space(measured, target, args.sample, args.seed)


def measuring_compiler(wanted: Compiler, t1: T1Input | None, nvcc: str | None) -> Compiler:
    """The compiler that built what was measured. Kernel Tuner's backend for `lang="CUDA"`
    (its default, and the Language of a T1 file that names none) is PyCUDA, which compiles with
    nvcc; NVRTC's ptxas of another release allocates registers differently (it spills where
    nvcc 13.0 does not on convolution_milo's 4×4 tiles), so the measured code is nvcc's. Without
    nvcc, NVRTC is the next best."""
    from flipflop.toolchain.discovery import find_toolchain
    from flipflop.toolchain.errors import ToolchainError

    if wanted != "auto":
        return wanted
    language = t1.language if t1 is not None else "CUDA"
    if language.upper() != "CUDA":
        return "auto"
    try:
        find_toolchain(nvcc)
    except ToolchainError:
        return "auto"
    return "nvcc"


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
    data: MeasurementSet,
    measurements: Path,
    gpu: str | None,
    slack: float,
    nvcc: str | None,
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE,
) -> FileValidation:
    """Analyse the measured file with exactly the measured block shapes, then score it."""
    from flipflop.options import AnalysisOptions
    from flipflop.pipeline import analyze

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
        shortlist_share=shortlist_share,
        power_limits=False,
        confidence=None,  # the point predictions are what is scored
    )
    result = analyze(path, None, options)
    if not result.kernels:
        notes = "; ".join(result.notes) or "the file did not compile"
        raise MeasurementFileError(f"{path}: kernel {data.kernel} was not analysed ({notes})")
    advice = result.kernels[0].primary.advice
    predicted = {p.block: p for p in advice.predictions if p.power_limit_w is None}
    recommended = {p.block for p in advice.shortlist}
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
            parameters=tuple(zip(("block.x", "block.y", "block.z"), m.block, strict=True)),
            bound=predicted[m.block].bound,
            time_parts=time_parts(predicted[m.block].breakdown.time),
            active_blocks_per_sm=predicted[m.block].active_blocks_per_sm,
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
    "top-5% recall", "hit", "reduction %", "shortlist regret %", "MAPE time %",
    "occupancy regret %", "most-threads regret %",
]


def _file_name(result: FileValidation) -> str:
    return Path(result.file).name or result.file


def _row(result: FileValidation) -> list[str]:
    m = result.metrics
    energy = "energy" in result.measured
    heuristic, naive = result.occupancy_heuristic, result.most_threads
    return [
        _file_name(result),
        result.gpu,
        str(result.configs),
        _number(m.spearman_time),
        _number(m.spearman_energy),
        _number(m.regret_time, 100.0, 1),
        _number(m.regret_energy, 100.0, 1),
        _number(m.top5_recall_time, 100.0, 0),
        "n/a" if m.hit_rate is None else ("yes" if m.hit_rate else "no"),
        _number(m.search_space_reduction, 100.0, 0),
        _number(m.regret_shortlist_energy if energy else m.regret_shortlist_time, 100.0, 1),
        _number(m.mape_time, digits=1),
        _number(heuristic.regret_energy if energy else heuristic.regret_time, 100.0, 1),
        _number(naive.regret_energy if energy else naive.regret_time, 100.0, 1),
    ]


def _provenance(result: FileValidation) -> str:
    """Which entries were skipped and where energy and power came from, as one sentence."""
    parts = []
    if result.failed:
        total = sum(count for _, count in result.failed)
        reasons = ", ".join(f"{reason} {count}" for reason, count in result.failed)
        parts.append(f"{total} failed entries skipped ({reasons})")
    if result.sources:
        parts.append("; ".join(f"{quantity} from {field}" for quantity, field in result.sources))
        m = result.metrics
        parts.append(f"ρ power {_number(m.spearman_power)}, MAPE power "
                     f"{_number(m.mape_power, digits=1)}%, MAPE energy "
                     f"{_number(m.mape_energy, digits=1)}%")
    return "; ".join(parts)


def format_table(results: Sequence[FileValidation]) -> str:
    """One row per file; the baselines' regret is on energy where measured, else on time."""
    rows = [_row(result) for result in results]
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(HEADER, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    skipped = [result for result in results if result.failed or result.sources]
    if skipped:
        lines.append("")
        for result in skipped:
            lines.append(f"{_file_name(result)}: {_provenance(result)}")
    biased = [(result, bias[0]) for result in results if (bias := result.bias)]
    if biased:
        lines.append("")
        lines.append("time bias of the largest spread (measured/predicted by value, against the "
                     "file's mean):")
        for result, largest in biased:
            lines.append(f"  {_file_name(result)} ({result.gpu}): {largest.describe()}")
    return "\n".join(lines)
