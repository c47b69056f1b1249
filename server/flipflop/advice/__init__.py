"""Advice over the model's predictions: Pareto front, recommendation, baseline, energy drivers."""

from flipflop.advice.advise import Advice, Excluded, NoLaunchableConfig, advise
from flipflop.advice.drivers import DRIVER_KINDS, Driver, energy_drivers
from flipflop.advice.pareto import pareto_flags
from flipflop.advice.select import Recommendation
from flipflop.advice.serialize import (
    advice_to_json,
    baseline_to_json,
    driver_to_json,
    prediction_to_json,
    recommendation_to_json,
)

__all__ = [
    "DRIVER_KINDS",
    "Advice",
    "Driver",
    "Excluded",
    "NoLaunchableConfig",
    "Recommendation",
    "advice_to_json",
    "advise",
    "baseline_to_json",
    "driver_to_json",
    "energy_drivers",
    "pareto_flags",
    "prediction_to_json",
    "recommendation_to_json",
]
