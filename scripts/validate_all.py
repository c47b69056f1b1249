#!/usr/bin/env python3
"""Validate FlipFlop on every measured search space and write docs/validation.md.

Runs `flipflop validate` over each Kernel Tuner cache in calibration/data/measured (public
measured spaces, see its README) with each kernel's launch semantics as Kernel Tuner ran it, on a
seeded sample of the measured configurations, then judges every figure with the kernel held out
(`flipflop.calibration.held_out`):

    .venv/bin/python scripts/validate_all.py [--sample 100] [--seed 1] [--results DIR]
        [--output docs/validation.md] [--write-error]

`--results DIR` keeps each file's `flipflop validate --format json` output there and reuses it,
so the page can be regenerated without compiling again. `--write-error` writes the interval
widths users get (`server/flipflop/model/error.json`). The page is the template
`calibration/validation/validation.md.in` filled with the figures and with the prose of
`calibration/validation/notes.toml`.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "calibration" / "data" / "measured"
VALIDATION = ROOT / "calibration" / "validation"
TEMPLATE = VALIDATION / "validation.md.in"
NOTES = VALIDATION / "notes.toml"
ERROR_FILE = ROOT / "server" / "flipflop" / "model" / "error.json"

sys.path.insert(0, str(ROOT / "server"))

from flipflop.calibration.energy_checks import (  # noqa: E402
    EnergyPoint,
    clock_agreement,
    front_agreement,
)
from flipflop.calibration.held_out import (  # noqa: E402
    MIN_KERNELS,
    MeasuredFile,
    MeasuredPoint,
    held_out_intervals,
    held_out_shortlists,
    kernel_residuals,
    pooled_half_width,
    shipped_intervals,
    stand_in_intervals,
)

LEVEL = 0.8  # the level advice is judged at by default (flipflop.model.error.DEFAULT_LEVEL)
CLOCK = "nvml_gr_clock"  # Kernel Tuner's locked-clock tunable


@dataclass(frozen=True)
class Dataset:
    """One kernel's measured caches and the options that reproduce Kernel Tuner's launch."""

    folder: str
    arguments: tuple[str, ...] = ()
    block_names: tuple[str, ...] = ("block_size_x", "block_size_y", "block_size_z")
    # Profile values read from this kernel's files: with the kernel held out, its files are
    # predicted without them (profile id -> the rates dropped, back to their defaults).
    read_from: tuple[tuple[str, tuple[str, ...]], ...] = ()


DATASETS = (
    # tune_convolution.py: problem 4096², grid_div_x/y = block size × tile size (as in T1.json).
    # `rates.l1_request_cycles` of the cc 8.6 profiles was read from its RTX 3090 file.
    Dataset("convolution", read_from=(("rtx3090", ("l1_request_cycles",)),)),
    # Its T1.json names `convolution_milo.cu`; the folder holds the kernel as `convolution.cu`.
    Dataset("convolution_milo", (
        "--source", str(MEASURED / "convolution_milo" / "convolution.cu"),
    )),
    # tune_pnpoly.py: 20 M points, grid_div_x = block_size_x × tile_size; n is the point count.
    Dataset("pnpoly", ("--param", "n=20000000")),
    # tune_gemm.py: CLBlast's OpenCL kernel through cl_to_cuda.h; block = (MDIMC, NDIMC),
    # grid_div_x = MWG, grid_div_y = NWG, problem (4096, 4096); sizes 4096 as kernel arguments.
    Dataset("gemm", (
        "--source", str(ROOT / "calibration" / "validation" / "xgemm.cu"), "--kernel", "Xgemm",
        "-I", str(MEASURED / "gemm"), "--problem-size", "4096,4096", "--grid-div-x", "MWG",
        "--grid-div-y", "NWG", "--block-size-names", "MDIMC,NDIMC,block_size_z",
        "--param", "kSizeM=4096", "--param", "kSizeN=4096", "--param", "kSizeK=4096",
    ), block_names=("MDIMC", "NDIMC", "block_size_z")),
    # tune_dedispersion.py passes no grid_div: Kernel Tuner's default, the block sizes (its
    # T1.json says block × tile, which is not what was measured, and names a .hip file).
    Dataset("dedispersion", (
        "--source", str(MEASURED / "dedispersion" / "dedispersion.cu"),
        "--kernel", "dedispersion_kernel", "--problem-size", "25000,2048,1",
        "--grid-div-x", "block_size_x", "--grid-div-y", "block_size_y",
    )),
    # tune_gemm.py.txt (ccglib): ten locked clocks (nvml_gr_clock) × the code configurations;
    # everything else from its T1.json (derived defines N_PER_WARP, M_PER_WARP).
    Dataset("wmma_gemm"),
    # tune_expdist.py.txt: the problem size is a function of the configuration; everything from
    # its T1.json (the scalar arguments m, n = 32768 included).
    Dataset("expdist"),
)


# --- running flipflop validate -------------------------------------------------------------

def run_one(path: Path, dataset: Dataset, sample: int, seed: int,
            profile: Path | None = None) -> dict[str, object]:
    command = [
        sys.executable, "-m", "flipflop.cli", "validate", str(path), "--format", "json",
        "--sample", str(sample), "--seed", str(seed), *dataset.arguments,
        *(("--gpu", str(profile)) if profile is not None else ()),
    ]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path}: flipflop validate failed:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout)
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def held_out_profile(profile_id: str, rates: Sequence[str], folder: Path) -> Path:
    """A copy of a shipped profile without the rates read from the held-out kernel."""
    from importlib import resources

    text = resources.files("flipflop").joinpath(f"profiles/{profile_id}.json").read_text()
    document = json.loads(text)
    for name in rates:
        document.get("rates", {}).pop(name, None)
        document.pop(name, None)
    path = folder / f"{profile_id}-held-out.json"
    path.write_text(json.dumps(document))
    return path


@dataclass(frozen=True)
class Run:
    dataset: Dataset
    result: dict[str, object]  # `flipflop validate --format json`
    held_out: dict[str, object] | None  # the same file predicted without what it gave


def cached_run(path: Path, dataset: Dataset, args: argparse.Namespace, tag: str,
               profile: Path | None = None) -> dict[str, object]:
    stored = (args.results / f"{dataset.folder}__{path.name.split('.')[0]}{tag}.json"
              if args.results else None)
    if stored is not None and stored.is_file():
        loaded: dict[str, object] = json.loads(stored.read_text())
        return loaded
    result = run_one(path, dataset, args.sample, args.seed, profile)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_text(json.dumps(result))
    return result


def runs(args: argparse.Namespace) -> list[Run]:
    found = []
    with tempfile.TemporaryDirectory() as scratch:
        for dataset in DATASETS:
            if args.only and dataset.folder not in args.only:
                continue
            for path in sorted((MEASURED / dataset.folder).glob("*.json.gz")):
                result = cached_run(path, dataset, args, "")
                held_out = None
                for profile_id, rates in dataset.read_from:
                    if result.get("gpu") == profile_id:
                        profile = held_out_profile(profile_id, rates, Path(scratch))
                        held_out = cached_run(path, dataset, args, "__held-out", profile)
                print(f"{dataset.folder}/{path.name}: {result['metrics']}", file=sys.stderr)
                found.append(Run(dataset, result, held_out))
    return found


# --- plausibility --------------------------------------------------------------------------

# A GPU cannot run the same code much faster than its FP32 peak allows against another GPU's:
# a file whose times are this many times below that is not a measurement of the kernel's work.
IMPLAUSIBLE_FACTOR = 10.0


@cache
def measured_times(path: Path) -> dict[str, float]:
    """Configuration key → measured time (ms) of a Kernel Tuner cache; failed ones left out."""
    from flipflop.formats.kernel_tuner_cache import read_kernel_tuner_cache

    return {entry.key: 1e3 * entry.time_s for entry in read_kernel_tuner_cache(path).entries
            if entry.time_s is not None}


def fp32_peak(profile_id: str) -> float:
    """FLOP/s of the GPU's FP32 pipes at its boost clock, from its profile (datasheets)."""
    from flipflop.gpu.profiles import load_profile

    profile = load_profile(profile_id)
    return profile.sms * profile.rates.fp32_flops * profile.boost_clock_mhz * 1e6


