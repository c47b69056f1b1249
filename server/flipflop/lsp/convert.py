"""Domain results → lsprotocol types. No analysis happens here."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from flipflop.advice import Advice
from flipflop.advice.confidence import format_saving
from flipflop.analysis.spelling import source_spelling
from flipflop.findings import Finding, Fix
from flipflop.launch import LaunchShape
from flipflop.model.predict import Prediction
from flipflop.report.configs import described, short_label, space_summary, varying_tunables
from flipflop.report.json_report import prediction_brief
from flipflop.report.rows import ConfigRow, TieRow, describe_tie, report_rows
from flipflop.results import AnalysisResult, KernelReport, LaunchReport
from flipflop.rules import RULES
from flipflop.source.model import Range, TextEdit
from flipflop.units import format_energy, format_shape, format_time

_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}


def lsp_range(range_: Range) -> lsp.Range:
    return lsp.Range(
        start=lsp.Position(line=range_.start.line, character=range_.start.character),
        end=lsp.Position(line=range_.end.line, character=range_.end.character),
    )


def line_range(lines: list[str], line: int) -> lsp.Range:
    """The text of 1-based `line` without its indentation (the whole line when it is blank)."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[index] if lines else ""
    start = len(text) - len(text.lstrip())
    end = len(text.encode("utf-16-le")) // 2
    if start >= len(text.rstrip()):
        start = 0
    start_units = len(text[:start].encode("utf-16-le")) // 2
    return lsp.Range(
        start=lsp.Position(line=index, character=start_units),
        end=lsp.Position(line=index, character=end),
    )


def to_diagnostic(finding: Finding, lines: list[str], version: int | None) -> lsp.Diagnostic:
    """A diagnostic whose `data` carries the fixes, so code actions need no re-analysis."""
    rule = RULES[finding.code]
    range_ = lsp_range(finding.range) if finding.range else line_range(lines, finding.line)
    data: dict[str, Any] | None = None
    if finding.fixes:
        data = {"version": version, "fixes": [fix_to_data(fix) for fix in finding.fixes]}
    return lsp.Diagnostic(
        range=range_,
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        code_description=lsp.CodeDescription(href=rule.href),
        source="flipflop",
        data=data,
    )


def fix_to_data(fix: Fix) -> dict[str, Any]:
    return {
        "title": fix.title,
        "preferred": fix.preferred,
        "edits": [_edit_to_data(edit) for edit in fix.edits],
    }


def _edit_to_data(edit: TextEdit) -> dict[str, Any]:
    r = edit.range
    return {
        "range": [r.start.line, r.start.character, r.end.line, r.end.character],
        "newText": edit.new_text,
    }


def code_actions(uri: str, diagnostic: lsp.Diagnostic) -> list[lsp.CodeAction]:
    """Quick fixes read back from a flipflop diagnostic's `data`."""
    data = diagnostic.data
    if diagnostic.source != "flipflop" or not isinstance(data, dict):
        return []
    version = data.get("version")
    actions: list[lsp.CodeAction] = []
    for fix in data.get("fixes", []):
        try:
            edits = [
                lsp.TextEdit(
                    range=lsp.Range(
                        start=lsp.Position(line=e["range"][0], character=e["range"][1]),
                        end=lsp.Position(line=e["range"][2], character=e["range"][3]),
                    ),
                    new_text=e["newText"],
                )
                for e in fix["edits"]
            ]
            title = str(fix["title"])
        except (KeyError, IndexError, TypeError):
            continue  # data from another server version: offer nothing rather than guess
        change = lsp.TextDocumentEdit(
            text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=list(edits),
        )
        actions.append(
            lsp.CodeAction(
                title=title,
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=bool(fix.get("preferred")),
                edit=lsp.WorkspaceEdit(document_changes=[change]),
            )
        )
    return actions


# --------------------------------------------------------------------------- hover

# A hover is read at a glance: beyond this many rows the table is cut.
_HOVER_ROWS = 16


