"""What a launch covers: the distinct bytes of global memory it writes and reads.

With a fixed grid the block decides how much gets done, so a cheaper block shape is only a
cheaper way to do the same job if it writes the same output and reads all of the input. Counting
instructions, shared-memory traffic or shuffles would call a narrower block "less work" when it
only skips redundant reduction steps, so coverage counts distinct global bytes instead:

- a site whose address is the same for every thread of the block (`out[blockIdx.x]` written by
  thread 0, a parameter read by all) covers what one executing thread touches, once per block;
- any other site covers what every executing thread touches (each lane its own address).
"""

from __future__ import annotations

from dataclasses import dataclass

from flipflop.analysis.work import SiteWork, ThreadWork
from flipflop.launch import LaunchShape

_GLOBAL = frozenset({"global", "generic", "tex"})


@dataclass(frozen=True)
class Coverage:
    written_bytes: float  # distinct global bytes stored by the launch
    read_bytes: float  # distinct global bytes loaded by the launch


def coverage(work: ThreadWork, shape: LaunchShape) -> Coverage:
    written = read = 0.0
    for site in work.sites:
        if site.space not in _GLOBAL:
            continue
        covered = _distinct_bytes(site, shape)
        if site.is_store:
            written += covered
        else:
            read += covered
    return Coverage(written, read)


def _distinct_bytes(site: SiteWork, shape: LaunchShape) -> float:
    if site.pattern != "uniform" or site.guard_fraction <= 0.0:
        return site.bytes_requested * shape.threads  # every execution by every launched thread
    # What one executing thread touches (the guards divided out), once per block: it does not
    # depend on how many threads pass the guards, as long as one does.
    return site.bytes_requested / site.guard_fraction * shape.blocks
