"""`flipflop analyze --format sarif`: SARIF 2.1.0 for code-scanning dashboards and CI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flipflop import __version__
from flipflop.findings import Finding, Fix
from flipflop.rules import DOCS_BASE, RULES
from flipflop.source.model import Range

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning", "information": "note", "hint": "note"}


def findings_to_sarif(path: Path, found: tuple[Finding, ...]) -> dict[str, Any]:
    uri = path.absolute().as_uri()
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flipflop",
                        "version": __version__,
                        "informationUri": DOCS_BASE,
                        "rules": [
                            {
                                "id": rule.code,
                                "name": rule.name,
                                "shortDescription": {"text": rule.summary},
                                "helpUri": rule.href,
                                "defaultConfiguration": {"level": _LEVELS[rule.severity]},
                            }
                            for rule in RULES.values()
                        ],
                    }
                },
                "columnKind": "utf16CodeUnits",
                "results": [_result(uri, finding) for finding in found],
            }
        ],
    }


def _result(uri: str, finding: Finding) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri},
                    "region": _region(finding.line, finding.range),
                }
            }
        ],
    }
    if finding.fixes:
        result["fixes"] = [_fix(uri, fix) for fix in finding.fixes]
    return result


def _region(line: int, range_: Range | None) -> dict[str, int]:
    if range_ is None:
        return {"startLine": line}
    return {
        "startLine": range_.start.line + 1,
        "startColumn": range_.start.character + 1,
        "endLine": range_.end.line + 1,
        "endColumn": range_.end.character + 1,
    }


def _fix(uri: str, fix: Fix) -> dict[str, Any]:
    return {
        "description": {"text": fix.title},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": uri},
                "replacements": [
                    {
                        "deletedRegion": _region(edit.range.start.line + 1, edit.range),
                        "insertedContent": {"text": edit.new_text},
                    }
                    for edit in fix.edits
                ],
            }
        ],
    }
