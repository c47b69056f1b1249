"""The CUDA toolchain: finding nvcc/ptxas, compiling to PTX, resource usage, kernel names."""

from flipflop.resources import Resources
from flipflop.toolchain.arches import SUPPORTED_ARCHES, ArchError, normalize_arch
from flipflop.toolchain.build import FALLBACK_ARCH, BuildResult, KernelInfo, build
from flipflop.toolchain.compile import (
    DEFAULT_TIMEOUT_S,
    CompileOptions,
    CompileResult,
    compile_to_ptx,
)
from flipflop.toolchain.compile_commands import CompileCommandsError, flags_from_compile_commands
from flipflop.toolchain.diagnostics import ToolDiagnostic
from flipflop.toolchain.discovery import Toolchain, find_toolchain
from flipflop.toolchain.errors import ToolCancelled, ToolchainError, ToolTimeout
from flipflop.toolchain.names import demangle, find_definition_line, kernel_locations
from flipflop.toolchain.ptxas import (
    AssemblyError,
    AssemblyResult,
    assemble,
    parse_ptxas_verbose,
    ptxas_resources,
)

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "FALLBACK_ARCH",
    "SUPPORTED_ARCHES",
    "ArchError",
    "AssemblyError",
    "AssemblyResult",
    "BuildResult",
    "CompileCommandsError",
    "CompileOptions",
    "CompileResult",
    "KernelInfo",
    "Resources",
    "ToolCancelled",
    "ToolDiagnostic",
    "ToolTimeout",
    "Toolchain",
    "ToolchainError",
    "assemble",
    "build",
    "compile_to_ptx",
    "demangle",
    "find_definition_line",
    "find_toolchain",
    "flags_from_compile_commands",
    "kernel_locations",
    "normalize_arch",
    "parse_ptxas_verbose",
    "ptxas_resources",
]
