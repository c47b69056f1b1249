"""Load GPU profiles from `flipflop/profiles/<id>.json` (source: `calibration/profiles`).

Every number in a profile file is a leaf `{"value": V, "source": "...", "kind": K}` with K one
of `spec` (published by NVIDIA), `derived` (computed from published numbers or papers, the
computation stated in the source) or `measured` (by us, the data file named). The JSON mirrors
the nesting of `GpuProfile`; `id`, `name` and `arch` are plain strings.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from importlib import resources
from pathlib import Path
from typing import Any

from flipflop.gpu.legacy import LegacyGpu, legacy_gpu
from flipflop.gpu.profile import GpuProfile

KINDS = ("spec", "derived", "measured")
_PROFILE_PACKAGE = "flipflop"
_PROFILE_DIR = "profiles"
_PLAIN_STRINGS = ("id", "name", "arch")


class UnknownGpuError(ValueError):
    """No profile has this id."""

    def __init__(self, gpu_id: str, known: list[str], message: str | None = None) -> None:
        super().__init__(message or f"unknown GPU '{gpu_id}'; known: {', '.join(known)}")
        self.gpu_id = gpu_id
        self.known = known


class UnsupportedGpuError(UnknownGpuError):
    """The id names a GPU older than Turing, which nvcc 13 cannot compile for."""

    def __init__(self, gpu_id: str, gpu: LegacyGpu, known: list[str]) -> None:
        super().__init__(gpu_id, known, f"{gpu.reason()}; supported GPUs: {', '.join(known)}")
        self.gpu = gpu


class ProfileFormatError(ValueError):
    """A profile file does not follow the schema."""


def _profile_files() -> dict[str, Any]:
    directory = resources.files(_PROFILE_PACKAGE) / _PROFILE_DIR
    return {
        entry.name.removesuffix(".json"): entry
        for entry in directory.iterdir()
        if entry.name.endswith(".json")
    }


def known_gpu_ids() -> list[str]:
    return sorted(_profile_files())


def load_profile(gpu_id: str) -> GpuProfile:
    """The shipped profile `gpu_id` (an id, or the name NVML reports, any case), or a profile
    file when given a path ending in `.json`.

    Raises `UnsupportedGpuError` for a pre-Turing GPU and `UnknownGpuError` for anything else
    that names no profile.
    """
    if gpu_id.endswith(".json") and Path(gpu_id).is_file():
        return load_profile_file(Path(gpu_id))
    files = _profile_files()
    if gpu_id in files:
        return parse_profile(_read_shipped(files[gpu_id]), origin=gpu_id)
    wanted = gpu_id.strip().lower()
    for other_id, entry in sorted(files.items()):
        document = _read_shipped(entry)
        if isinstance(document, dict) and str(document.get("name", "")).lower() == wanted:
            return parse_profile(document, origin=other_id)
    legacy = legacy_gpu(gpu_id)
    if legacy is not None:
        raise UnsupportedGpuError(gpu_id, legacy, sorted(files))
    raise UnknownGpuError(gpu_id, sorted(files))


def _read_shipped(entry: Any) -> Any:
    return json.loads(entry.read_text(encoding="utf-8"))


def load_profile_file(path: Path) -> GpuProfile:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ProfileFormatError(f"{path}: cannot read profile: {error}") from error
    return parse_profile(document, origin=str(path))


def list_profiles() -> list[GpuProfile]:
    return [load_profile(gpu_id) for gpu_id in known_gpu_ids()]


def parse_profile(document: Any, *, origin: str) -> GpuProfile:
    """Build a `GpuProfile` from the JSON document, keeping sources and kinds by dotted name."""
    if not isinstance(document, dict):
        raise ProfileFormatError(f"{origin}: a profile is a JSON object")
    sources: dict[str, str] = {}
    kinds: dict[str, str] = {}
    values = _parse_fields(GpuProfile, document, "", origin, sources, kinds)
    return GpuProfile(**values, sources=sources, kinds=kinds)


def _parse_fields(
    cls: type,
    document: dict[str, Any],
    prefix: str,
    origin: str,
    sources: dict[str, str],
    kinds: dict[str, str],
) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(document) - set(hints) - {"sources", "kinds"})
    if unknown:
        names = ", ".join(prefix + name for name in unknown)
        raise ProfileFormatError(f"{origin}: unknown field(s) {names}")
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(cls):
        if spec.name in ("sources", "kinds"):
            continue
        dotted = prefix + spec.name
        if spec.name not in document:
            if spec.default is not dataclasses.MISSING:
                continue
            raise ProfileFormatError(f"{origin}: missing field '{dotted}'")
        raw = document[spec.name]
        field_type = hints[spec.name]
        if dataclasses.is_dataclass(field_type):
            if not isinstance(raw, dict):
                raise ProfileFormatError(f"{origin}: '{dotted}' must be an object")
            assert isinstance(field_type, type)
            nested = _parse_fields(field_type, raw, dotted + ".", origin, sources, kinds)
            values[spec.name] = field_type(**nested)
        elif prefix == "" and spec.name in _PLAIN_STRINGS:
            if not isinstance(raw, str):
                raise ProfileFormatError(f"{origin}: '{dotted}' must be a string")
            values[spec.name] = raw
        else:
            leaf = _leaf(raw, dotted, origin)
            sources[dotted] = leaf["source"]
            kinds[dotted] = leaf["kind"]
            values[spec.name] = _convert(leaf["value"], field_type, dotted, origin)
    return values


def _leaf(raw: Any, dotted: str, origin: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) != {"value", "source", "kind"}:
        raise ProfileFormatError(
            f"{origin}: '{dotted}' must be {{\"value\", \"source\", \"kind\"}}, got {raw!r}"
        )
    if not isinstance(raw["source"], str) or not raw["source"].strip():
        raise ProfileFormatError(f"{origin}: '{dotted}' has no source")
    if raw["kind"] not in KINDS:
        raise ProfileFormatError(
            f"{origin}: '{dotted}' kind {raw['kind']!r} is not one of {', '.join(KINDS)}"
        )
    return raw


def _convert(value: Any, field_type: Any, dotted: str, origin: str) -> Any:
    """Check and convert a JSON value to the annotated type (int, float, None, tuples)."""
    origin_type = typing.get_origin(field_type)
    arguments = typing.get_args(field_type)
    if origin_type in (typing.Union, types.UnionType):
        if value is None and type(None) in arguments:
            return None
        (inner,) = (argument for argument in arguments if argument is not type(None))
        return _convert(value, inner, dotted, origin)
    if field_type is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileFormatError(f"{origin}: '{dotted}' must be an integer, got {value!r}")
        return value
    if field_type is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProfileFormatError(f"{origin}: '{dotted}' must be a number, got {value!r}")
        return float(value)
    if origin_type is tuple:
        if not isinstance(value, list):
            raise ProfileFormatError(f"{origin}: '{dotted}' must be a list, got {value!r}")
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(_convert(item, arguments[0], dotted, origin) for item in value)
        if len(value) != len(arguments):
            raise ProfileFormatError(f"{origin}: '{dotted}' needs {len(arguments)} items")
        return tuple(
            _convert(item, argument, dotted, origin)
            for item, argument in zip(value, arguments, strict=True)
        )
    raise ProfileFormatError(f"{origin}: '{dotted}' has an unsupported type {field_type!r}")
