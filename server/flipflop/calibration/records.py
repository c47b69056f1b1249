"""Measurement files: what `flipflop measure` writes and `calibrate`/`validate` read.

The schema (`flipflop.measurements/1`) is documented in calibration/README.md. One file holds
one kernel measured at several block shapes on one GPU, with the device state, the exact
command and the commit that produced it. `kind` is "measured" for real runs and "synthetic" for
test fixtures generated from known coefficients.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flipflop.launch import Dim3

SCHEMA = "flipflop.measurements/1"


class MeasurementFileError(ValueError):
    """A measurement file that cannot be read: the message names the file and the problem."""


@dataclass(frozen=True)
class DeviceInfo:
    """The GPU as it was found (never changed by us) when the measurement started."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    sms: int
    driver_version: str
    cuda_driver_version: int
    sm_clock_mhz: float
    mem_clock_mhz: float
    max_sm_clock_mhz: float
    power_limit_w: float
    temperature_c: float


@dataclass(frozen=True)
class ConfigMeasurement:
    """One block shape: time per launch and board energy/power while it ran back to back.

    `energy_j` is board energy per launch (counter difference over the window divided by the
    launches); `energy_above_idle_j` subtracts idle power over the same time. `power_w` is the
    counter-derived mean board power over the window.
    """

    block: Dim3
    grid: Dim3
    time_s: float  # median of the CUDA-event timed repeats
    time_s_repeats: tuple[float, ...]
    energy_j: float
    energy_above_idle_j: float
    power_w: float
    window_s: float
    launches_in_window: int
    power_samples_w: tuple[float, ...] = ()
    sm_clock_mhz: float | None = None  # mean over the window
    temperature_c: float | None = None  # at the end of the window
    correct: bool | None = None  # None: the workload has no reference check
    # Per-launch work from the file's header (e.g. dram_bytes, fp32_flops, active_sms): fitting.
    work: Mapping[str, float] = field(default_factory=dict)
    dynamic_smem_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class MeasurementSet:
    """Every configuration of one kernel on one GPU, plus how it was measured."""

    file: str
    kernel: str
    device: DeviceInfo
    idle_power_w: float
    configs: tuple[ConfigMeasurement, ...]
    params: Mapping[str, float] = field(default_factory=dict)
    grid: Dim3 | None = None
    threads: Dim3 | None = None
    dynamic_smem_bytes: int = 0
    command: tuple[str, ...] = ()
    commit: str = ""
    created: str = ""
    kind: str = "measured"
    note: str = ""

    def best_energy(self) -> ConfigMeasurement:
        return min(self.configs, key=lambda c: c.energy_j)


def _dim3(value: Any, what: str) -> Dim3:
    if not (isinstance(value, list) and 1 <= len(value) <= 3):
        raise MeasurementFileError(f"{what}: expected a list of 1 to 3 integers, got {value!r}")
    dims = [int(v) for v in value] + [1] * (3 - len(value))
    return (dims[0], dims[1], dims[2])


def _optional_dim3(value: Any, what: str) -> Dim3 | None:
    return None if value is None else _dim3(value, what)


def measurement_to_json(data: MeasurementSet) -> dict[str, Any]:
    out = asdict(data)
    out = {"schema": SCHEMA, **out}
    out["params"] = dict(data.params)
    return out


