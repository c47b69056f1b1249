"""Writing Kernel Tuner cache files the way Kernel Tuner writes them, one entry at a time.

The layout is that of `kernel_tuner.util.process_cache`, `store_cache` and `close_cache`: the
header object (`device_name`, `kernel_name`, `problem_size`, `tune_params_keys`, `tune_params`,
`objective`, `cache`) dumped with `indent=""` and cut before the closing `}\\n}` of its empty
`cache`; then every entry appended as `"\\n" + json.dumps({key: entry})[1:-1] + ","`; closing
replaces the last comma with `}\\n}`. The file is flushed after each entry, so a run that is
stopped leaves a cache that Kernel Tuner (`correct_open_cache`) and FlipFlop's reader still
read. An existing cache is continued as Kernel Tuner continues one: it must be of the same
device, kernel, problem size and tunables, its entries are kept and only new keys are appended.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from flipflop.formats.errors import FormatError
from flipflop.formats.files import read_text
from flipflop.formats.kernel_tuner_cache import close_unfinished, load_cache_json
from flipflop.space.tunables import ParamValue

# The strings Kernel Tuner stores in place of a measurement (kernel_tuner.util.ErrorConfig).
COMPILATION_FAILED = "CompilationFailedConfig"
RUNTIME_FAILED = "RuntimeFailedConfig"
INVALID = "InvalidConfig"
_CLOSING = "}\n}"


@dataclass(frozen=True)
class CacheHeader:
    """What identifies a cache: Kernel Tuner refuses to continue one whose header differs."""

    device_name: str
    kernel_name: str
    problem_size: int | str | tuple[int | str, ...]
    tune_params: Mapping[str, Sequence[ParamValue]]  # in tune_params_keys order
    objective: str = "time"

    def to_json(self) -> dict[str, Any]:
        size = self.problem_size
        return {
            "device_name": self.device_name,
            "kernel_name": self.kernel_name,
            "problem_size": list(size) if isinstance(size, tuple) else size,
            "tune_params_keys": list(self.tune_params),
            "tune_params": {name: list(values) for name, values in self.tune_params.items()},
            "objective": self.objective,
            "cache": {},
        }


def header_text(header: CacheHeader) -> str:
    """The opening of a new cache file, exactly as Kernel Tuner writes it."""
    return json.dumps(header.to_json(), indent="")[: -len(_CLOSING)]


def entry_text(key: str, entry: Mapping[str, Any]) -> str:
    """One appended entry, exactly as `store_cache` writes it (non-finite numbers refused)."""
    _check_finite(entry, key)
    return "\n" + json.dumps({key: dict(entry)}, allow_nan=False)[1:-1] + ","


def _check_finite(value: object, key: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"cache entry {key!r} holds {value}: JSON has no such number")
    if isinstance(value, Mapping):
        for item in value.values():
            _check_finite(item, key)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_finite(item, key)


class KernelTunerCacheWriter:
    """A cache file open for appending; use as a context manager, or call `close()`."""

    def __init__(self, path: Path, header: CacheHeader) -> None:
        self.path = path
        self.header = header
        self.entries: dict[str, dict[str, Any]] = {}
        if path.exists():
            self.entries = _continue(path, header)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(header_text(header))
        self._handle: TextIO | None = path.open("a")

    def __enter__(self) -> KernelTunerCacheWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def __contains__(self, key: object) -> bool:
        return key in self.entries

    def append(self, key: str, entry: Mapping[str, Any]) -> None:
        """Add one configuration's entry; a key already in the cache is an error."""
        if self._handle is None:
            raise ValueError(f"{self.path}: the cache is closed")
        if key in self.entries:
            raise ValueError(f"{self.path}: the cache already holds {key!r}")
        text = entry_text(key, entry)
        self._handle.write(text)
        self._handle.flush()
        self.entries[key] = dict(entry)

    def close(self) -> None:
        """Close the file as `close_cache` does: the last comma becomes the closing braces."""
        if self._handle is None:
            return
        self._handle.close()
        self._handle = None
        text = self.path.read_text()
        if text.endswith(","):
            text = text[:-1] + _CLOSING
        elif not text.rstrip().endswith(_CLOSING):
            text += _CLOSING  # a header without entries: `"cache": {` closes as `{}`
        self.path.write_text(text)


def _continue(path: Path, header: CacheHeader) -> dict[str, dict[str, Any]]:
    """The entries of an existing cache of the same kernel, the file made ready for appending
    (as `correct_open_cache(open_cache=True)`); FormatError when the headers differ."""
    text = read_text(path)
    data, _ = load_cache_json(text, str(path))
    if not isinstance(data, dict) or not isinstance(data.get("cache"), dict):
        raise FormatError(path, "exists but is not a Kernel Tuner cache: give another file")
    wanted = header.to_json()
    for field in ("device_name", "kernel_name", "problem_size", "tune_params_keys"):
        if data.get(field) != wanted[field]:
            raise FormatError(path, f"cannot continue this cache: its {field} is "
                                    f"{data.get(field)!r}, this run's is {wanted[field]!r}")
    closed = close_unfinished(text)
    body = (closed if closed is not None else text.rstrip())[: -len(_CLOSING)]
    if data["cache"]:
        body += ","
    path.write_text(body)
    return {str(key): dict(value) for key, value in data["cache"].items()}
