"""The advice as JSON objects, as `flipflop analyze --format json` prints them."""

from __future__ import annotations

from typing import Any

from flipflop.advice.advise import Advice
from flipflop.advice.drivers import Driver
from flipflop.advice.select import Recommendation
from flipflop.model import Prediction
from flipflop.model.error import RatioInterval


def _params(prediction: Prediction) -> dict[str, Any]:
    """`"params"` beside `"block"` for a configuration of compile-time tunables."""
    return {"params": dict(prediction.params)} if prediction.params else {}


def _settings(prediction: Prediction) -> dict[str, Any]:
    """The clocks of a configuration that locks them (its nvml_* tunables): the core clock it
    runs at, the locked ones."""
    settings = prediction.settings
    if settings.core_clock_mhz is None and settings.memory_clock_mhz is None:
        return {}
    return {
        "clock_mhz": prediction.clock_mhz,
        "locked_clock_mhz": settings.core_clock_mhz,
        "memory_clock_mhz": settings.memory_clock_mhz,
    }


def prediction_to_json(prediction: Prediction, tie_group: int | None = None) -> dict[str, Any]:
    """One entry of `configs`; `tie_group` (optional) numbers the configurations that tie."""
    entry: dict[str, Any] = {
        "block": list(prediction.block),
        **_params(prediction),
        "power_limit_w": prediction.limit_w,
        **_settings(prediction),
        "active_blocks_per_sm": prediction.active_blocks_per_sm,
        "occupancy": prediction.occupancy,
        "limiter": prediction.limiter,
        "waves": prediction.waves,
        "time_s": prediction.time_s,
        "power_w": prediction.power_w,
        "energy_j": prediction.energy_j,
        "pareto": prediction.pareto,
    }
    if tie_group is not None:
        entry["tie_group"] = tie_group
    return entry


def recommendation_to_json(recommendation: Recommendation) -> dict[str, Any]:
    return {
        "block": list(recommendation.block),
        **_params(recommendation.prediction),
        "power_limit_w": recommendation.prediction.limit_w,
        **_settings(recommendation.prediction),
        "time_s": recommendation.time_s,
        "power_w": recommendation.power_w,
        "energy_j": recommendation.energy_j,
        "energy_saving_vs_current": recommendation.energy_saving_vs_current,
        "energy_saving_vs_occupancy_heuristic": recommendation.energy_saving_vs_occupancy_heuristic,
        "slowdown_vs_fastest": recommendation.slowdown_vs_fastest,
        "reasons": list(recommendation.reasons),
    }


def baseline_to_json(heuristic: Prediction | None) -> dict[str, Any]:
    """The `baseline` object: NVIDIA's occupancy-heuristic choice, null when nothing fits."""
    if heuristic is None:
        return {"occupancy_heuristic": None}
    return {
        "occupancy_heuristic": {
            "block": list(heuristic.block),
            **_params(heuristic),
            "time_s": heuristic.time_s,
            "power_w": heuristic.power_w,
            "energy_j": heuristic.energy_j,
        }
    }


def driver_to_json(driver: Driver) -> dict[str, Any]:
    return {
        "kind": driver.kind,
        "share": driver.share,
        "message": driver.message,
        "lines": list(driver.lines),
    }


def advice_to_json(advice: Advice) -> dict[str, Any]:
    """The advice part of one kernel's object: configs, recommendation, baseline, drivers."""
    return {
        "configs": [prediction_to_json(p, _tie_index(advice, p)) for p in advice.predictions],
        "recommendation": {
            **recommendation_to_json(advice.recommendation),
            "energy_saving_interval": interval_to_json(
                advice.saving_interval, advice.recommendation.energy_saving_vs_current),
            "held_back": advice.held_back,
        },
        "baseline": baseline_to_json(advice.heuristic),
        "drivers": [driver_to_json(d) for d in advice.drivers],
    }


def interval_to_json(interval: RatioInterval | None, saving: float | None
                     ) -> dict[str, Any] | None:
    """The model's error on the recommendation's energy ratio: the ratio's interval, a factor
    of 1 ± `plus_minus` upwards (e^±q), holds the measured ratio with probability `level`; `low`
    and `high` are the saving's interval; null when not judged."""
    if interval is None:
        return None
    low, high = interval.saving_range(saving) if saving is not None else (None, None)
    return {
        "level": interval.level,
        "plus_minus": interval.percent / 100.0,
        "low": low,
        "high": high,
        "pair_kind": interval.kind,  # `block`: only the block differs; `code`: tunables too
        "held_out_coverage": interval.held_out_coverage,
    }


def _tie_index(advice: Advice, prediction: Prediction) -> int | None:
    group = advice.tie_group(prediction)
    return None if group is None else group.index
