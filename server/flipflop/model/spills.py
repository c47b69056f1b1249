"""Register spills: local-memory traffic that ptxas adds and the PTX does not show.

`ptxas -v` reports the bytes of spill stores and loads in the code (a static count: each spill
instruction once). How often they run is not reported; they sit where register pressure peaks,
in the hot loop as often as not, so each is taken to run as often as the kernel's average
instruction (dynamic ÷ static PTX instruction count). A modelling assumption, stated in
docs/model.md; the traffic is local memory, coalesced per warp (local memory is interleaved by
thread), served like other local accesses.
"""

from __future__ import annotations

from dataclasses import replace

from flipflop.analysis.work import ThreadWork
from flipflop.resources import Resources


def spill_bytes_per_thread(work: ThreadWork, resources: Resources) -> float:
    """Dynamic bytes of spill stores and loads per launched thread."""
    static = resources.spill_store_bytes + resources.spill_load_bytes
    if static <= 0 or work.static_instructions <= 0.0:
        return 0.0
    return static * work.instructions / work.static_instructions


def with_spills(work: ThreadWork, resources: Resources) -> ThreadWork:
    """The work with the spill traffic added to its local-memory bytes."""
    spilled = spill_bytes_per_thread(work, resources)
    if spilled <= 0.0:
        return work
    return replace(work, local_bytes=work.local_bytes + spilled)
