"""How right the predictions are: the validation metrics (calibration/README.md, "What `validate`
reports"), as pure functions.

One measured file (a FlipFlop measurement file, a Kernel Tuner cache, a T4 file) is scored on the
configurations that were both measured and predicted:

- Spearman ρ of time, power and energy (power and energy where measured);
- regret: the measured value of the predicted best over the measured best, minus one — time for
  the predicted fastest configuration, energy for the recommendation (the lowest predicted energy
  within the slowdown budget);
- top-5% recall of time: the share of the measured fastest 5% inside the predicted fastest 10%;
- hit rate: 1 when the measured optimum (lowest energy where measured, else fastest) is inside
  the recommended set, the shortlist worth measuring (`flipflop.advice.shortlist`), else 0;
  search-space reduction: 1 − |recommended set| / |configurations|; the shortlist's regret: the
  best measured value inside it over the measured best, minus one — what measuring the
  shortlist (Kernel Tuner on it) finds;
- MAPE of time, power and energy.

Two baselines are scored on the same configurations. NVIDIA's occupancy heuristic keeps the most
resident threads per SM, ties to the larger block (`cudaOccupancyMaxPotentialBlockSize`); the
naive one keeps the most threads per block. Neither can tell apart configurations that differ only
in what it does not look at (tile sizes, unrolling), so its regret is the mean over the
configurations it ties on: the expected outcome of its pick.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scipy.stats import spearmanr  # type: ignore[import-untyped]

from flipflop.calibration.bias import ParameterBias, bias_by_parameter, bias_to_json
from flipflop.calibration.scored import ScoredConfig as ScoredConfig  # re-exported: it lived here
from flipflop.model.predict import TimeBreakdown

TOP_MEASURED_SHARE = 0.05
TOP_PREDICTED_SHARE = 0.10


@dataclass(frozen=True)
class Metrics:
    spearman_time: float | None
    spearman_power: float | None
    spearman_energy: float | None
    regret_time: float | None
    regret_energy: float | None
    top5_recall_time: float | None
    hit_rate: float | None
    search_space_reduction: float | None
    mape_time: float | None
    mape_power: float | None
    mape_energy: float | None
    regret_shortlist_time: float | None = None  # best measured time in the shortlist
    regret_shortlist_energy: float | None = None


@dataclass(frozen=True)
class BaselineScores:
    regret_time: float | None
    regret_energy: float | None
    ties: int  # configurations the baseline cannot tell apart at its pick


@dataclass(frozen=True)
class FileValidation:
    """The scores of one measured file (one kernel on one GPU)."""

    file: str
    gpu: str
    kernel: str
    configs: int
    measured: tuple[str, ...]  # "time", and "power", "energy" where measured
    metrics: Metrics
    occupancy_heuristic: BaselineScores
    most_threads: BaselineScores
    pick: str  # the recommendation
    predicted_fastest: str
    measured_best: str  # the measured optimum (energy where measured, else time)
    excluded: int = 0  # measured configurations the prediction could not score
    configurations: tuple[ScoredConfig, ...] = ()  # every scored one, as scored
    # Entries of the file skipped before scoring (failed runs, no time), by reason.
    failed: tuple[tuple[str, int], ...] = ()
    # Where the measured energy and power came from: the observer fields read, or "derived".
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def bias(self) -> tuple[ParameterBias, ...]:
        """The time bias of the predictions per parameter value (`flipflop.calibration.bias`)."""
        return bias_by_parameter(self.configurations)


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's ρ with average ranks for ties; None when either side is constant or < 2."""
    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    rho = float(spearmanr(xs, ys).statistic)
    return None if math.isnan(rho) else rho


