"""What the user can set for one analysis: command-line flags or editor settings, as one value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flipflop.advice.shortlist import DEFAULT_SHORTLIST_SHARE
from flipflop.launch import Dim3
from flipflop.model.error import DEFAULT_LEVEL, ModelError, model_error
from flipflop.space.problem import LaunchRequest
from flipflop.space.request import SpaceOptions
from flipflop.toolchain import CompileOptions


@dataclass(frozen=True)
class AnalysisOptions:
    """Everything the user can set for one analysis (CLI flags or editor settings)."""

    gpu: str = "rtx3070"
    arch: str | None = None  # default: the GPU profile's architecture
    nvcc_path: str | None = None
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    std: str | None = None
    extra_args: tuple[str, ...] = ()
    compile_commands: Path | None = None
    compile_timeout_s: float = 60.0
    kernel: str | None = None  # mangled or source name; None: every kernel
    grid: Dim3 | None = None
    threads: Dim3 | None = None
    dynamic_smem_bytes: int | None = None
    params: tuple[tuple[str, float], ...] = ()  # source-level or PTX parameter names
    blocks: tuple[Dim3, ...] | None = None
    slack: float = 0.05
    power_limits: bool = False
    shortlist_share: float = DEFAULT_SHORTLIST_SHARE  # of the space worth measuring
    # The level at which a saving must exceed the model's error to change a launch
    # (`flipflop.model.error`); None: decide on the point predictions.
    confidence: float | None = DEFAULT_LEVEL
    # Compile-time tunables (Kernel Tuner semantics); the default asks for none.
    space: SpaceOptions = field(default_factory=SpaceOptions)

    def model_error(self) -> ModelError | None:
        """The model's error at the chosen level, which advice is judged with."""
        return None if self.confidence is None else model_error(self.confidence)

    def launch_request(self) -> LaunchRequest:
        return LaunchRequest(self.grid, self.threads, self.dynamic_smem_bytes, self.params)

    def compile_options(self) -> CompileOptions:
        return CompileOptions(
            include_dirs=self.include_dirs,
            defines=self.defines,
            std=self.std,
            extra_args=self.extra_args,
            compile_commands=self.compile_commands,
            timeout_s=self.compile_timeout_s,
        )
