"""Write fitted numbers into a profile document (the JSON layout `flipflop.gpu.profiles` reads).

The base profile supplies every field; each fitted field that the profile schema has is
replaced by `{"value", "source", "kind": "measured"}`, its source naming the measurement files.
Fitted numbers the schema has no field for stay in the fit report written next to the profile.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from flipflop.calibration.fit import CalibrationFit, FittedValue
from flipflop.gpu.profiles import parse_profile


def apply_fit(
    base: Mapping[str, Any],
    fit: CalibrationFit,
    dvfs_points: tuple[tuple[float, float], ...] | None = None,
    dvfs_source: str = "",
) -> tuple[dict[str, Any], dict[str, FittedValue]]:
    """(updated profile document, fitted values the schema has no place for)."""
    document: dict[str, Any] = copy.deepcopy(dict(base))
    leftovers: dict[str, FittedValue] = {}
    fitted = dict(fit.values)
    for dotted, fitted_value in fitted.items():
        if not _set_leaf(document, dotted, fitted_value):
            leftovers[dotted] = fitted_value
    if dvfs_points is not None and "dvfs_points" in document:
        document["dvfs_points"] = {
            "value": [[clock, voltage] for clock, voltage in dvfs_points],
            "source": dvfs_source,
            "kind": "measured",
        }
    parse_profile(document, origin="calibrated profile")  # the result must still load
    return document, leftovers


def _set_leaf(document: dict[str, Any], dotted: str, fitted: FittedValue) -> bool:
    *parents, name = dotted.split(".")
    node: Any = document
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or name not in node:
        return False
    value = float(f"{fitted.value:.6g}")
    node[name] = {"value": value, "source": fitted.source, "kind": "measured"}
    return True
