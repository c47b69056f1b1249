"""The `flipflop` settings section: one typed model with defaults, parsed once per change.

A bad value is reported and replaced by its default; unknown keys are ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from flipflop.launch import Dim3
from flipflop.model.error import DEFAULT_LEVEL, LEVELS
from flipflop.options import AnalysisOptions


@dataclass(frozen=True)
class Settings:
    gpu: str = "rtx3070"
    nvccPath: str | None = None
    arch: str | None = None
    compileTimeout: float = 60.0
    extraArgs: tuple[str, ...] = ()
    includePaths: tuple[str, ...] = ()
    compileCommands: str | None = None
    slack: float = 0.05
    powerLimits: bool = False
    confidence: float | None = DEFAULT_LEVEL  # None ("off"): decide on the point predictions
    minSaving: float = 0.05
    inlayHints: bool = True
    codeLens: bool = True
    debounceMs: int = 0
    maxFileSize: int = 2 * 1024 * 1024
    problemSize: Mapping[str, Dim3] = field(default_factory=dict)

    def analysis_options(self, kernel: str | None = None) -> AnalysisOptions:
        grid = self.problemSize.get("grid")
        threads = None if grid is not None else self.problemSize.get("threads")
        return AnalysisOptions(
            gpu=self.gpu,
            arch=self.arch,
            nvcc_path=self.nvccPath,
            include_dirs=tuple(Path(p) for p in self.includePaths),
            extra_args=self.extraArgs,
            compile_commands=Path(self.compileCommands) if self.compileCommands else None,
            compile_timeout_s=self.compileTimeout,
            kernel=kernel,
            grid=grid,
            threads=threads,
            slack=self.slack,
            power_limits=self.powerLimits,
            confidence=self.confidence,
        )

    def cache_key(self) -> tuple[Any, ...]:
        return tuple(
            tuple(sorted(v.items())) if isinstance(v, Mapping) else v
            for v in (getattr(self, f.name) for f in fields(self))
        )


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    return value.strip()


def _optional_text(value: Any) -> str | None:
    return None if value in (None, "") else _text(value)


def _number(low: float, high: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("expected a number")
        if not low <= value <= high:
            raise ValueError(f"expected a number between {low:g} and {high:g}")
        return float(value)

    return check


def _integer(low: int, high: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("expected an integer")
        if not low <= value <= high:
            raise ValueError(f"expected an integer between {low} and {high}")
        return value

    return check


def _confidence(value: Any) -> float | None:
    if value == "off":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for level in LEVELS:
            if abs(float(value) - level) < 1e-9:
                return level
    raise ValueError("expected one of " + ", ".join(f"{level:g}" for level in LEVELS)
                     + ' or "off"')


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of strings")
    return tuple(value)


def _dim3(value: Any) -> Dim3:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if (
        not isinstance(value, list)
        or not 1 <= len(value) <= 3
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise ValueError("expected 1 to 3 positive integers")
    extents = [*value, 1, 1][:3]
    return (extents[0], extents[1], extents[2])


def _problem_size(value: Any) -> Mapping[str, Dim3]:
    if not isinstance(value, Mapping):
        raise ValueError('expected {"grid": [x, y, z]} or {"threads": [x, y, z]}')
    parsed = {key: _dim3(value[key]) for key in ("grid", "threads") if value.get(key) is not None}
    return parsed


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "gpu": _text,
    "nvccPath": _optional_text,
    "arch": _optional_text,
    "compileTimeout": _number(1, 3600),
    "extraArgs": _strings,
    "includePaths": _strings,
    "compileCommands": _optional_text,
    "slack": _number(0, 10),
    "powerLimits": _flag,
    "confidence": _confidence,
    "minSaving": _number(0, 1),
    "inlayHints": _flag,
    "codeLens": _flag,
    "debounceMs": _integer(0, 60_000),
    "maxFileSize": _integer(1024, 1 << 30),
    "problemSize": _problem_size,
}


def parse_settings(
    raw: Any, base: Settings | None = None, known_gpus: frozenset[str] | None = None
) -> tuple[Settings, tuple[str, ...]]:
    """Settings from a `flipflop` section (a dict); problems name each rejected value."""
    settings = base or Settings()
    if raw is None:
        return settings, ()
    if not isinstance(raw, Mapping):
        return settings, (f"the flipflop settings must be an object, not {type(raw).__name__}",)
    problems: list[str] = []
    changes: dict[str, Any] = {}
    for key, parse in _PARSERS.items():
        if key not in raw:
            continue
        try:
            changes[key] = parse(raw[key])
        except ValueError as error:
            default = getattr(Settings(), key)
            problems.append(f"flipflop.{key}: {error}; using {default!r}")
    gpu = changes.get("gpu")
    if gpu is not None and known_gpus is not None and gpu not in known_gpus:
        from flipflop.gpu.legacy import legacy_gpu

        legacy = legacy_gpu(gpu)
        why = legacy.reason() if legacy is not None else f"unknown GPU '{gpu}'"
        problems.append(
            f"flipflop.gpu: {why} (known: {', '.join(sorted(known_gpus))}); using {settings.gpu!r}"
        )
        del changes["gpu"]
    return replace(settings, **changes), tuple(problems)