def implausibly_fast(found: Sequence[Run]) -> dict[str, str]:
    """Files whose times, configuration by configuration, are more than `IMPLAUSIBLE_FACTOR`
    below what the kernel's file on another GPU and the two FP32 peaks allow. Only the fast
    side is flagged: a slow GPU may be throttled, a fast one cannot skip the work."""
    flagged: dict[str, str] = {}
    for run in found:
        for other in found:
            if other.dataset.folder != run.dataset.folder or other is run:
                continue
            times = measured_times(Path(str(run.result["file"])))
            others = measured_times(Path(str(other.result["file"])))
            common = times.keys() & others.keys()
            if not common:
                continue
            ratio = statistics.median(times[key] / others[key] for key in common)
            allowed = fp32_peak(str(other.result["gpu"])) / fp32_peak(str(run.result["gpu"]))
            if ratio * IMPLAUSIBLE_FACTOR < allowed:
                flagged[str(run.result["file"])] = (
                    f"the same configurations run a median {1 / ratio:.0f}× faster than on "
                    f"{file_name(other)}, whose FP32 peak is {allowed:.2f}× this GPU's: these "
                    "runs cannot have done the kernel's work, so the file is shown but not "
                    "counted")
    return flagged


# --- from results to the held-out module's data --------------------------------------------

