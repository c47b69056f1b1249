"""The front half every analysis shares: compiled PTX → IR → the kernels it holds → features.

The single-launch analysis (`flipflop.pipeline`) and every variant of a search space
(`flipflop.variants.analyze`) read PTX the same way: parse it, name its kernels as the source
spells them, and extract each kernel's features with its parameters named as in the source (a
kernel defined in an included header by that header's names).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from flipflop.analysis import KernelFeatures, extract_features
from flipflop.ir import Module
from flipflop.ptx import parse_ptx
from flipflop.resources import Resources
from flipflop.source.elsewhere import parameter_names
from flipflop.source.model import SourceFile
from flipflop.toolchain.build import KernelInfo, describe_kernels
from flipflop.toolchain.names import kernel_base_name


@dataclass(frozen=True)
class ReadPtx:
    """A module's IR and its kernels in PTX order (with ptxas's resources when given)."""

    module: Module
    kernels: tuple[KernelInfo, ...]


def read_ptx(ptx: str, path: Path, source_text: str,
             resources: dict[str, Resources] | None = None) -> ReadPtx:
    """Parse `ptx` (compiled from `source_text`, the file at `path`) and name its kernels.
    Raises `PtxSyntaxError` for PTX the grammar cannot read."""
    module = parse_ptx(ptx, str(path))
    return ReadPtx(module, describe_kernels(ptx, resources or {}, path, source_text))


def kernel_features(module: Module, info: KernelInfo, source: SourceFile,
                    headers: MutableMapping[str, SourceFile | None]) -> KernelFeatures:
    """The features of one kernel, its parameters named as its definition spells them: in
    `source`, else in the header that defines it (`headers` keeps each header read once)."""
    name = kernel_base_name(info.display_name)
    defined = source.kernel(name)
    names = tuple(p.name for p in defined.parameters) if defined is not None \
        else parameter_names(info.file, name, headers)
    return extract_features(module, info.name, names)
