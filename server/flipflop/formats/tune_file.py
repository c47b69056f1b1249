"""`--tune-file SPACE.json`: tunables from a Kernel Tuner `tune_params` dictionary.

The file holds the dictionary itself (`{"block_size_x": [32, 64], ...}`), or an object with a
`tune_params` member: a Kernel Tuner cache or a file written by `--emit-kernel-tuner`.
"""

from __future__ import annotations

from pathlib import Path

from flipflop.formats.errors import FormatError
from flipflop.formats.files import describe_json, read_json
from flipflop.space.errors import SpaceError
from flipflop.space.tunables import Tunable, tunables_from_tune_params


def read_tune_file(path: str | Path) -> tuple[Tunable, ...]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError(path, f"expected an object of tunable parameters, found "
                                f"{describe_json(data)}")
    tune_params = data.get("tune_params") if isinstance(data.get("tune_params"), dict) else data
    try:
        tunables = tunables_from_tune_params(tune_params)
    except SpaceError as error:
        raise FormatError(path, str(error)) from None
    if not tunables:
        raise FormatError(path, "no tunable parameters")
    return tunables
