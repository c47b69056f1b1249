"""The catalogue of findings: stable codes shared by the language server, SARIF and the docs.

Each rule has a page `docs/rules/<code>.md` with a bad and a good example.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "information", "hint"]

DOCS_BASE = "https://github.com/flipflop-energy/flipflop/blob/main/docs/rules/"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str

    @property
    def href(self) -> str:
        return f"{DOCS_BASE}{self.code}.md"


RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule("FF001", "launch-off-pareto-front", "warning",
             "The launch configuration is off the energy/time Pareto front."),
        Rule("FF002", "costly-launch-bounds", "warning",
             "__launch_bounds__ forces a configuration that costs energy."),
        Rule("FF003", "register-spills", "warning",
             "Registers spill to local memory."),
        Rule("FF004", "uncoalesced-access", "warning",
             "Global memory access that is strided or data-dependent moves extra sectors."),
        Rule("FF005", "shared-bank-conflicts", "warning",
             "Shared-memory accesses conflict on banks and are replayed."),
        Rule("FF006", "idle-lanes", "warning",
             "Launched threads that skip the work still hold SM resources and draw power."),
        Rule("FF007", "occupancy-limiter", "information",
             "A resource limits how many warps an SM holds."),
        Rule("FF008", "tail-effect", "information",
             "The last wave of blocks leaves SMs idle."),
        Rule("FF009", "compiler-message", "error",
             "nvcc, cudafe++ or ptxas reported an error or warning."),
        Rule("FF010", "toolchain-unavailable", "error",
             "The CUDA toolchain is missing, failed or timed out."),
        Rule("FF011", "thread-divergence", "information",
             "A branch depends on the thread index, so warps diverge."),
        Rule("FF012", "recommendation-rests-on-guess", "information",
             "The recommendation changes if an input FlipFlop had to guess is 4× off."),
        Rule("FF013", "tunables-off-pareto-front", "warning",
             "The default values of compile-time tunables are off the energy/time Pareto "
             "front of their search space."),
        Rule("FF014", "block-shape-contradicts-code", "warning",
             "A launch or an annotation uses a block shape the kernel's code does not support."),
    )
}  # fmt: skip
