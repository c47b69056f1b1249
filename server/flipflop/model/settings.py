"""What a tuning run sets on the GPU rather than in the code: a locked core clock, a locked
memory clock, a power limit (Kernel Tuner's `nvml_gr_clock`, `nvml_mem_clock`, `nvml_pwr_limit`).

A locked core clock fixes the clock the SMs run at: compute-bound work takes time ∝ 1/f and the
dynamic power follows f·V(f)² on the profile's voltage curve. It is an upper bound, not a floor:
the board's power limit still holds, so where the power at the locked clock exceeds it the clock
falls below the lock as under any cap. A power limit leaves the clock to GPU Boost, which runs
the highest clock whose power fits. A locked memory clock scales the DRAM bandwidth with it
(bytes per transfer are fixed by the bus). docs/model.md, "Locked clocks and power limits".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flipflop.gpu.profile import GpuProfile
from flipflop.model.dvfs import clock_range_mhz


class SettingsError(ValueError):
    """A clock or power limit the GPU (as its profile describes it) cannot be set to."""


@dataclass(frozen=True)
class GpuSettings:
    core_clock_mhz: float | None = None  # locked graphics clock; None: GPU Boost decides
    memory_clock_mhz: float | None = None  # locked memory clock; None: the default
    power_limit_w: float | None = None  # None: the board's default limit

    @property
    def any(self) -> bool:
        return (self.core_clock_mhz, self.memory_clock_mhz, self.power_limit_w) != (None,) * 3


DEFAULT_SETTINGS = GpuSettings()


def check_settings(profile: GpuProfile, settings: GpuSettings) -> None:
    """SettingsError when `profile` cannot be set so: a clock outside the range its voltage curve
    covers, a memory clock above its own or with none given, a power limit outside the board's
    settable range."""
    clock = settings.core_clock_mhz
    if clock is not None:
        lowest, highest = clock_range_mhz(profile)
        if not lowest <= clock <= highest:
            raise SettingsError(
                f"a locked clock of {clock:g} MHz is outside the clocks the {profile.name} "
                f"profile models ({lowest:.0f}-{highest:.0f} MHz, up to its boost clock)")
    memory = settings.memory_clock_mhz
    if memory is not None:
        if profile.memory_clock_mhz <= 0:
            raise SettingsError(
                f"the {profile.name} profile gives no memory clock, so a locked memory clock "
                "cannot be modelled (give the profile a memory_clock_mhz)")
        if not 0 < memory <= profile.memory_clock_mhz:
            raise SettingsError(
                f"a memory clock of {memory:g} MHz is outside the {profile.name}'s range "
                f"(up to {profile.memory_clock_mhz:.0f} MHz)")
    limit = settings.power_limit_w
    if limit is not None:
        if limit > profile.power_limit_max_w:
            raise SettingsError(
                f"a power limit of {limit:g} W is above the {profile.name}'s maximum of "
                f"{profile.power_limit_max_w:g} W")
        if limit < profile.power_limit_min_w:
            raise SettingsError(
                f"a power limit of {limit:g} W is below the {profile.name}'s minimum of "
                f"{profile.power_limit_min_w:g} W")


def at_memory_clock(profile: GpuProfile, settings: GpuSettings) -> GpuProfile:
    """The profile with its DRAM bandwidth at the locked memory clock (unchanged without one)."""
    memory = settings.memory_clock_mhz
    if memory is None or profile.memory_clock_mhz <= 0 or memory == profile.memory_clock_mhz:
        return profile
    scale = memory / profile.memory_clock_mhz
    return replace(profile, memory_bandwidth_gbs=profile.memory_bandwidth_gbs * scale,
                   dram_peak_bandwidth_gbs=profile.dram_peak_bandwidth_gbs * scale)
