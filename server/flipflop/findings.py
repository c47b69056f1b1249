"""What an analysis tells the developer, located in the source and carrying its fixes.

The language server turns findings into diagnostics (fixes ride along in `Diagnostic.data`, so a
code action needs no re-analysis) and `--format sarif` into results. Both read the same list.
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.advice import Advice
from flipflop.advice.confidence import format_saving
from flipflop.advice.drivers import Driver
from flipflop.launch import Dim3
from flipflop.model.predict import Prediction
from flipflop.results import AnalysisResult, KernelReport, LaunchReport
from flipflop.rules import RULES, Severity
from flipflop.source.edits import Refusal, rewrite_launch
from flipflop.source.model import Range, TextEdit
from flipflop.toolchain import ToolDiagnostic
from flipflop.units import format_energy, format_shape, format_time

# Driver kinds that become findings at their source lines, and the share of the launch's energy
# (or, for occupancy and tail, of its time) below which they are left to the hover.
_DRIVER_RULES: dict[str, tuple[str, float]] = {
    "coalescing": ("FF004", 0.05),
    "bank_conflicts": ("FF005", 0.05),
    "idle_lanes": ("FF006", 0.05),
    "occupancy_limiter": ("FF007", 0.05),
    "tail_effect": ("FF008", 0.05),
    "spills": ("FF003", 0.0),
    "divergence": ("FF011", 0.05),
}


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[TextEdit, ...]
    preferred: bool = False


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    line: int  # 1-based source line
    range: Range | None = None  # exact range when known; else the whole line
    kernel: str | None = None
    related_lines: tuple[int, ...] = ()
    fixes: tuple[Fix, ...] = ()


def findings(result: AnalysisResult, min_saving: float = 0.05) -> tuple[Finding, ...]:
    """Every finding of one analysis, compiler messages first, then per kernel."""
    found = [*compiler_findings(result.diagnostics, str(result.path))]
    for kernel in result.kernels:
        found.extend(_conflict_findings(kernel))
        for launch in kernel.launches:
            found.extend(_launch_findings(result, kernel, launch, min_saving))
            found.extend(_assumption_findings(result, kernel, launch, min_saving))
            found.extend(_space_findings(result, kernel, launch, min_saving))
        found.extend(_launch_bounds_findings(result, kernel, min_saving))
        found.extend(_driver_findings(kernel))
    return tuple(found)


def compiler_findings(
    diagnostics: tuple[ToolDiagnostic, ...], path: str
) -> tuple[Finding, ...]:
    """nvcc/cudafe++/ptxas messages: at their line in this file, else at the `#include` that
    leads to the other file (line 1 when none does), naming that file."""
    found: list[Finding] = []
    for diagnostic in diagnostics:
        if diagnostic.severity not in ("error", "warning"):
            continue
        here = diagnostic.file is None or _same_file(diagnostic.file, path)
        line = diagnostic.line if here and diagnostic.line else 1
        if not here:
            # In a header: at the `#include` of this file that leads to it, when there is one.
            line = next(
                (n for file, n in diagnostic.included_from if _same_file(file, path)), line
            )
        where = "" if here else f"{diagnostic.file}:{diagnostic.line or 0}: "
        code = f" [{diagnostic.code}]" if diagnostic.code else ""
        found.append(
            Finding(
                code="FF009",
                severity="error" if diagnostic.severity == "error" else "warning",
                message=f"{diagnostic.tool}: {where}{diagnostic.message}{code}",
                line=line,
            )
        )
    return tuple(found)


def _same_file(a: str, b: str) -> bool:
    from pathlib import Path

    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _launch_findings(
    result: AnalysisResult, kernel: KernelReport, launch: LaunchReport, min_saving: float
) -> list[Finding]:
    advice = launch.advice
    current = advice.current
    site = launch.site
    if current is None or site is None:
        return []
    rec = advice.recommendation
    saving = rec.energy_saving_vs_current
    if saving is None or saving < max(min_saving, 1e-9) or rec.block == current.block:
        return []
    gpu = result.profile.name
    off_front = "" if current.pareto else " is off the energy/time Pareto front and"
    figures = (
        f"{rec.time_s / current.time_s - 1.0:+.0%} time, at an assumed problem size"
        if launch.size_assumed else  # absolute figures would be of the default size only
        f"{format_energy(current.energy_j)} → {format_energy(rec.energy_j)},"
        f" {format_time(current.time_s)} → {format_time(rec.time_s)}"
    )
    message = (
        f"{kernel.info.display_name.split('(')[0]}<<<…, {format_shape(current.block)}>>>"
        f"{off_front} could use {format_saving(saving, advice.saving_interval)} less energy"
        f" with block "
        f"{format_shape(rec.block)} on {gpu} ({figures}); {_rule_text(advice)}"
    )
    fixes = _launch_fixes(result, launch, advice)
    return [
        Finding(
            code="FF001",
            severity="warning",
            message=message,
            line=site.line + 1,
            range=site.block.range,
            kernel=kernel.info.name,
            related_lines=(site.line + 1,),
            fixes=fixes,
        )
    ]


def _conflict_findings(kernel: KernelReport) -> list[Finding]:
    """A launch or a `// flipflop:` annotation that asks for a block the code does not support
    (`flipflop.constraints`): each once, at the launch or the annotation."""
    found: list[Finding] = []
    seen: set[str] = set()
    sources = [(None, kernel.constraints)] + [
        (launch, launch.advice.constraints) for launch in kernel.launches]
    for launch, constraints in sources:
        if constraints is None:
            continue
        for conflict in constraints.conflicts:
            message = conflict.describe()
            if message in seen:
                continue
            seen.add(message)
            site = launch.site if launch is not None else None
            on_launch = site is not None and conflict.block is not None
            found.append(Finding(
                code="FF014",
                severity=RULES["FF014"].severity,
                message=message[0].upper() + message[1:],
                line=site.line + 1 if on_launch and site is not None else conflict.line,
                range=site.block.range if on_launch and site is not None else None,
                kernel=kernel.info.name,
                related_lines=conflict.requirement.lines,
            ))
    return found


def _assumption_findings(
    result: AnalysisResult, kernel: KernelReport, launch: LaunchReport, min_saving: float
) -> list[Finding]:
    """The guess the recommendation rests on, when a plausible error in it changes the pick."""
    for influence in launch.assumptions:  # most influential first
        outcome = influence.decisive(max(min_saving, 1e-9))
        if outcome is None or outcome.recommendation is None:
            continue
        rec = launch.advice.recommendation
        guess = influence.guess
        other = format_shape(outcome.recommendation.block)
        cost = (
            f"block {format_shape(rec.block)} could not launch then"
            if outcome.pick_regret is None
            else f"block {format_shape(rec.block)} would then use {outcome.pick_regret:.0%} more"
            " energy"
        )
        pin = (
            f"Pin it with `{guess.annotation}` above the launch."
            if guess.annotation
            else "No annotation sets it; the other guesses are in the hover."
        )
        message = (
            f"The recommended block {format_shape(rec.block)} on {result.profile.name} rests on"
            f" a guess: {guess.name} ({guess.assumed}). {outcome.label.capitalize()}, block"
            f" {other} would be recommended instead ({cost}). {pin}"
        )
        site = launch.site
        source_kernel = kernel.source_kernel
        if site is not None:
            line, range_ = site.line + 1, site.range
        elif source_kernel is not None:
            line, range_ = source_kernel.line + 1, source_kernel.name_range
        else:
            line, range_ = kernel.info.line or 1, None
        return [
            Finding(
                code="FF012",
                severity=RULES["FF012"].severity,
                message=message,
                line=line,
                range=range_,
                kernel=kernel.info.name,
                related_lines=guess.lines,
            )
        ]
    return []


def _space_findings(
    result: AnalysisResult, kernel: KernelReport, launch: LaunchReport, min_saving: float
) -> list[Finding]:
    """Tunable defaults that use clearly more energy than the space's recommendation, and
    tuned values that break what the kernel's code needs."""
    advice, space = launch.advice, launch.space
    current = advice.current
    if space is None:
        return []
    source_kernel = kernel.source_kernel
    found = [
        Finding(
            code="FF014",
            severity=RULES["FF014"].severity,
            message=warning[0].upper() + warning[1:],
            line=source_kernel.line + 1 if source_kernel is not None else kernel.info.line or 1,
            range=source_kernel.name_range if source_kernel is not None else None,
            kernel=kernel.info.name,
        )
        for warning in space.constraint_warnings
    ]
    if current is None:
        return found
    rec = advice.recommendation
    saving = rec.energy_saving_vs_current
    chosen = rec.prediction
    if saving is None or saving < max(min_saving, 1e-9) or chosen.params == current.params:
        return found
    changes = [
        (name, value) for (name, value), (_, old) in zip(chosen.params, current.params,
                                                          strict=True)
        if value != old
    ]
    described = ", ".join(f"{name}={value}" for name, value in changes)
    off_front = "" if current.pareto else " are off the energy/time Pareto front and"
    message = (
        f"the defaults of {kernel.info.display_name.split('(')[0]}'s tunables{off_front} could"
        f" use {format_saving(saving, advice.saving_interval)} less energy with {described} on"
        f" {result.profile.name}"
        f" ({format_energy(current.energy_j)} → {format_energy(rec.energy_j)},"
        f" {format_time(current.time_s)} → {format_time(rec.time_s)}); {_rule_text(advice)},"
        f" over {space.evaluated} of {space.size} configurations"
    )
    edits = []
    for name, value in changes:
        definition = result.source.default_of(name)
        if definition is not None:
            edits.append(TextEdit(definition.value_range, str(value)))
    fixes: tuple[Fix, ...] = ()
    # A clock or power limit is no edit of the source: a fix would apply half the change.
    if edits and chosen.power_limit_w is None and not chosen.settings.any:
        fixes = (Fix(title=f"Use {described} (lowest energy{_saving_text(current, chosen)})",
                     edits=tuple(edits), preferred=True),)
    anchor = result.source.default_of(changes[0][0]) if changes else None
    line = (anchor.line + 1 if anchor is not None
            else source_kernel.line + 1 if source_kernel is not None else kernel.info.line or 1)
    return [
        *found,
        Finding(
            code="FF013",
            severity="warning",
            message=message,
            line=line,
            range=anchor.value_range if anchor is not None
            else source_kernel.name_range if source_kernel is not None else None,
            kernel=kernel.info.name,
            related_lines=tuple(d.line + 1 for n, _ in changes
                                if (d := result.source.default_of(n)) is not None),
            fixes=fixes,
        )
    ]