def file_name(run: Run) -> str:
    return Path(str(run.result["file"])).name.split(".")[0]


def configurations(result: dict[str, object]) -> list[dict[str, object]]:
    found = result["configurations"]
    assert isinstance(found, list)
    return found


def measured_file(run: Run, result: dict[str, object]) -> MeasuredFile:
    points = []
    for config in configurations(result):
        parameters = config["parameters"]
        assert isinstance(parameters, dict)
        block = tuple(str(parameters.get(name, 1)) for name in run.dataset.block_names)
        code = tuple(sorted((name, str(value)) for name, value in parameters.items()
                            if name not in run.dataset.block_names))
        points.append(MeasuredPoint(
            parameters=code, block=block,
            predicted_time_s=float(config["predicted_time_s"]),  # type: ignore[arg-type]
            measured_time_s=float(config["measured_time_s"]),  # type: ignore[arg-type]
            predicted_energy_j=_optional(config.get("predicted_energy_j")),
            measured_energy_j=_optional(config.get("measured_energy_j")),
        ))
    return MeasuredFile(run.dataset.folder, file_name(run), tuple(points))


def energy_points(result: dict[str, object]) -> list[EnergyPoint]:
    found = []
    for config in configurations(result):
        energy = _optional(config.get("measured_energy_j"))
        if energy is None:
            return []
        parameters = config["parameters"]
        assert isinstance(parameters, dict)
        clock = parameters.get(CLOCK)
        found.append(EnergyPoint(
            code=tuple(sorted((n, str(v)) for n, v in parameters.items() if n != CLOCK)),
            clock_mhz=None if clock is None else float(clock),
            predicted_time_s=float(config["predicted_time_s"]),  # type: ignore[arg-type]
            measured_time_s=float(config["measured_time_s"]),  # type: ignore[arg-type]
            predicted_energy_j=float(config["predicted_energy_j"]),  # type: ignore[arg-type]
            measured_energy_j=energy,
        ))
    return found