def hover_markdown(result: AnalysisResult, kernel: KernelReport, launch: LaunchReport) -> str:
    advice = launch.advice
    profile = result.profile
    uri = result.path.absolute().as_uri()
    title = _markdown_escaped(kernel.info.display_name)
    parts = [f"**{title}** on {profile.name} ({result.arch})", ""]
    rec = advice.recommendation
    summary = space_summary(launch)
    if summary is not None:
        parts.append(summary[0].upper() + summary[1:] + ".")
        parts.append("")
    recommended = (
        f"**{_markdown_escaped(described(rec.prediction))}**" if rec.prediction.params
        else f"block **{format_shape(rec.prediction.block)}**"
    )
    parts.append(
        f"Recommended {recommended}"
        + (f" at a {rec.power_limit_w:.0f} W power limit" if rec.power_limit_w else "")
        + f": {format_energy(rec.energy_j)}, {format_time(rec.time_s)}, {rec.power_w:.0f} W"
        + (" at an assumed problem size" if launch.size_assumed else "")
        + (" — the launch as written." if advice.held_back is not None
           else f" — lowest predicted energy within {advice.slack:.0%} of the fastest.")
    )
    saving = rec.energy_saving_vs_current
    if advice.current is not None and saving and rec.prediction is not advice.current:
        parts.append(f"It saves {format_saving(saving, advice.saving_interval)} of the"
                     " energy of the launch as written.")
    if advice.held_back is not None:
        parts.append(_markdown_escaped(advice.held_back))
    parts.append("")
    parts.extend(_constraint_lines(advice))
    varying = varying_tunables(advice.predictions)
    heading = "block" if not varying else _markdown_escaped(" ".join(varying)) + " (block)"
    parts.append(f"| {heading} | limit | time | power | energy | Δ energy vs current |"
                 " Δ vs NVIDIA |")
    parts.append("|---|---|---|---|---|---|---|")
    ties: list[str] = []
    for row in report_rows(advice)[:_HOVER_ROWS]:
        if isinstance(row, TieRow):
            ties.append(row.summary)
            limit = _limit(row.group.anchor)
            parts.append(
                f"| *+{row.more} tied* | {limit} | {row.time} | {row.power} | {row.energy} | | |"
            )
        else:
            parts.append(_hover_row(row, advice.current, advice.heuristic, varying))
    parts.append("")
    for tie in ties:
        parts.append(f"*Tied: {tie}.*")
        parts.append("")
    if launch.assumptions:
        parts.append("**Guessed inputs**, the one the recommendation rests on most first:")
        parts.append("")
        for influence in launch.assumptions:
            parts.append(f"- {influence.describe()}")
        parts.append("")
    if advice.drivers:
        parts.append("**Energy drivers**")
        parts.append("")
        for driver in advice.drivers:
            links = ", ".join(f"[line {n}]({uri}#L{n})" for n in driver.lines)
            where = f" ({links})" if links else ""
            parts.append(f"- {driver.share:.0%} {driver.message}{where}")
        parts.append("")
    resources = kernel.resources
    parts.append(
        f"Registers {resources.registers}/thread · static shared {resources.static_smem_bytes} B"
        f" · spills {resources.spill_store_bytes + resources.spill_load_bytes} B"
    )
    problem = launch.problem.describe()
    parts.append("")
    if launch.size_assumed:
        parts.append(f"Problem size: {problem}, assumed (the default:"
                     f" {launch.size_unknown_because}). Time, energy and traffic here are for"
                     " this assumed size: compare the configurations with each other.")
    else:
        parts.append(f"Problem size: {problem} (from {launch.problem_origin}).")
    block_note = launch.block_unknown_because
    if block_note:
        parts.append("")
        parts.append(f"Block as written: {block_note}.")
    # What the counts assume at the recommended configuration (interpreting the control flow
    # may have resolved some of the kernel's assumptions for that launch).
    chosen = rec.prediction
    shape = LaunchShape(chosen.block, chosen.grid, launch.dynamic_smem_bytes)
    features = kernel.features
    assumptions = features.launch_assumptions(features.factor_values(shape, dict(launch.params)))
    if assumptions:
        parts.append("")
        parts.append("Assumed: " + "; ".join(source_spelling(a, features) for a in assumptions))
    heuristic = advice.heuristic
    if heuristic is not None:
        parts.append("")
        parts.append(
            f"NVIDIA's occupancy heuristic picks {_markdown_escaped(described(heuristic))}:"
            f" {format_energy(heuristic.energy_j)}, {format_time(heuristic.time_s)}."
        )
    return "\n".join(parts)


def _constraint_lines(advice: Advice) -> list[str]:
    """What the kernel's code needs of its block, when that shaped the advice."""
    constraints = advice.constraints
    if constraints is None:
        return []
    parts = []
    kept = advice.kept_as_written
    if kept is not None:
        parts.append(f"**Launch kept as written**: {_markdown_escaped(kept)}.")
    elif constraints.requirements and any(
            e.reason.startswith("the code needs") for e in advice.excluded):
        parts.append(f"Only shapes the code supports: {_markdown_escaped(constraints.summary())}.")
    elif constraints.unsure:
        parts.append("FlipFlop is unsure which blocks the code supports: " + _markdown_escaped(
            "; ".join(u.describe() for u in constraints.unsure)) + ".")
    for conflict in constraints.conflicts:
        parts.append(f"**Warning**: {_markdown_escaped(conflict.describe())}.")
    heuristic = advice.heuristic
    if heuristic is not None and not constraints.allows(heuristic.block):
        broken = constraints.violations(heuristic.block)[0]
        parts.append(f"NVIDIA's heuristic block {format_shape(heuristic.block)} breaks "
                     f"{_markdown_escaped(broken.describe())}.")
    return [*_paragraphs(parts)]


