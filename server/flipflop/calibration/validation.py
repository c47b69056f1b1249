"""How right the predictions are: the validation metrics of DESIGN.md §3, as pure functions.

For one kernel, the predicted configurations are matched to the measured ones by block shape
(power-capped predictions are left out: measurements never change the power limit). Measured
energy is board energy per launch (idle included), the same quantity the power model predicts.
NVIDIA's occupancy heuristic is scored on the same data: its pick and, where an order of the
candidates is known (most resident threads first, ties to the larger block), its rank correlation;
it predicts no times or powers, so its errors are reported as absent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import spearmanr  # type: ignore[import-untyped]

from flipflop.calibration.records import MeasurementSet
from flipflop.launch import Dim3


@dataclass(frozen=True)
class PredictedConfig:
    block: Dim3
    time_s: float
    power_w: float
    energy_j: float


@dataclass(frozen=True)
class KernelPrediction:
    """What the model says about one kernel's candidates, reduced to what validation needs."""

    configs: tuple[PredictedConfig, ...]
    recommendation: Dim3
    recommended_set: tuple[Dim3, ...]
    heuristic: Dim3 | None = None
    heuristic_order: tuple[Dim3, ...] = ()  # the heuristic's preference, best first


@dataclass(frozen=True)
class MethodScores:
    """One method's figures on one kernel (None: not defined for this method or data)."""

    pick: Dim3 | None
    spearman_energy: float | None
    spearman_time: float | None
    energy_regret: float | None  # measured energy of the pick / best measured − 1
    hit: bool | None  # the measured energy optimum is inside the recommended set
    search_space_reduction: float | None  # 1 − |recommended| / |candidates|
    mape_time: float | None  # percent
    mape_power: float | None
    mape_energy: float | None


@dataclass(frozen=True)
class KernelValidation:
    kernel: str
    file: str
    device: str
    candidates: int
    measured_best: Dim3
    flipflop: MethodScores
    heuristic: MethodScores


@dataclass(frozen=True)
class ValidationSummary:
    """Means over kernels (hit rate: fraction of kernels whose optimum was in the set)."""

    kernels: tuple[KernelValidation, ...]
    flipflop: MethodScores  # means; `hit` unset, see the hit rates
    heuristic: MethodScores
    flipflop_hit_rate: float | None
    heuristic_hit_rate: float | None


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


def _regret(pick: Dim3 | None, energy: dict[Dim3, float]) -> float | None:
    if pick is None or pick not in energy:
        return None
    return energy[pick] / min(energy.values()) - 1.0


def validation_metrics(measured: MeasurementSet, predicted: KernelPrediction) -> KernelValidation:
    """Score the model and the occupancy heuristic on one kernel's measured configurations."""
    by_block = {c.block: c for c in predicted.configs}
    common = [m for m in measured.configs if m.block in by_block]
    if not common:
        raise ValueError(
            f"{measured.file}: no measured block shape of kernel {measured.kernel} was predicted"
        )
    pred = [by_block[m.block] for m in common]
    energy = {m.block: m.energy_j for m in common}
    best = min(common, key=lambda m: m.energy_j).block
    candidates = len(common)
    recommended = {b for b in predicted.recommended_set if b in energy} or {
        predicted.recommendation
    }

    ours = MethodScores(
        pick=predicted.recommendation,
        spearman_energy=spearman([p.energy_j for p in pred], [m.energy_j for m in common]),
        spearman_time=spearman([p.time_s for p in pred], [m.time_s for m in common]),
        energy_regret=_regret(predicted.recommendation, energy),
        hit=best in recommended,
        search_space_reduction=1.0 - len(recommended) / candidates,
        mape_time=mape([p.time_s for p in pred], [m.time_s for m in common]),
        mape_power=mape([p.power_w for p in pred], [m.power_w for m in common]),
        mape_energy=mape([p.energy_j for p in pred], [m.energy_j for m in common]),
    )

    position = {b: i for i, b in enumerate(predicted.heuristic_order)}
    ranked = [m for m in common if m.block in position]
    ranked_ok = len(ranked) == len(common)
    heuristic = MethodScores(
        pick=predicted.heuristic,
        spearman_energy=(
            spearman([position[m.block] for m in ranked], [m.energy_j for m in ranked])
            if ranked_ok else None
        ),
        spearman_time=(
            spearman([position[m.block] for m in ranked], [m.time_s for m in ranked])
            if ranked_ok else None
        ),
        energy_regret=_regret(predicted.heuristic, energy),
        hit=None if predicted.heuristic is None else predicted.heuristic == best,
        search_space_reduction=None if predicted.heuristic is None else 1.0 - 1.0 / candidates,
        mape_time=None,
        mape_power=None,
        mape_energy=None,
    )
    return KernelValidation(
        kernel=measured.kernel,
        file=measured.file,
        device=measured.device.name,
        candidates=candidates,
        measured_best=best,
        flipflop=ours,
        heuristic=heuristic,
    )


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _hit_rate(values: Sequence[bool | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(1.0 for v in present if v) / len(present) if present else None


def _summarize(scores: Sequence[MethodScores]) -> MethodScores:
    return MethodScores(
        pick=None,
        spearman_energy=_mean([s.spearman_energy for s in scores]),
        spearman_time=_mean([s.spearman_time for s in scores]),
        energy_regret=_mean([s.energy_regret for s in scores]),
        hit=None,
        search_space_reduction=_mean([s.search_space_reduction for s in scores]),
        mape_time=_mean([s.mape_time for s in scores]),
        mape_power=_mean([s.mape_power for s in scores]),
        mape_energy=_mean([s.mape_energy for s in scores]),
    )


def summarize(kernels: Sequence[KernelValidation]) -> ValidationSummary:
    return ValidationSummary(
        kernels=tuple(kernels),
        flipflop=_summarize([k.flipflop for k in kernels]),
        heuristic=_summarize([k.heuristic for k in kernels]),
        flipflop_hit_rate=_hit_rate([k.flipflop.hit for k in kernels]),
        heuristic_hit_rate=_hit_rate([k.heuristic.hit for k in kernels]),
    )


def heuristic_order(
    blocks: Sequence[Dim3], resident_threads: Sequence[int]
) -> tuple[Dim3, ...]:
    """cudaOccupancyMaxPotentialBlockSize's preference: most resident threads, ties to larger."""
    keyed = sorted(
        zip(blocks, resident_threads, strict=True),
        key=lambda pair: (-pair[1], -(pair[0][0] * pair[0][1] * pair[0][2])),
    )
    return tuple(b for b, _ in keyed)