def mape(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Mean absolute percentage error, in percent, over pairs with a positive measured value."""
    pairs = [(p, m) for p, m in zip(predicted, measured, strict=True) if m > 0]
    if not pairs:
        return None
    return 100.0 * sum(abs(p - m) / m for p, m in pairs) / len(pairs)


def score_file(
    file: str,
    gpu: str,
    kernel: str,
    configs: Sequence[ScoredConfig],
    pick: str,
    excluded: int = 0,
) -> FileValidation:
    """Every metric of one file; `pick` is the recommendation's label."""
    if not configs:
        raise ValueError(f"{file}: no measured configuration of {kernel} was predicted")
    by_label = {c.label: c for c in configs}
    if pick not in by_label:
        raise ValueError(f"{file}: the recommendation {pick} was not measured")
    has_power = all(c.measured_power_w is not None for c in configs)
    has_energy = all(c.measured_energy_j is not None for c in configs)
    measured = ("time", *(("power",) if has_power else ()), *(("energy",) if has_energy else ()))

    def energy(c: ScoredConfig) -> float:
        return c.measured_energy_j if c.measured_energy_j is not None else math.nan

    def power(c: ScoredConfig) -> float:
        return c.measured_power_w if c.measured_power_w is not None else math.nan

    best_time = min(c.measured_time_s for c in configs)
    best_energy = min(energy(c) for c in configs) if has_energy else None
    fastest = min(configs, key=lambda c: (c.predicted_time_s, c.predicted_energy_j))
    objective: Callable[[ScoredConfig], float] = (
        energy if has_energy else (lambda c: c.measured_time_s)
    )
    optimum = min(configs, key=objective)
    recommended = [c for c in configs if c.recommended] or [by_label[pick]]

    metrics = Metrics(
        spearman_time=spearman([c.predicted_time_s for c in configs],
                               [c.measured_time_s for c in configs]),
        spearman_power=spearman([c.predicted_power_w for c in configs],
                                [power(c) for c in configs]) if has_power else None,
        spearman_energy=spearman([c.predicted_energy_j for c in configs],
                                 [energy(c) for c in configs]) if has_energy else None,
        regret_time=fastest.measured_time_s / best_time - 1.0,
        regret_energy=(
            energy(by_label[pick]) / best_energy - 1.0
            if best_energy is not None and best_energy > 0 else None
        ),
        top5_recall_time=top_recall(
            [c.predicted_time_s for c in configs], [c.measured_time_s for c in configs]
        ),
        hit_rate=1.0 if optimum in recommended else 0.0,
        search_space_reduction=1.0 - len(recommended) / len(configs),
        mape_time=mape([c.predicted_time_s for c in configs],
                       [c.measured_time_s for c in configs]),
        mape_power=mape([c.predicted_power_w for c in configs],
                        [power(c) for c in configs]) if has_power else None,
        mape_energy=mape([c.predicted_energy_j for c in configs],
                         [energy(c) for c in configs]) if has_energy else None,
        regret_shortlist_time=min(c.measured_time_s for c in recommended) / best_time - 1.0,
        regret_shortlist_energy=(
            min(energy(c) for c in recommended) / best_energy - 1.0
            if best_energy is not None and best_energy > 0 else None
        ),
    )
    return FileValidation(
        file=file,
        gpu=gpu,
        kernel=kernel,
        configs=len(configs),
        measured=measured,
        metrics=metrics,
        occupancy_heuristic=_baseline(
            configs, lambda c: (c.resident_threads, c.threads_per_block), best_time, best_energy
        ),
        most_threads=_baseline(configs, lambda c: (c.threads_per_block, 0), best_time,
                               best_energy),
        pick=pick,
        predicted_fastest=fastest.label,
        measured_best=optimum.label,
        excluded=excluded,
        configurations=tuple(configs),
    )


def top_recall(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Share of the measured lowest 5% that is inside the predicted lowest 10% (at least one
    configuration each)."""
    count = len(measured)
    if count == 0:
        return None
    top_measured = _lowest(measured, max(1, math.ceil(TOP_MEASURED_SHARE * count)))
    top_predicted = _lowest(predicted, max(1, math.ceil(TOP_PREDICTED_SHARE * count)))
    return len(top_measured & top_predicted) / len(top_measured)


def _lowest(values: Sequence[float], count: int) -> set[int]:
    return set(sorted(range(len(values)), key=lambda i: (values[i], i))[:count])


def _baseline(
    configs: Sequence[ScoredConfig],
    preference: Callable[[ScoredConfig], tuple[int, int]],
    best_time: float,
    best_energy: float | None,
) -> BaselineScores:
    top = max(preference(c) for c in configs)
    tied = [c for c in configs if preference(c) == top]
    regret_time = sum(c.measured_time_s for c in tied) / len(tied) / best_time - 1.0
    regret_energy = None
    if best_energy is not None and best_energy > 0:
        energies = [c.measured_energy_j or 0.0 for c in tied]
        regret_energy = sum(energies) / len(energies) / best_energy - 1.0
    return BaselineScores(regret_time, regret_energy, len(tied))


def validation_to_json(result: FileValidation) -> dict[str, object]:
    """The object `flipflop validate --format json` prints per file."""
    m = result.metrics
    return {
        "file": result.file,
        "gpu": result.gpu,
        "kernel": result.kernel,
        "configs": result.configs,
        "measured": list(result.measured),
        "metrics": {
            "spearman_time": m.spearman_time,
            "spearman_power": m.spearman_power,
            "spearman_energy": m.spearman_energy,
            "regret_time": m.regret_time,
            "regret_energy": m.regret_energy,
            "top5_recall_time": m.top5_recall_time,
            "hit_rate": m.hit_rate,
            "search_space_reduction": m.search_space_reduction,
            "mape_time": m.mape_time,
            "mape_power": m.mape_power,
            "mape_energy": m.mape_energy,
            "regret_shortlist_time": m.regret_shortlist_time,
            "regret_shortlist_energy": m.regret_shortlist_energy,
        },
        "baselines": {
            name: {"regret_time": b.regret_time, "regret_energy": b.regret_energy,
                   "ties": b.ties}
            for name, b in (("occupancy_heuristic", result.occupancy_heuristic),
                            ("most_threads", result.most_threads))
        },
        "pick": result.pick,
        "predicted_fastest": result.predicted_fastest,
        "measured_best": result.measured_best,
        "excluded": result.excluded,
        "failed": dict(result.failed),
        "measured_from": dict(result.sources),
        "bias_by_parameter": bias_to_json(result.bias),
        "configurations": [_configuration_json(c) for c in result.configurations],
    }


def _configuration_json(config: ScoredConfig) -> dict[str, object]:
    return {
        "label": config.label,
        "parameters": dict(config.parameters),
        "measured_time_s": config.measured_time_s,
        "predicted_time_s": config.predicted_time_s,
        "measured_energy_j": config.measured_energy_j,
        "predicted_energy_j": config.predicted_energy_j,
        "bound": config.bound,
        "predicted_time_parts_s": dict(config.time_parts),
        "active_blocks_per_sm": config.active_blocks_per_sm,
        "recommended": config.recommended,
    }


def time_parts(breakdown: TimeBreakdown) -> tuple[tuple[str, float], ...]:
    """The terms of a predicted time worth showing: every pipeline that does work, DRAM, the
    working warp's chain (with its barrier part), the partial last wave and the launch."""
    # The shared-memory banks are a unit of their own, kept apart from `compute_s`.
    units = (*breakdown.compute_s, ("shared", breakdown.shared_s))
    pipes = tuple((name, seconds) for name, seconds in units if seconds > 0.0)
    return (*pipes, ("dram", breakdown.dram_s), ("latency", breakdown.latency_s),
            ("barrier", breakdown.barrier_s), ("tail", breakdown.tail_s),
            ("launch", breakdown.launch_s))
