"""`flipflop analyze --format table`: what a person reads in a terminal."""

from __future__ import annotations

import re

from flipflop.advice.confidence import format_saving
from flipflop.model.predict import Prediction
from flipflop.report.configs import described, short_label, space_summary, varying_tunables
from flipflop.report.rows import ConfigRow, TieRow, report_rows
from flipflop.results import AnalysisResult, KernelReport, LaunchReport
from flipflop.units import format_energy, format_time


def analysis_to_table(result: AnalysisResult, show_all: bool = False) -> str:
    profile = result.profile
    lines = [
        f"{profile.name} ({result.arch}), nvcc {result.toolchain.version} · {result.path}",
    ]
    for kernel in result.kernels:
        lines.append("")
        lines.extend(kernel_table(kernel, show_all))
    for note in result.notes:
        lines.append(f"note: {note}")
    if not result.kernels:
        lines.append("no kernels analysed")
    return "\n".join(lines) + "\n"


def kernel_table(kernel: KernelReport, show_all: bool) -> list[str]:
    info = kernel.info
    resources = kernel.resources
    where = f"{info.file}:{info.line}" if info.file else "?"
    out = [
        f"{info.display_name}  [{where}]",
        f"  registers {resources.registers}/thread, static shared {resources.static_smem_bytes} B,"
        f" spills {resources.spill_store_bytes + resources.spill_load_bytes} B",
    ]
    for launch in kernel.launches:
        out.extend(_launch_table(launch, show_all))
    return out


def _launch_table(launch: LaunchReport, show_all: bool) -> list[str]:
    advice = launch.advice
    size = launch.problem.describe()
    where = f" at line {launch.site.line + 1}" if launch.site is not None else ""
    out = [f"  launch{where}: {size} (from {launch.problem_origin})"]
    if launch.size_assumed:
        out[0] = f"  launch{where}: {size} assumed (the default: {launch.size_unknown_because})"
        out.append("    time, energy and traffic below are for this assumed size: compare the rows"
                   " with each other, not with a measurement")
    block_note = launch.block_unknown_because
    if block_note:
        out.append(f"    block as written: {block_note}")
    rows = report_rows(advice, show_all)
    varying = varying_tunables(advice.predictions)
    labels = [short_label(r.prediction, varying) for r in rows if isinstance(r, ConfigRow)]
    width = max([12, *(len(label) for label in labels)])
    heading = "block" if not varying else " ".join(varying) + " (block)"
    if varying:
        out.insert(1, f"  {space_summary(launch)}")
        width = max(width, len(heading))
    clocks = any(p.settings.core_clock_mhz or p.settings.memory_clock_mhz
                 for p in advice.predictions)
    clock_heading = "clock MHz  " if clocks else ""
    out.append(
        f"    {heading:<{width}} limit   {clock_heading}time        power   energy      occ   "
        "limiter        front"
    )
    for row in rows:
        if isinstance(row, TieRow):
            out.append(f"      {row.text}")
        else:
            out.append(_row(row.prediction, list(row.labels), short_label(row.prediction, varying),
                            width, clocks))
    recommendation = advice.recommendation
    saving_current = (
        "n/a" if recommendation.energy_saving_vs_current is None
        else format_saving(recommendation.energy_saving_vs_current, advice.saving_interval))
    saving_heuristic = _percent(recommendation.energy_saving_vs_occupancy_heuristic)
    chosen = recommendation.prediction
    assumed = " at the assumed size" if launch.size_assumed else ""
    out.append(
        f"  recommendation: {described(chosen)}"
        + (f" at {recommendation.power_limit_w:.0f} W" if recommendation.power_limit_w else "")
        + (f" at {chosen.clock_mhz:.0f} MHz" if chosen.settings.core_clock_mhz else "")
        + f" — {format_energy(recommendation.energy_j)}, {format_time(recommendation.time_s)}"
        f"{assumed},"
        f" {recommendation.power_w:.0f} W; energy saving vs current {saving_current},"
        f" vs NVIDIA's heuristic {saving_heuristic}; {recommendation.slowdown_vs_fastest:+.1%}"
        f" time vs the fastest (slack {advice.slack:.0%})"
    )
    for reason in recommendation.reasons:
        out.append(f"    - {reason}")
    constraints = advice.constraints
    if constraints is not None:
        for conflict in constraints.conflicts:
            out.append(f"  warning: {conflict.describe()}")
    if launch.space is not None:
        for warning in launch.space.constraint_warnings:
            out.append(f"  warning: {warning}")
    if launch.assumptions:
        out.append("  guessed inputs, the one the recommendation rests on most first:")
        for influence in launch.assumptions:
            out.append(f"    - {influence.describe()}")
    if advice.drivers:
        out.append("  energy drivers:")
        for driver in advice.drivers:
            lines = ", ".join(str(line) for line in driver.lines)
            # The message names its lines already when it says "at line(s) …".
            said = re.search(r"\bat lines? " + re.escape(lines) + r"\b", driver.message)
            where = f"  [lines {lines}]" if lines and not said else ""
            out.append(f"    {driver.share:5.0%}  {driver.message}{where}")
    return out


def _row(prediction: Prediction, labels: list[str], label: str, width: int,
         clocks: bool = False) -> str:
    limit = f"{prediction.limit_w:.0f} W" if prediction.limit_w else "default"
    clock = f"{_clock(prediction):<10} " if clocks else ""
    return (
        f"    {label:<{width}} {limit:<7} {clock}{format_time(prediction.time_s):<11}"
        f" {prediction.power_w:5.0f} W {format_energy(prediction.energy_j):<11}"
        f" {prediction.occupancy:4.0%}  {prediction.limiter:<14}"
        f" {'*' if prediction.pareto else ' '}    {', '.join(labels)}"
    ).rstrip()


def _clock(prediction: Prediction) -> str:
    """The core clock the prediction runs at (below a locked clock where the power limit
    holds it back), and a locked memory clock after a slash."""
    memory = prediction.settings.memory_clock_mhz
    return f"{prediction.clock_mhz:.0f}" + (f"/{memory:.0f}" if memory else "")


def _percent(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{0.0 if abs(value) < 0.005 else value:.0%}"  # no "-0%"
