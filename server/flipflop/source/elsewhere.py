"""Kernels defined outside the analysed file, in a header it includes: their parameter names.

The PTX names a kernel's parameters `_Z…_param_N`; messages and annotations use the names the
source gives them. A kernel the analysed file only includes has those names in its header,
which the PTX's line information points to.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path

from flipflop.source.model import SourceFile
from flipflop.source.parse import parse_source


def parameter_names(
    file: str | None, kernel: str, parsed: MutableMapping[str, SourceFile | None]
) -> tuple[str, ...]:
    """The parameter names of `kernel` as its definition in `file` spells them (empty when
    the file cannot be read or does not define it). `parsed` keeps each file read once."""
    if not file:
        return ()
    if file not in parsed:
        try:
            text = Path(file).read_text(errors="surrogateescape")
        except OSError:
            parsed[file] = None
        else:
            parsed[file] = parse_source(text)
    source = parsed[file]
    found = source.kernel(kernel) if source is not None else None
    if found is None or any(not p.name for p in found.parameters):
        return ()
    return tuple(p.name for p in found.parameters)