def _launch_bounds_findings(
    result: AnalysisResult, kernel: KernelReport, min_saving: float
) -> list[Finding]:
    """`__launch_bounds__` that rules out a configuration using clearly less energy."""
    source_kernel = kernel.source_kernel
    launch = kernel.primary
    bounds = source_kernel.launch_bounds if source_kernel is not None else None
    if bounds is None or source_kernel is None or launch.unbounded is None:
        return []
    bounded = launch.advice.recommendation
    free = launch.unbounded.recommendation
    if free.energy_j >= bounded.energy_j * (1.0 - max(min_saving, 1e-9)):
        return []
    saving = 1.0 - free.energy_j / bounded.energy_j
    message = (
        f"__launch_bounds__({', '.join(bounds.arguments)}) rules out block"
        f" {format_shape(free.block)}, predicted to use {saving:.0%} less energy than the best"
        f" allowed block {format_shape(bounded.block)} on {result.profile.name}"
        f" ({format_energy(bounded.energy_j)} → {format_energy(free.energy_j)})"
    )
    fixes: tuple[Fix, ...] = ()
    if launch.site is not None and free.power_limit_w is None:
        rewritten = rewrite_launch(result.source, launch.site, free.block)
        if not isinstance(rewritten, Refusal):
            fixes = (
                Fix(
                    title=f"Raise the bounds and use block {format_shape(free.block)}",
                    edits=rewritten.edits,
                    preferred=True,
                ),
            )
    return [
        Finding(
            code="FF002",
            severity="warning",
            message=message,
            line=source_kernel.line + 1,
            range=bounds.range,
            kernel=kernel.info.name,
            fixes=fixes,
        )
    ]


