"""Which profile id a measured device goes by: the shipped profile with the same name, else a
slug of the name (e.g. "NVIDIA H200" → "h200"), used for calibration/data/<gpu-id>/."""

from __future__ import annotations

import re

from flipflop.gpu.profiles import list_profiles


def device_slug(name: str) -> str:
    lowered = re.sub(r"^nvidia\s+", "", name.strip().lower())
    return re.sub(r"[^a-z0-9]+", "-", lowered).strip("-") or "gpu"


def profile_id_for_device(name: str) -> str:
    for profile in list_profiles():
        if profile.name.lower() == name.strip().lower():
            return profile.id
    return device_slug(name)


if __name__ == "__main__":
    import sys

    print(profile_id_for_device(" ".join(sys.argv[1:])))
