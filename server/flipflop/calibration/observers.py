"""Measurement sources as observers: each is one small class, the runner never changes.

The runner calls `before_start` just before the first launch of a measurement window,
`after_start` once the launches are queued, `during` repeatedly while the GPU works,
`after_finish` once the last launch completed, and `get_results` for the numbers.
"""

from __future__ import annotations

import time
from statistics import fmean
from typing import Protocol


class Observer(Protocol):
    def before_start(self) -> None: ...
    def after_start(self) -> None: ...
    def during(self) -> None: ...
    def after_finish(self) -> None: ...
    def get_results(self) -> dict[str, float | tuple[float, ...] | None]: ...


class EnergySource(Protocol):
    def energy_mj(self) -> int: ...


class PowerSource(Protocol):
    def instant_power_w(self) -> float | None: ...


class StateSource(Protocol):
    def sm_clock_mhz(self) -> float: ...
    def mem_clock_mhz(self) -> float: ...
    def temperature_c(self) -> float: ...


class EnergyCounterObserver:
    """Board energy over the window from NVML's total-energy counter (millijoules)."""

    def __init__(self, source: EnergySource) -> None:
        self._source = source
        self._start_mj = self._end_mj = 0
        self._start_s = self._end_s = 0.0

    def before_start(self) -> None:
        self._start_mj = self._source.energy_mj()
        self._start_s = time.perf_counter()

    def after_start(self) -> None:
        pass

    def during(self) -> None:
        pass

    def after_finish(self) -> None:
        self._end_mj = self._source.energy_mj()
        self._end_s = time.perf_counter()

    def get_results(self) -> dict[str, float | tuple[float, ...] | None]:
        return {
            "energy_j": (self._end_mj - self._start_mj) / 1e3,
            "window_s": self._end_s - self._start_s,
        }


class InstantPowerObserver:
    """NVML_FI_DEV_POWER_INSTANT samples taken while the kernels run."""

    def __init__(self, source: PowerSource) -> None:
        self._source = source
        self._samples: list[float] = []

    def before_start(self) -> None:
        self._samples = []

    def after_start(self) -> None:
        pass

    def during(self) -> None:
        sample = self._source.instant_power_w()
        if sample is not None:
            self._samples.append(sample)

    def after_finish(self) -> None:
        pass

    def get_results(self) -> dict[str, float | tuple[float, ...] | None]:
        return {"power_samples_w": tuple(self._samples)}


class ClockTemperatureObserver:
    """Mean SM and memory clocks while running and the temperature at the end of the window."""

    def __init__(self, source: StateSource) -> None:
        self._source = source
        self._clocks: list[float] = []
        self._memory_clocks: list[float] = []
        self._temperature: float | None = None

    def before_start(self) -> None:
        self._clocks = []
        self._memory_clocks = []

    def after_start(self) -> None:
        pass

    def during(self) -> None:
        self._clocks.append(self._source.sm_clock_mhz())
        self._memory_clocks.append(self._source.mem_clock_mhz())

    def after_finish(self) -> None:
        self._temperature = self._source.temperature_c()

    def get_results(self) -> dict[str, float | tuple[float, ...] | None]:
        return {
            "sm_clock_mhz": fmean(self._clocks) if self._clocks else None,
            "mem_clock_mhz": fmean(self._memory_clocks) if self._memory_clocks else None,
            "temperature_c": self._temperature,
        }
