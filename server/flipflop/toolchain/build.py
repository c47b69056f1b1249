"""One call from CUDA source to everything the analysis needs from the toolchain."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from flipflop.resources import Resources
from flipflop.toolchain.compile import (
    DEFAULT_OPTIONS,
    CompileOptions,
    CompileResult,
    compile_to_ptx,
    effective_flags,
    read_source,
)
from flipflop.toolchain.diagnostics import ToolDiagnostic
from flipflop.toolchain.discovery import Toolchain, find_toolchain
from flipflop.toolchain.names import (
    demangle,
    entry_names,
    find_definition_line,
    kernel_base_name,
    kernel_locations,
)
from flipflop.toolchain.ptxas import AssemblyResult, assemble

# Used when neither the caller nor compile_commands.json names an architecture: the oldest
# architecture that has cp.async and bf16 tensor cores, which most current code assumes.
FALLBACK_ARCH = "sm_80"


@dataclass(frozen=True)
class KernelInfo:
    """A kernel as the user knows it, with ptxas's resource usage when it assembled."""

    name: str  # mangled, as in PTX
    display_name: str  # demangled
    file: str | None
    line: int | None  # 1-based line of the definition
    resources: Resources | None


@dataclass(frozen=True)
class BuildResult:
    """PTX, kernels and every message of nvcc and ptxas for one source."""

    compile: CompileResult
    assembly: AssemblyResult | None  # None when nvcc failed
    kernels: tuple[KernelInfo, ...]

    @property
    def ptx(self) -> str:
        return self.compile.ptx

    @property
    def ok(self) -> bool:
        return self.compile.ok and self.assembly is not None and self.assembly.ok

    @property
    def diagnostics(self) -> tuple[ToolDiagnostic, ...]:
        extra = self.assembly.diagnostics if self.assembly is not None else ()
        return self.compile.diagnostics + extra


def build(
    path: Path,
    text: str | None = None,
    options: CompileOptions = DEFAULT_OPTIONS,
    arch: str | None = None,
    toolchain: Toolchain | None = None,
    cancel: threading.Event | None = None,
) -> BuildResult:
    """Compile `text` (or the saved file) to PTX, assemble it with `ptxas -v`, name the kernels.

    Raises `ToolchainError` when nvcc/ptxas are missing, hang or are cancelled; errors in the
    user's code come back as diagnostics. Nothing is cached.
    """
    tools = toolchain or find_toolchain()
    source_text = text if text is not None else read_source(path)
    target = arch or _arch_from_options(path, options) or FALLBACK_ARCH
    compiled = compile_to_ptx(path, source_text, tools, target, options, cancel)
    if not compiled.ok:
        return BuildResult(compile=compiled, assembly=None, kernels=())
    assembled = assemble(compiled.ptx, compiled.arch, tools, options.timeout_s, cancel)
    return BuildResult(
        compile=compiled,
        assembly=assembled,
        kernels=describe_kernels(compiled.ptx, assembled.resources, path, source_text),
    )


def describe_kernels(
    ptx_text: str, resources: dict[str, Resources], path: Path, source_text: str
) -> tuple[KernelInfo, ...]:
    """Display name and definition line of every kernel in the PTX, in PTX order."""
    locations = kernel_locations(ptx_text)
    kernels: list[KernelInfo] = []
    for name in entry_names(ptx_text):
        display = demangle(name)
        location = locations.get(name)
        file: str | None = location.file if location else None
        line: int | None = location.line if location else None
        if location is None:
            line = find_definition_line(source_text, kernel_base_name(display))
            file = str(path.absolute()) if line is not None else None
        kernels.append(KernelInfo(name, display, file, line, resources.get(name)))
    return tuple(kernels)


def _arch_from_options(path: Path, options: CompileOptions) -> str | None:
    return effective_flags(path.absolute(), options).arch
