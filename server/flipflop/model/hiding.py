"""Latency hiding: how much of a wave's throughput bound its resident warps reach.

A warp scheduler issues in a cycle when at least one of its warps has an instruction ready.
Alone, a warp needs `L` cycles (its dependent chain, `LaunchCost.path_cycles`) for work that
keeps its scheduler's busiest unit occupied `U / W` of them (`U`: the unit's cycles for all the
work on the SM, spread over its schedulers; `W`: warps per scheduler), so it is ready a share
`r = U / (W · L)` of the time. With the warps' stalls taken as independent of each other, the
unit idles only when every warp waits:

    utilization = 1 − (1 − r)^W          T = U / utilization

the independent-threads form of the multithreaded-processor utilization models (Saavedra-Barrera,
Culler and von Eicken, "Analysis of multithreaded architectures for parallel computing", SPAA
1990: a linear regime, utilization ≈ W · r, and saturation, utilization → 1). It keeps both
bounds, `T ≥ U` and `T ≥ L` (one warp: `T = L`), and adds what `max(U, L)` leaves out: warps
whose stalls coincide. Where `U` and `L` are close the unit idles a share `≈ e^(−U/L)` of the
time (37% at `U = L`, 2% at `U = 4L`), which is why a configuration whose chain is half its
throughput bound runs slower than one whose chain is a third of it, though `max` costs both at
`U`.
"""

from __future__ import annotations

from math import expm1 as _expm1
from math import log1p as _log1p


def overlapped_s(throughput_s: float, latency_s: float, warps_per_scheduler: float) -> float:
    """Time of work that needs `throughput_s` of its busiest unit when `warps_per_scheduler`
    warps, each with a dependent chain of `latency_s`, share each scheduler (module docstring).
    Fewer warps than schedulers count as one: a scheduler's lone warp walks its chain."""
    if throughput_s <= 0.0 or latency_s <= 0.0:
        return throughput_s if throughput_s > latency_s else latency_s
    warps = warps_per_scheduler if warps_per_scheduler > 1.0 else 1.0
    ready = throughput_s / (warps * latency_s)
    # Idle share (1 − r)^W ≤ e^(−rW): below 1e-12 it changes nothing a float can hold.
    if ready >= 1.0 or ready * warps > 28.0:
        return throughput_s
    # 1 − (1 − r)^W, accurate however small r is.
    return throughput_s / -_expm1(warps * _log1p(-ready))
