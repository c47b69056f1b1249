"""Messages in the words of the source: PTX spellings replaced by what the source calls them.

The analysis works on PTX, where a kernel's parameters are `_Z…_param_N` and functions carry
mangled names. Whatever a person reads names them as the source does: `K`, `seq_len`,
`reduce<float, 256>`.
"""

from __future__ import annotations

import re

from flipflop.analysis.features import KernelFeatures
from flipflop.toolchain.names import demangle

_MANGLED = re.compile(r"\b_Z\w+")


def source_spelling(text: str, features: KernelFeatures) -> str:
    """`text` with the kernel's PTX parameter names replaced by their source names (where the
    source gives them) and mangled function names by their demangled names, arguments left out."""
    names = dict(zip(features.parameter_names, features.source_parameter_names, strict=False))
    renamed = {ptx: source for ptx, source in names.items() if source}
    if renamed:
        pattern = re.compile("|".join(re.escape(name) for name in
                                      sorted(renamed, key=len, reverse=True)) + r"\b")
        text = pattern.sub(lambda match: renamed[match.group(0)], text)
    return _MANGLED.sub(lambda match: _short(match.group(0)), text)


def _short(mangled: str) -> str:
    """`_Z15reduce_unrolledIiLj256EEvPKT_PS0_j` → `reduce_unrolled<int, 256u>`."""
    spelled = demangle(mangled)
    head = spelled.split("(", 1)[0]
    depth = 0
    start = 0
    for position, character in enumerate(head):
        depth += (character == "<") - (character == ">")
        if depth == 0 and character == " ":
            start = position + 1  # after the return type
    return head[start:] or mangled
