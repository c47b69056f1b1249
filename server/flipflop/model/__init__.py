"""Performance, power and energy model: one prediction per launch configuration and power limit.

See docs/model.md for every equation and constant.
"""

from flipflop.model.candidates import candidate_blocks, power_limit_candidates
from flipflop.model.constants import SECTOR_BYTES
from flipflop.model.performance import DataPathTerms, SharedSiteTerms, SiteTerms, data_path_terms
from flipflop.model.predict import (
    Breakdown,
    PowerBreakdown,
    Prediction,
    PreparedLaunch,
    TimeBreakdown,
    UnlaunchableConfig,
    predict,
    predict_power_limits,
    predict_prepared,
    prepare_launch,
)
from flipflop.model.settings import (
    DEFAULT_SETTINGS,
    GpuSettings,
    SettingsError,
    at_memory_clock,
    check_settings,
)

__all__ = [
    "DEFAULT_SETTINGS",
    "SECTOR_BYTES",
    "Breakdown",
    "DataPathTerms",
    "GpuSettings",
    "PowerBreakdown",
    "Prediction",
    "PreparedLaunch",
    "SettingsError",
    "SharedSiteTerms",
    "SiteTerms",
    "TimeBreakdown",
    "UnlaunchableConfig",
    "at_memory_clock",
    "candidate_blocks",
    "check_settings",
    "data_path_terms",
    "power_limit_candidates",
    "predict",
    "predict_power_limits",
    "predict_prepared",
    "prepare_launch",
]