def _paragraphs(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        out.extend((line, ""))
    return out


def _markdown_escaped(text: str) -> str:
    """`float const*` and `_` in C++ names are plain text, not emphasis."""
    return "".join(f"\\{char}" if char in "\\`*_[]<>#|" else char for char in text)


# Labels of the rows, shortened for a narrow hover.
_HOVER_LABELS = {"NVIDIA heuristic": "NVIDIA"}


def _limit(prediction: Prediction) -> str:
    return f"{prediction.limit_w:.0f} W" if prediction.limit_w else "default"


def _hover_row(row: ConfigRow, current: Prediction | None, heuristic: Prediction | None,
               varying: tuple[str, ...] = ()) -> str:
    p = row.prediction
    limit = _limit(p)
    vs_current = _delta(p, current)
    vs_heuristic = _delta(p, heuristic)
    marks = [_HOVER_LABELS.get(label, label) for label in row.labels]
    if p.pareto:
        marks.append("front")
    label = short_label(p, varying) + (f" ({', '.join(marks)})" if marks else "")
    return (
        f"| {label} | {limit} | {format_time(p.time_s)} | {p.power_w:.0f} W |"
        f" {format_energy(p.energy_j)} | {vs_current} | {vs_heuristic} |"
    )


def _delta(p: Prediction, other: Prediction | None) -> str:
    if other is None or other.energy_j <= 0:
        return "–"
    change = p.energy_j / other.energy_j - 1
    return "0%" if abs(change) < 0.005 else f"{change:+.0%}"


# --------------------------------------------------------------------------- hints and lenses


def inlay_hint(launch: LaunchReport) -> lsp.InlayHint | None:
    site = launch.site
    current = launch.advice.current
    if site is None or current is None:
        return None
    end = site.range.end
    return lsp.InlayHint(
        position=lsp.Position(line=end.line, character=end.character),
        label=f" ⚡ {format_energy(current.energy_j)} · {format_time(current.time_s)}"
        f" · {current.power_w:.0f} W" + (" (assumed size)" if launch.size_assumed else ""),
        kind=lsp.InlayHintKind.Type,
        padding_left=True,
        tooltip="FlipFlop's predicted energy, time and power of this launch",
    )


def code_lens(uri: str, result: AnalysisResult, kernel: KernelReport) -> lsp.CodeLens | None:
    source_kernel = kernel.source_kernel
    if source_kernel is None:
        return None
    advice = kernel.primary.advice
    rec = advice.recommendation
    saving = rec.energy_saving_vs_current
    if saving is None:
        saving = rec.energy_saving_vs_occupancy_heuristic
        against = "NVIDIA's heuristic"
    else:
        against = "current"
    interval = advice.saving_interval if against == "current" else None
    saving_text = (f", {format_saving(saving, interval)} less energy than {against}"
                   if saving else "")
    launch = kernel.primary
    if launch.space is not None:
        kept = len(advice.shortlist)
        title = (
            f"⚡ energy-optimal {described(rec.prediction)}: {format_energy(rec.energy_j)}"
            f"{saving_text} · {kept} of {launch.space.evaluated} configurations worth measuring"
            f" ({advice.search_space_reduction:.0%} fewer) ({result.profile.name})"
        )
    else:
        assumed = " at an assumed size" if launch.size_assumed else ""
        title = (
            f"⚡ energy-optimal block {format_shape(rec.block)}: {format_energy(rec.energy_j)}"
            f"{assumed}{saving_text} ({result.profile.name})"
        )
    start = source_kernel.range.start
    position = lsp.Position(line=start.line, character=start.character)
    return lsp.CodeLens(
        range=lsp.Range(start=position, end=position),
        command=lsp.Command(
            title=title,
            command="flipflop.showChart",
            arguments=[uri, {"line": start.line, "character": start.character}],
        ),
    )


def chart_payload(
    result: AnalysisResult, kernel: KernelReport, launch: LaunchReport
) -> dict[str, Any]:
    """The `flipflop/kernelChart` result: every configuration plus the marked points."""
    advice = launch.advice
    brief = prediction_brief
    return {
        "kernel": kernel.info.display_name,
        "gpu": {"id": result.profile.id, "name": result.profile.name},
        "points": [_chart_point(advice, p) for p in advice.predictions],
        "tie_groups": [describe_tie(group, advice) for group in advice.ties],
        "current": brief(advice.current),
        "heuristic": brief(advice.heuristic),
        "recommendation": brief(advice.recommendation.prediction),
    }


def _chart_point(advice: Advice, prediction: Prediction) -> dict[str, Any]:
    point: dict[str, Any] = {**(prediction_brief(prediction) or {}), "pareto": prediction.pareto}
    group = advice.tie_group(prediction)
    if group is not None:
        point["tie_group"] = group.index
    return point