def _rule_text(advice: Advice) -> str:
    rec = advice.recommendation
    return (
        f"lowest predicted energy within {advice.slack:.0%} of the fastest configuration "
        f"(this one is {rec.slowdown_vs_fastest:+.1%} vs the fastest)"
    )


def _launch_fixes(result: AnalysisResult, launch: LaunchReport, advice: Advice) -> tuple[Fix, ...]:
    """Quick fixes that rewrite the launch to the recommendation and to the fastest front point.

    A configuration that needs a power limit is not offered: no edit of the source sets one.
    An edit the source module cannot make safely is left out.
    """
    site = launch.site
    if site is None:
        return ()
    targets: list[tuple[str, Prediction, bool]] = [
        ("lowest energy", advice.recommendation.prediction, True)
    ]
    fastest_on_front = min(
        (p for p in advice.front if p.power_limit_w is None), key=lambda p: p.time_s, default=None
    )
    if fastest_on_front is not None and fastest_on_front.block != advice.recommendation.block:
        targets.append(("fastest on the Pareto front", fastest_on_front, False))
    fixes: list[Fix] = []
    for label, prediction, preferred in targets:
        if prediction.power_limit_w is not None:
            continue
        rewritten = rewrite_launch(result.source, site, prediction.block)
        if isinstance(rewritten, Refusal):
            continue
        saving = _saving_text(advice.current, prediction)
        fixes.append(
            Fix(
                title=f"Use block {format_shape(prediction.block)} ({label}{saving})",
                edits=rewritten.edits,
                preferred=preferred,
            )
        )
    return tuple(fixes)


