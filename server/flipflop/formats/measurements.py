"""One reader for `flipflop validate`: a Kernel Tuner cache or T4 results, told apart by content.

The file is read and parsed once (the largest caches are tens of megabytes). A T4 file needs the
T1 file of its kernel; a T1 file itself describes a kernel and holds no measurements.
"""

from __future__ import annotations

from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import read_text
from flipflop.formats.kernel_tuner_cache import kernel_tuner_cache_from_json, load_cache_json
from flipflop.formats.measured import MeasuredSpace
from flipflop.formats.t1 import T1Input
from flipflop.formats.t4 import t4_from_json

FLIPFLOP_SCHEMA_PREFIX = "flipflop.measurements/"


def kind_of(data: object) -> str | None:
    """"kernel_tuner_cache", "t4", "t1", "flipflop" (FlipFlop's own measurement files), or None."""
    if not isinstance(data, dict):
        return None
    if "cache" in data and "tune_params_keys" in data:
        return "kernel_tuner_cache"
    if isinstance(data.get("results"), list):
        return "t4"
    if "ConfigurationSpace" in data and "KernelSpecification" in data:
        return "t1"
    schema = data.get("schema")
    if isinstance(schema, str) and schema.startswith(FLIPFLOP_SCHEMA_PREFIX):
        return "flipflop"
    return None


def read_measured_space(path: str | Path, t1: T1Input | None = None) -> MeasuredSpace:
    """The measurements of a Kernel Tuner cache (.json, .json.gz, unfinished) or of T4 results
    (read against `t1`)."""
    text = read_text(path)
    data, complete = load_cache_json(text, str(path))
    kind = kind_of(data)
    if kind == "kernel_tuner_cache":
        return usable(kernel_tuner_cache_from_json(data, str(path), complete))
    if kind == "t4":
        if t1 is None:
            raise FormatError(path, "T4 results name no kernel: give the T1 file that describes "
                                    "it (--t1)")
        return usable(t4_from_json(data, path, t1))
    if kind == "t1":
        raise FormatError(path, "a T1 file describes a kernel and holds no measurements: give it "
                                "with --t1 beside a cache or T4 results")
    if kind == "flipflop":
        raise FormatError(path, "a FlipFlop measurement file: read it with "
                                "flipflop.calibration.records")
    raise FormatError(path, "neither a Kernel Tuner cache nor T4 results")


def usable(space: MeasuredSpace) -> MeasuredSpace:
    """`space`, or a FormatError when not one of its entries has a measured time."""
    if space.usable:
        return space
    if not space.entries:
        raise FormatError(space.path, "nothing to validate: the file holds no measurements")
    reasons = ", ".join(f"{reason} {count}" for reason, count in space.failures)
    raise FormatError(space.path, f"nothing to validate: all {len(space.entries)} entries "
                                  f"failed or hold no time ({reasons})")