def _optional(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


# --- the page ------------------------------------------------------------------------------

def _percent(value: object, digits: int = 1) -> str:
    return "n/a" if not isinstance(value, (int, float)) else f"{100 * value:.{digits}f}"


def _number(value: object) -> str:
    return "n/a" if not isinstance(value, (int, float)) else f"{value:.2f}"


def _metrics(result: dict[str, object]) -> dict[str, object]:
    metrics = result["metrics"]
    assert isinstance(metrics, dict)
    return metrics


def _baseline(result: dict[str, object], name: str, metric: str) -> object:
    baselines = result["baselines"]
    assert isinstance(baselines, dict)
    return baselines[name][metric]


def _row(cells: Sequence[object]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _header(*names: str) -> list[str]:
    return [_row(names), _row(["---"] * len(names))]


def scored(run: Run) -> dict[str, object]:
    """The result a held-out row uses: without what the kernel gave the model, when it gave."""
    return run.held_out if run.held_out is not None else run.result


def held_out_table(found: Sequence[Run], flagged: dict[str, str]) -> tuple[list[str], dict]:
    counted = [run for run in found if str(run.result["file"]) not in flagged]
    files = [measured_file(run, scored(run)) for run in counted]
    shortlists = {(s.kernel, s.file): s for s in held_out_shortlists(files, LEVEL)}
    coverage = {j.kernel: j for j in held_out_intervals(files, "time", "code", LEVEL)}
    block_coverage = {j.kernel: j for j in held_out_intervals(files, "time", "block", LEVEL)}
    lines = _header("kernel", "GPU", "configs", "ρ time", "regret of pick %",
                    "NVIDIA heuristic regret %", "pick ≤ heuristic", "shortlist: optimum in",
                    "shortlist % of space", "coverage (80%) code / block pairs")
    figures: dict[str, list[float]] = {"rho": [], "regret": [], "share": []}
    hits: list[bool] = []
    no_worse: list[bool] = []
    covered: list[float] = []
    for run in counted:
        result = scored(run)
        metrics = _metrics(result)
        heuristic = _baseline(result, "occupancy_heuristic", "regret_time")
        shortlist = shortlists[(run.dataset.folder, file_name(run))]
        judged = coverage.get(run.dataset.folder)
        by_block = block_coverage.get(run.dataset.folder)
        regret = metrics["regret_time"]
        better = (isinstance(regret, float) and isinstance(heuristic, float)
                  and regret <= heuristic + 1e-9)
        mark = " ¹" if run.held_out is not None else ""
        lines.append(_row([
            run.dataset.folder + mark, f"{file_name(run)} ({result['gpu']})", result["configs"],
            _number(metrics["spearman_time"]), _percent(regret), _percent(heuristic),
            "yes" if better else "no", "yes" if shortlist.holds_best else "no",
            f"{100 * shortlist.share:.0f}",
            f"{_percent(judged.coverage if judged else None, 0)} / "
            f"{_percent(by_block.coverage if by_block else None, 0)}",
        ]))
        if isinstance(metrics["spearman_time"], float):
            figures["rho"].append(metrics["spearman_time"])
        if isinstance(regret, float):
            figures["regret"].append(regret)
        figures["share"].append(shortlist.share)
        hits.append(shortlist.holds_best)
        no_worse.append(better)
    for judged in coverage.values():
        if judged.coverage is not None:
            covered.append(judged.coverage)
    lines.append(_row([
        "**median**", f"{len(counted)} files", "", _number(statistics.median(figures["rho"])),
        _percent(statistics.median(figures["regret"])), "", f"{sum(no_worse)} of {len(no_worse)}",
        f"{sum(hits)} of {len(hits)}", f"{100 * statistics.median(figures['share']):.0f}",
        f"{_percent(statistics.median(covered), 0)}",
    ]))
    summary = {
        "rho_median": statistics.median(figures["rho"]), "rho_min": min(figures["rho"]),
        "regret_median": statistics.median(figures["regret"]),
        "no_worse": (sum(no_worse), len(no_worse)), "hits": (sum(hits), len(hits)),
        "share_median": statistics.median(figures["share"]),
        "coverage_median": statistics.median(covered) if covered else None,
        "coverage_range": (min(covered), max(covered)) if covered else None,
    }
    return lines, summary


def held_out_footnotes(found: Sequence[Run], flagged: dict[str, str]) -> list[str]:
    lines = [
        "- ρ, regret and the heuristic's regret need nothing fitted: the model's constants come "
        "from datasheets, papers and compiler measurements (docs/model.md). Its mechanisms were "
        "chosen looking at these kernels (docs/experiments.md), so those columns are held out "
        "for what is fitted, not for that choice.",
        "- The shortlist is the predicted fastest 10% of the file without the configurations "
        "whose predicted time ratio to the predicted fastest has an 80% interval wholly above 1 "
        "(the width taken from the other kernels' code pairs); coverage is the share of this "
        "kernel's pairs inside the width taken from the other kernels.",
    ]
    for run in found:
        if run.held_out is not None:
            before, after = _metrics(run.result), _metrics(run.held_out)
            lines.append(
                f"- ¹ {run.dataset.folder} on {file_name(run)}: predicted without "
                f"{', '.join(r for _, rates in run.dataset.read_from for r in rates)} (read "
                f"from this file; with it: ρ {_number(before['spearman_time'])}, regret "
                f"{_percent(before['regret_time'])}%; without: ρ "
                f"{_number(after['spearman_time'])}, regret {_percent(after['regret_time'])}%).")
    for file, why in flagged.items():
        lines.append(f"- Not counted: {Path(file).parent.name} on "
                     f"{Path(file).name.split('.')[0]}: {why}.")
    return lines


def goals(summary: dict) -> list[str]:
    def mark(ok: bool) -> str:
        return "met" if ok else "**missed**"

    low, high = summary["coverage_range"] or (0.0, 0.0)
    covered = summary["coverage_median"] or 0.0
    no_worse, files = summary["no_worse"]
    hits, counted = summary["hits"]
    return [
        f"- median ρ(time) ≥ 0.85, none below 0.7: {summary['rho_median']:.2f}, lowest "
        f"{summary['rho_min']:.2f} — "
        f"{mark(summary['rho_median'] >= 0.85 and summary['rho_min'] >= 0.7)}",
        f"- pick no worse than NVIDIA's heuristic on every file: {no_worse} of {files} — "
        f"{mark(no_worse == files)}",
        f"- median regret of the pick ≤ 5%: {100 * summary['regret_median']:.1f}% — "
        f"{mark(summary['regret_median'] <= 0.05)}",
        f"- optimum in the shortlist on ≥ 90% at ≤ 10% of the space: {hits} of {counted} at a "
        f"median {100 * summary['share_median']:.0f}% — "
        f"{mark(hits >= 0.9 * counted and summary['share_median'] <= 0.10)}",
        f"- 80% intervals cover 75–85% held out: median {100 * covered:.0f}% "
        f"({100 * low:.0f}–{100 * high:.0f}% by kernel) — "
        f"{mark(0.75 <= covered <= 0.85)}",
    ]


def energy_goals(found: Sequence[Run]) -> list[str]:
    """The issue tracker's energy goals, on the files that metered energy."""
    lines = []
    for run in found:
        points = energy_points(run.result)
        if not points:
            continue
        metrics = _metrics(run.result)
        rho, mape = metrics["spearman_energy"], metrics["mape_power"]
        clocks = clock_agreement(points)
        met = isinstance(rho, float) and rho >= 0.9 and isinstance(mape, float) and mape <= 10.0
        clock = "one clock measured"
        if clocks is not None:
            share = clocks.within_one_step / clocks.configurations
            clock = (f"energy-optimal clock within one step for {100 * share:.0f}% of "
                     f"{clocks.configurations} configurations (≥ 80%: "
                     f"{'met' if share >= 0.8 else '**missed**'})")
        lines.append(f"- {run.dataset.folder}: energy ρ ≥ 0.9 and power MAPE ≤ 10%: "
                     f"{_number(rho)} and {_number(mape)}% — "
                     f"{'met' if met else '**missed**'}; {clock}")
    return lines


def confidence_table(found: Sequence[Run], flagged: dict[str, str]) -> list[str]:
    files = [measured_file(run, scored(run)) for run in found
             if str(run.result["file"]) not in flagged]
    lines = _header("metric", "pairs", "level", "width (all kernels)",
                    "held-out coverage, median", "by kernel")
    for metric in ("time", "energy"):
        for kind in ("block", "code"):
            by_kernel = kernel_residuals(files, metric, kind, 1)  # type: ignore[arg-type]
            if not by_kernel:
                continue
            for level in (0.5, 0.8, 0.9):
                width, _ = pooled_half_width(by_kernel, level)
                judged = held_out_intervals(files, metric, kind, level)  # type: ignore[arg-type]
                covered = [j.coverage for j in judged if j.coverage is not None]
                each = ", ".join(f"{j.kernel} {_percent(j.coverage, 0)}" for j in judged)
                shipped = len(by_kernel) >= MIN_KERNELS
                lines.append(_row([
                    metric if shipped else f"{metric} (not used: fewer than {MIN_KERNELS} kernels)",
                    f"{kind} ({_kernels(len(by_kernel))})", f"{level:.0%}",
                    f"±{100 * math.expm1(width):.0f}%" if math.isfinite(width)
                    else "too few pairs",
                    _percent(statistics.median(covered), 0) + "%" if covered else "n/a",
                    each if len(judged) > 1 else "one kernel: not held out",
                ]))
    for kind in ("block", "code"):
        for level in (0.5, 0.8, 0.9):
            judged = stand_in_intervals(files, kind, level)  # type: ignore[arg-type]
            if not judged:
                continue
            each = ", ".join(f"{j.kernel} {_percent(j.coverage, 0)}% of {j.pairs}"
                             for j in judged)
            lines.append(_row([
                "energy, judged with the time width", f"{kind} ({_kernels(len(judged))})",
                f"{level:.0%}", "the time width above", "", each]))
    return lines


def _kernels(count: int) -> str:
    return "1 kernel" if count == 1 else f"{count} kernels"


def energy_table(found: Sequence[Run]) -> list[str]:
    lines = _header("kernel", "GPU", "configs", "measured by", "ρ energy", "ρ power",
                    "MAPE power %", "MAPE energy %", "energy regret of pick %",
                    "NVIDIA heuristic energy regret %", "clock: exact / within one step",
                    "front: recall / precision")
    shown = False
    for run in found:
        result = run.result
        points = energy_points(result)
        if not points:
            continue
        shown = True
        metrics = _metrics(result)
        sources = result.get("measured_from") or {}
        assert isinstance(sources, dict)
        clocks = clock_agreement(points)
        front = front_agreement(points)
        clock_cell = "n/a (one clock)"
        if clocks is not None:
            total = clocks.configurations
            clock_cell = (f"{clocks.exact}/{total} ({_percent(clocks.exact / total, 0)}%) / "
                          f"{clocks.within_one_step}/{total} "
                          f"({_percent(clocks.within_one_step / total, 0)}%)")
        lines.append(_row([
            run.dataset.folder, f"{file_name(run)} ({result['gpu']})", result["configs"],
            ", ".join(str(v) for v in sources.values()), _number(metrics["spearman_energy"]),
            _number(metrics["spearman_power"]), _number(metrics["mape_power"]),
            _number(metrics["mape_energy"]), _percent(metrics["regret_energy"]),
            _percent(_baseline(result, "occupancy_heuristic", "regret_energy")), clock_cell,
            f"{_percent(front.recall, 0)}% / {_percent(front.precision, 0)}% "
            f"(of {front.measured_front} / {front.predicted_front})",
        ]))
    return lines if shown else ["No measured file has energy."]


def per_file_table(found: Sequence[Run]) -> list[str]:
    lines = _header("kernel", "GPU (profile)", "configs", "ρ time", "regret %",
                    "top-5% recall %", "optimum in 10% shortlist", "best in shortlist, regret %",
                    "MAPE time %", "NVIDIA heuristic regret %", "most threads regret %")
    for run in found:
        result = run.result
        metrics = _metrics(result)
        lines.append(_row([
            run.dataset.folder, f"{file_name(run)} ({result['gpu']})", result["configs"],
            _number(metrics["spearman_time"]), _percent(metrics["regret_time"]),
            _percent(metrics["top5_recall_time"], 0), "yes" if metrics["hit_rate"] else "no",
            _percent(metrics["regret_shortlist_time"]), _number(metrics["mape_time"]),
            _percent(_baseline(result, "occupancy_heuristic", "regret_time")),
            _percent(_baseline(result, "most_threads", "regret_time")),
        ]))
    return lines


def per_file_summary(found: Sequence[Run], flagged: dict[str, str]) -> list[str]:
    counted = [run.result for run in found if str(run.result["file"]) not in flagged]
    rho = [m for r in counted if isinstance(m := _metrics(r)["spearman_time"], float)]
    regret = [m for r in counted if isinstance(m := _metrics(r)["regret_time"], float)]
    return [f"Over these {len(counted)} files: median ρ {statistics.median(rho):.2f}, median "
            f"regret {100 * statistics.median(regret):.1f}%, worst {100 * max(regret):.1f}%."]


# Parameters whose value moves the model's error by less than this are left out of a section.
BIAS_SHOWN = 0.15


def sections(found: Sequence[Run], notes: dict, flagged: dict[str, str]) -> list[str]:
    """One short section per kernel × GPU: the figures, what the file is, what the model lacks
    for it, and the tunables its error depends on."""
    lines: list[str] = []
    for run in found:
        result = run.result
        metrics = _metrics(result)
        kernel_notes = notes.get("kernels", {}).get(run.dataset.folder, {})
        lines += [f"### {run.dataset.folder} on {file_name(run)}", ""]
        lines.append(
            f"- ρ(time) {_number(metrics['spearman_time'])}, regret "
            f"{_percent(metrics['regret_time'])}% (NVIDIA's heuristic "
            f"{_percent(_baseline(result, 'occupancy_heuristic', 'regret_time'))}%), MAPE "
            f"{_number(metrics['mape_time'])}%, {result['configs']} configurations "
            f"({result.get('seconds', 'n/a')} s).")
        if str(result["file"]) in flagged:
            lines.append(f"- Not counted: {flagged[str(result['file'])]}.")
        if kernel_notes.get("note"):
            lines.append(f"- {kernel_notes['note']}")
        for point in kernel_notes.get("missing", []):
            lines.append(f"- {point}")
        biases = result.get("bias_by_parameter")
        assert isinstance(biases, list)
        for bias in [b for b in biases[:2] if b["spread"] >= BIAS_SHOWN]:
            values = ", ".join(f"{v['value']} {100.0 * v['bias']:+.0f}% ({v['configs']})"
                               for v in bias["values"])
            lines.append(f"- Error by {bias['parameter']} (measured over predicted time against "
                         f"the file's, per value, with the configurations): {values}")
        lines.append("")
    return lines


def render(found: Sequence[Run], args: argparse.Namespace) -> str:
    notes = tomllib.loads(NOTES.read_text(encoding="utf-8"))
    flagged = implausibly_fast(found)
    table, summary = held_out_table(found, flagged)
    values = {
        "command": f".venv/bin/python scripts/validate_all.py --sample {args.sample} "
                   f"--seed {args.seed}",
        "sample": str(args.sample),
        "held_out_table": "\n".join(table),
        "held_out_footnotes": "\n".join(held_out_footnotes(found, flagged)),
        "goals": "\n".join(goals(summary) + energy_goals(found)),
        "confidence_table": "\n".join(confidence_table(found, flagged)),
        "energy_table": "\n".join(energy_table(found)),
        "per_file_table": "\n".join(per_file_table(found)),
        "per_file_summary": "\n".join(per_file_summary(found, flagged)),
        "sections": "\n".join(sections(found, notes, flagged)).rstrip(),
        "derived": "\n\n".join(notes.get("derived", {}).get("paragraphs", [])),
        "larger_sample": "\n\n".join(notes.get("larger_sample", {}).get("paragraphs", [])),
    }
    return string.Template(TEMPLATE.read_text(encoding="utf-8")).substitute(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "validation.md")
    parser.add_argument("--results", type=Path, default=None, metavar="DIR",
                        help="keep and reuse each file's validate output here")
    parser.add_argument("--write-error", action="store_true",
                        help=f"write the interval widths to {ERROR_FILE.relative_to(ROOT)}")
    parser.add_argument("--only", action="append", default=[], metavar="FOLDER")
    args = parser.parse_args(argv)
    if not MEASURED.is_dir():
        raise SystemExit(f"{MEASURED}: the measured search spaces are missing")
    found = runs(args)
    if args.write_error:
        flagged = implausibly_fast(found)
        # The widths come from the same predictions the page judges them on: each file without
        # what it gave the model.
        files = [measured_file(run, scored(run)) for run in found
                 if str(run.result["file"]) not in flagged]
        document = {
            "source": f"scripts/validate_all.py --sample {args.sample} --seed {args.seed} "
                      "--write-error: every measured kernel in calibration/data/measured",
            **shipped_intervals(files, args.seed),
        }
        ERROR_FILE.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    if not args.only:
        args.output.write_text(render(found, args), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