def _saving_text(current: Prediction | None, target: Prediction) -> str:
    if current is None or current.energy_j <= 0:
        return ""
    change = target.energy_j / current.energy_j - 1.0
    return f", {change:+.0%} energy"


def _driver_findings(kernel: KernelReport) -> list[Finding]:
    found: list[Finding] = []
    advice = kernel.primary.advice
    for driver in advice.drivers:
        rule = _DRIVER_RULES.get(driver.kind)
        if rule is None:
            continue
        code, threshold = rule
        if driver.share < threshold and driver.kind != "spills":
            continue
        line = _driver_line(kernel, driver)
        if line is None:
            continue
        found.append(
            Finding(
                code=code,
                severity=RULES[code].severity,
                message=f"{driver.message} ({driver.share:.0%} of the predicted energy"
                f" at block {format_shape(_shown_block(advice))})",
                line=line,
                range=kernel.source_kernel.name_range
                if (kernel.source_kernel is not None and not driver.lines)
                else None,
                kernel=kernel.info.name,
                related_lines=driver.lines,
            )
        )
    return found


def _driver_line(kernel: KernelReport, driver: Driver) -> int | None:
    if driver.lines:
        return driver.lines[0]
    if kernel.source_kernel is not None:
        return kernel.source_kernel.line + 1  # the source model counts from 0
    return kernel.info.line


def _shown_block(advice: Advice) -> Dim3:
    chosen = advice.current or advice.heuristic or advice.recommendation.prediction
    return chosen.block
