"""Measured search spaces: what a Kernel Tuner cache or a T4 results file holds, typed.

Times are in seconds, power in watts, energy in joules (per kernel execution, as Kernel Tuner's
NVMLObserver reports `nvml_energy`). A configuration that failed to compile or run keeps the
reason its file gives ("CompilationFailedConfig", "runtime", ...) and has no measurements.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from flipflop.space.tunables import Configuration, Tunable

QUANTITIES = ("time", "power", "energy")


@dataclass(frozen=True)
class MeasuredConfig:
    config: Configuration
    key: str  # Kernel Tuner's cache key of the configuration
    time_s: float | None  # mean of the runs
    times_s: tuple[float, ...] = ()  # every run
    power_w: float | None = None
    energy_j: float | None = None
    failure: str | None = None
    metrics: tuple[tuple[str, float], ...] = ()  # other numbers the file holds (GFLOP/s, ...)

    @property
    def failed(self) -> bool:
        return self.failure is not None


@dataclass(frozen=True)
class MeasuredSpace:
    path: str
    format: str  # "kernel_tuner_cache" or "t4"
    kernel_name: str
    device_name: str | None
    problem_size: tuple[int | str, ...] | None  # as the file writes it
    tunables: tuple[Tunable, ...]
    entries: tuple[MeasuredConfig, ...]
    objective: str | None = None
    complete: bool = True  # False: a cache Kernel Tuner had not finished writing
    # The observer fields energy and power were read from (`nvml_energy`, `ps_power`, ...);
    # None: not measured (the other quantity may still be derived from it and the time).
    energy_field: str | None = None
    power_field: str | None = None
    warnings: tuple[str, ...] = ()  # what was left out of the file, and why

    @property
    def failures(self) -> tuple[tuple[str, int], ...]:
        """How many entries were skipped, by reason ("RuntimeFailedConfig", "no time", ...)."""
        counts: dict[str, int] = {}
        for entry in self.entries:
            if entry.failure is not None:
                counts[entry.failure] = counts.get(entry.failure, 0) + 1
        return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    @property
    def usable(self) -> int:
        """Entries with a measured time: what Kernel Tuner itself would read as results."""
        return sum(1 for entry in self.entries if entry.time_s is not None)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(tunable.name for tunable in self.tunables)

    @property
    def measured(self) -> tuple[str, ...]:
        """The quantities measured for at least one configuration, of time, power and energy."""
        present = {
            "time": any(entry.time_s is not None for entry in self.entries),
            "power": any(entry.power_w is not None for entry in self.entries),
            "energy": any(entry.energy_j is not None for entry in self.entries),
        }
        return tuple(quantity for quantity in QUANTITIES if present[quantity])

    @property
    def succeeded(self) -> tuple[MeasuredConfig, ...]:
        return tuple(entry for entry in self.entries if not entry.failed)

    @property
    def failed(self) -> tuple[MeasuredConfig, ...]:
        return tuple(entry for entry in self.entries if entry.failed)

    @cached_property
    def _by_config(self) -> dict[Configuration, MeasuredConfig]:
        found: dict[Configuration, MeasuredConfig] = {}
        for entry in self.entries:
            found.setdefault(entry.config, entry)
        return found

    def entry(self, config: Configuration) -> MeasuredConfig | None:
        """The (first) measurement of `config`, or None."""
        return self._by_config.get(config)