def measurement_from_json(raw: Mapping[str, Any], origin: str) -> MeasurementSet:
    """Parse one measurement object; `origin` names the file in error messages."""
    if raw.get("schema") != SCHEMA:
        raise MeasurementFileError(f"{origin}: not a {SCHEMA} file (schema={raw.get('schema')!r})")
    try:
        dev = raw["device"]
        device = DeviceInfo(
            index=int(dev["index"]),
            name=str(dev["name"]),
            compute_capability=(
                int(dev["compute_capability"][0]),
                int(dev["compute_capability"][1]),
            ),
            sms=int(dev["sms"]),
            driver_version=str(dev["driver_version"]),
            cuda_driver_version=int(dev["cuda_driver_version"]),
            sm_clock_mhz=float(dev["sm_clock_mhz"]),
            mem_clock_mhz=float(dev["mem_clock_mhz"]),
            max_sm_clock_mhz=float(dev["max_sm_clock_mhz"]),
            power_limit_w=float(dev["power_limit_w"]),
            temperature_c=float(dev["temperature_c"]),
        )
        configs = tuple(
            ConfigMeasurement(
                block=_dim3(c["block"], f"{origin}: configs[{i}].block"),
                grid=_dim3(c["grid"], f"{origin}: configs[{i}].grid"),
                time_s=float(c["time_s"]),
                time_s_repeats=tuple(float(t) for t in c.get("time_s_repeats", ())),
                energy_j=float(c["energy_j"]),
                energy_above_idle_j=float(c["energy_above_idle_j"]),
                power_w=float(c["power_w"]),
                window_s=float(c["window_s"]),
                launches_in_window=int(c["launches_in_window"]),
                power_samples_w=tuple(float(p) for p in c.get("power_samples_w", ())),
                sm_clock_mhz=None if c.get("sm_clock_mhz") is None else float(c["sm_clock_mhz"]),
                temperature_c=(
                    None if c.get("temperature_c") is None else float(c["temperature_c"])
                ),
                correct=None if c.get("correct") is None else bool(c["correct"]),
                work={str(k): float(v) for k, v in c.get("work", {}).items()},
                dynamic_smem_bytes=int(c.get("dynamic_smem_bytes", 0)),
            )
            for i, c in enumerate(raw["configs"])
        )
        return MeasurementSet(
            file=str(raw["file"]),
            kernel=str(raw["kernel"]),
            device=device,
            idle_power_w=float(raw["idle_power_w"]),
            configs=configs,
            params={str(k): float(v) for k, v in raw.get("params", {}).items()},
            grid=_optional_dim3(raw.get("grid"), f"{origin}: grid"),
            threads=_optional_dim3(raw.get("threads"), f"{origin}: threads"),
            dynamic_smem_bytes=int(raw.get("dynamic_smem_bytes", 0)),
            command=tuple(str(a) for a in raw.get("command", ())),
            commit=str(raw.get("commit", "")),
            created=str(raw.get("created", "")),
            kind=str(raw.get("kind", "measured")),
            note=str(raw.get("note", "")),
        )
    except MeasurementFileError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise MeasurementFileError(f"{origin}: malformed measurement ({exc!r})") from exc


def write_measurement(data: MeasurementSet, path: Path) -> None:
    """Write JSON to `path` and the flat per-configuration table next to it as CSV."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(measurement_to_json(data), indent=1) + "\n")
    path.with_suffix(".csv").write_text(measurement_csv(data))


CSV_COLUMNS = (
    "kernel", "device", "block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z",
    "time_s", "energy_j", "energy_above_idle_j", "power_w", "idle_power_w", "window_s",
    "launches_in_window", "sm_clock_mhz", "temperature_c", "correct",
)


def measurement_csv(data: MeasurementSet) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for c in data.configs:
        writer.writerow([
            data.kernel, data.device.name, *c.block, *c.grid, c.time_s, c.energy_j,
            c.energy_above_idle_j, c.power_w, data.idle_power_w, c.window_s,
            c.launches_in_window, "" if c.sm_clock_mhz is None else c.sm_clock_mhz,
            "" if c.temperature_c is None else c.temperature_c,
            "" if c.correct is None else int(c.correct),
        ])
    return buffer.getvalue()


def read_measurement(path: Path) -> MeasurementSet:
    try:
        raw = json.loads(path.read_text())
    except OSError as exc:
        raise MeasurementFileError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise MeasurementFileError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON") from exc
    if not isinstance(raw, dict):
        raise MeasurementFileError(f"{path}: expected a JSON object")
    return measurement_from_json(raw, str(path))


def read_measurements(path: Path) -> tuple[MeasurementSet, ...]:
    """One file, or every `*.json` measurement file under a directory (sorted by path)."""
    return tuple(read_measurement(p) for p in measurement_paths(path))


def measurement_paths(path: Path) -> tuple[Path, ...]:
    """`path` itself, or every `*.json` measurement file under the directory (sorted)."""
    if path.is_dir():
        files: Sequence[Path] = sorted(
            p for p in path.rglob("*.json") if _looks_like_measurement(p)
        )
        if not files:
            raise MeasurementFileError(f"{path}: no {SCHEMA} files in this directory")
        return tuple(files)
    if not path.exists():
        raise MeasurementFileError(f"{path}: no such file or directory")
    return (path,)


def _looks_like_measurement(path: Path) -> bool:
    try:
        head = path.read_text()[:200]
    except OSError:
        return False
    return SCHEMA in head
