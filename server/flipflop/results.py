"""What an analysis finds, as plain immutable data: one report per launch of a kernel, one per
kernel, one per file (`flipflop.pipeline.analyze` builds them; reports, findings and the
language server read them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flipflop.advice import Advice
from flipflop.advice.assumptions import (
    Influence,
    block_unknown_because,
    size_unknown_because,
)
from flipflop.analysis import KernelFeatures
from flipflop.constraints import BlockConstraints
from flipflop.gpu.profile import GpuProfile
from flipflop.ir import Module
from flipflop.launch import Dim3, ProblemSize
from flipflop.resources import Resources
from flipflop.source.model import Kernel as SourceKernel
from flipflop.source.model import LaunchSite, SourceFile
from flipflop.space.problem import ProblemOrigin
from flipflop.toolchain import KernelInfo, Toolchain, ToolDiagnostic
from flipflop.tuning import SpaceReport


@dataclass(frozen=True)
class LaunchReport:
    """The advice for one launch of a kernel (one launch site, or the problem the user gave)."""

    site: LaunchSite | None
    problem: ProblemSize
    problem_origin: ProblemOrigin
    current_block: Dim3 | None
    dynamic_smem_bytes: int
    params: tuple[tuple[str, float], ...]  # PTX parameter names → values used
    advice: Advice
    # The same search without the kernel's launch bounds, when it has some: what they cost.
    unbounded: Advice | None = None
    # The inputs that were guessed, the one the recommendation rests on most first.
    assumptions: tuple[Influence, ...] = ()
    # The search space of compile-time tunables, when the configurations are variants.
    space: SpaceReport | None = None

    @property
    def size_assumed(self) -> bool:
        """The problem size is the documented default: absolute time, energy and traffic hold
        for that size only."""
        return self.problem_origin == "default"

    @property
    def size_unknown_because(self) -> str:
        return size_unknown_because(self.site)

    @property
    def block_unknown_because(self) -> str | None:
        return block_unknown_because(self.site, self.current_block)


@dataclass(frozen=True)
class KernelReport:
    info: KernelInfo
    resources: Resources
    features: KernelFeatures
    source_kernel: SourceKernel | None
    launches: tuple[LaunchReport, ...]  # at least one
    # What the kernel's code needs of its block, before any launch (`flipflop.constraints`);
    # each launch's advice holds them resolved at that launch.
    constraints: BlockConstraints = field(default_factory=BlockConstraints)

    @property
    def primary(self) -> LaunchReport:
        return self.launches[0]


@dataclass(frozen=True)
class AnalysisResult:
    path: Path
    profile: GpuProfile
    toolchain: Toolchain
    arch: str
    # Every message of nvcc and ptxas (of the configuration that stands for a search space).
    diagnostics: tuple[ToolDiagnostic, ...]
    compiled: bool  # the source compiled (a search space: some configuration did)
    source: SourceFile
    module: Module | None
    kernels: tuple[KernelReport, ...]
    notes: tuple[str, ...] = field(default=())  # why a kernel was skipped, etc.

    @property
    def failed(self) -> bool:
        """The source did not compile (a search space fails only when no variant compiles)."""
        return not self.kernels and not self.compiled
