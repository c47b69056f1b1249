"""A missing `#include`: which header, where nvcc looked, and what provides it.

The preprocessor stops at the first header it cannot find, so its one line is all a user gets,
and on a machine with only the nvcc wheel the usual culprits are the CUDA libraries (cuBLAS,
cuRAND, cuFFT, cuSPARSE) that neither the wheel nor a minimal toolkit ships. This module turns
that line into one diagnostic naming the header, the folders searched, and the remedies.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from flipflop.toolchain.diagnostics import ToolDiagnostic

# gcc: `fatal error: cublas_v2.h: No such file or directory`; clang: `fatal error: 'x.h' file
# not found` (the prefix is already parsed off); EDG (cudafe++): `cannot open source file "x.h"`.
_MISSING = (
    re.compile(r"^(?P<header>[^:]+): No such file or directory$"),
    re.compile(r"^'(?P<header>[^']+)' file not found$"),
    re.compile(r'^cannot open source file "(?P<header>[^"]+)"'),
)


@dataclass(frozen=True)
class Library:
    """A CUDA library whose headers come in their own PyPI wheel and toolkit package."""

    name: str  # as NVIDIA writes it
    stem: str  # the wheel is `nvidia-<stem>` (CUDA 13) or `nvidia-<stem>-cu12`
    prefixes: tuple[str, ...]  # its header names start with one of these

    def wheel(self, cuda_major: int | None) -> str:
        return f"nvidia-{self.stem}-cu12" if cuda_major == 12 else f"nvidia-{self.stem}"

    def toolkit_package(self, cuda_version: str) -> str:
        """NVIDIA's apt package with the headers, e.g. `libcublas-dev-13-0`."""
        parts = cuda_version.split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return f"lib{self.stem}-dev-{parts[0]}-{parts[1]}"
        return f"lib{self.stem}-dev"


# Header lists as shipped in the CUDA 13 wheels (nvidia/cu13/include/...), checked against
# nvidia-cublas 13.10, nvidia-curand 10.4, nvidia-cufft 12.5 and nvidia-cusparse 12.9.
LIBRARIES = (
    Library("cuBLAS", "cublas", ("cublas", "nvblas")),
    Library("cuRAND", "curand", ("curand",)),
    Library("cuFFT", "cufft", ("cufft", "cudalibxt")),
    Library("cuSPARSE", "cusparse", ("cusparse",)),
)


@dataclass(frozen=True)
class HeaderSearch:
    """The folders one compilation searched, in order, for the message."""

    source_dir: Path
    include_dirs: tuple[Path, ...]  # -I from settings, options and compile_commands.json
    toolkit_dirs: tuple[Path, ...]  # nvcc's own
    library_dirs: tuple[Path, ...]  # CUDA library wheels beside FlipFlop (searched last)
    cuda_version: str  # the nvcc's, e.g. "13.0.88"


def missing_header(diagnostic: ToolDiagnostic) -> str | None:
    """The header an error says could not be found, else None."""
    if diagnostic.severity != "error":
        return None
    for pattern in _MISSING:
        match = pattern.match(diagnostic.message)
        if match:
            return match["header"].strip()
    return None


def library_of(header: str) -> Library | None:
    name = Path(header).name
    for library in LIBRARIES:
        if name.startswith(library.prefixes):
            return library
    return None


def explain_missing_headers(
    diagnostics: tuple[ToolDiagnostic, ...], search: HeaderSearch
) -> tuple[ToolDiagnostic, ...]:
    """Each missing header becomes one self-explaining error; the errors after the first missing
    header are dropped, because the preprocessor stopped there and they only follow from it."""
    first = next((i for i, d in enumerate(diagnostics) if missing_header(d) is not None), None)
    if first is None:
        return diagnostics
    explained: dict[str, ToolDiagnostic] = {}
    for diagnostic in diagnostics[first:]:
        header = missing_header(diagnostic)
        if header is not None and header not in explained:
            explained[header] = _explained(diagnostic, header, search)
    later_warnings = [d for d in diagnostics[first:] if d.severity != "error"]
    return (*diagnostics[:first], *explained.values(), *later_warnings)


def _explained(diagnostic: ToolDiagnostic, header: str, search: HeaderSearch) -> ToolDiagnostic:
    where = ""
    if diagnostic.included_from:
        chain = ", ".join(f"{Path(file).name}:{line}" for file, line in diagnostic.included_from)
        at = f"{Path(diagnostic.file or '?').name}:{diagnostic.line}"
        where = f" (#include at {at}, reached from {chain})"
    library = library_of(header)
    major = _major(search.cuda_version)
    parts = [f"{header} not found{where}."]
    if library is not None:
        parts.append(f"It is part of {library.name}, which this CUDA installation lacks.")
    parts.append(f"Searched: {_searched(search)}.")
    remedies = []
    if library is not None:
        remedies.append(
            f"`{sys.executable} -m pip install {library.wheel(major)}` (FlipFlop then finds the"
            " wheel's headers by itself)"
        )
        package = library.toolkit_package(search.cuda_version)
        remedies.append(f"the toolkit's {library.name} ({package} from NVIDIA's repository)")
    remedies.append(
        f"the folder holding {Path(header).name} in the `flipflop.includePaths` setting"
        " (`-I DIR` on the command line)"
    )
    remedies.append(
        "the build's compile_commands.json, which carries its include paths"
        " (`flipflop.compileCommands`, `--compile-commands`)"
    )
    parts.append("To fix, one of: " + "; ".join(remedies) + ".")
    parts.append(
        "nvcc reported nothing else: it stops at the first missing header, so the rest of the"
        " file is checked once the header is found."
    )
    message = " ".join(parts)
    if not diagnostic.included_from:
        return replace(diagnostic, message=message)
    # In a header: placed on the `#include` line of the compiled file that leads to it.
    file, line = diagnostic.included_from[-1]
    return replace(diagnostic, message=message, file=file, line=line, column=None)


def _searched(search: HeaderSearch) -> str:
    places = [f"{search.source_dir} (the file's folder)"]
    places += [str(d) for d in search.include_dirs]
    places += [str(d) for d in search.toolkit_dirs]
    if search.library_dirs:
        places.append("CUDA library wheels: " + ", ".join(str(d) for d in search.library_dirs))
    else:
        places.append("CUDA library wheels beside FlipFlop: none installed")
    places.append("the host compiler's system folders")
    return "; ".join(places)


def _major(version: str) -> int | None:
    head = version.split(".")[0]
    return int(head) if head.isdigit() else None


def library_wheel_include_dirs(
    roots: Sequence[Path], cuda_version: str, own_include: Path | None = None
) -> tuple[Path, ...]:
    """Include folders of CUDA library wheels under `roots` (site-packages) for this CUDA major.

    CUDA 13 wheels share one `nvidia/cu13/include`; CUDA 12 wheels each have
    `nvidia/<library>/include`. `own_include`, the compiler's own folder (the nvcc wheel's), is
    left out: nvcc searches it already.
    """
    major = _major(cuda_version)
    found: list[Path] = []
    for root in roots:
        if major is not None and major >= 13:
            candidates = [root / "nvidia" / f"cu{major}" / "include"]
        elif major == 12:
            candidates = [
                path for path in sorted((root / "nvidia").glob("*/include"))
                if not re.fullmatch(r"cu\d+", path.parent.name)  # a CUDA 13+ tree
            ]
        else:
            candidates = []
        found.extend(path for path in candidates if path.is_dir())
    own = own_include.resolve() if own_include is not None else None
    unique = dict.fromkeys(path.resolve() for path in found)
    return tuple(path for path in unique if path != own)
