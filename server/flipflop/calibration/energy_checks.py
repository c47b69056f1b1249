"""Energy against the meters, beyond ρ and MAPE: the clock each configuration should run at, and
the energy–time trade-off as a front.

- Energy-optimal clock: for each code configuration measured at several locked clocks (a
  `nvml_gr_clock` tunable), the clock of lowest measured energy against the clock of lowest
  predicted energy, as steps apart on the measured clock list: 0 is exact, 1 is the neighbouring
  clock.
- Fronts: the measured energy–time Pareto front against the predicted one, as the share of the
  measured front's configurations the predicted front holds (recall) and the share of the
  predicted front that is on the measured one (precision).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class EnergyPoint:
    """One measured configuration: its tunables other than the clock, its clock, both sides."""

    code: tuple[tuple[str, str], ...]
    clock_mhz: float | None
    predicted_time_s: float
    measured_time_s: float
    predicted_energy_j: float
    measured_energy_j: float


@dataclass(frozen=True)
class ClockAgreement:
    configurations: int  # code configurations measured at two clocks or more
    exact: int  # predicted energy-optimal clock = measured
    within_one_step: int
    # The measured energy at the predicted clock over that at the measured best clock, minus
    # one: what following the prediction costs, median over configurations.
    median_energy_regret: float


@dataclass(frozen=True)
class FrontAgreement:
    measured_front: int
    predicted_front: int
    common: int

    @property
    def recall(self) -> float:
        return self.common / self.measured_front if self.measured_front else 0.0

    @property
    def precision(self) -> float:
        return self.common / self.predicted_front if self.predicted_front else 0.0


def clock_agreement(points: Sequence[EnergyPoint]) -> ClockAgreement | None:
    """The energy-optimal clock per code configuration, predicted against measured; None when
    no configuration was measured at two clocks."""
    by_code: dict[tuple[tuple[str, str], ...], list[EnergyPoint]] = {}
    for point in points:
        if point.clock_mhz is not None:
            by_code.setdefault(point.code, []).append(point)
    clocks = sorted({p.clock_mhz for p in points if p.clock_mhz is not None})
    step = {clock: position for position, clock in enumerate(clocks)}
    exact = near = 0
    regrets = []
    counted = 0
    for runs in by_code.values():
        if len(runs) < 2:
            continue
        counted += 1
        measured_best = min(runs, key=lambda p: p.measured_energy_j)
        predicted_best = min(runs, key=lambda p: p.predicted_energy_j)
        assert measured_best.clock_mhz is not None and predicted_best.clock_mhz is not None
        apart = abs(step[measured_best.clock_mhz] - step[predicted_best.clock_mhz])
        exact += apart == 0
        near += apart <= 1
        regrets.append(predicted_best.measured_energy_j / measured_best.measured_energy_j - 1.0)
    if not counted:
        return None
    regrets.sort()
    middle = len(regrets) // 2
    median = (regrets[middle] if len(regrets) % 2
              else (regrets[middle - 1] + regrets[middle]) / 2.0)
    return ClockAgreement(counted, exact, near, median)


def pareto_positions(times: Sequence[float], energies: Sequence[float]) -> set[int]:
    """Positions on the time–energy Pareto front (no other position is at most as slow and at
    most as costly, and better in one)."""
    order = sorted(range(len(times)), key=lambda i: (times[i], energies[i]))
    front: set[int] = set()
    lowest = float("inf")
    for position in order:
        if energies[position] < lowest:
            front.add(position)
            lowest = energies[position]
    return front


def front_agreement(points: Sequence[EnergyPoint]) -> FrontAgreement:
    measured = pareto_positions([p.measured_time_s for p in points],
                                [p.measured_energy_j for p in points])
    predicted = pareto_positions([p.predicted_time_s for p in points],
                                 [p.predicted_energy_j for p in points])
    return FrontAgreement(len(measured), len(predicted), len(measured & predicted))
