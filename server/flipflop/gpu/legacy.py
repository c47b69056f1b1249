"""GPUs older than Turing, which nvcc 13 cannot compile for, recognised by their common names.

CUDA 13.0 removed the Maxwell, Pascal and Volta targets (compute capability 5.0 to 7.2):
`nvcc --list-gpu-arch` of CUDA 13.0 starts at compute_75. FlipFlop compiles every kernel for the
GPU it models, so it ships no profile for these GPUs; naming one (`--gpu v100`) should say why
instead of "unknown GPU". Compute capabilities: CUDA C++ Programming Guide, "CUDA-Enabled GPUs".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OLDEST_SUPPORTED = (7, 5)

_FAMILIES = {5: "Maxwell", 6: "Pascal", 7: "Volta"}

# (name as NVIDIA writes it, compute capabilities; a name used for two GPUs has both).
_GPUS: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = (
    ("Tesla V100", ((7, 0),)),
    ("Tesla V100S", ((7, 0),)),
    ("TITAN V", ((7, 0),)),
    ("Quadro GV100", ((7, 0),)),
    ("Jetson AGX Xavier", ((7, 2),)),
    ("Jetson Xavier NX", ((7, 2),)),
    ("Tesla P100", ((6, 0),)),
    ("Quadro GP100", ((6, 0),)),
    ("Tesla P40", ((6, 1),)),
    ("Tesla P6", ((6, 1),)),
    ("Tesla P4", ((6, 1),)),
    ("TITAN Xp", ((6, 1),)),
    ("TITAN X (Pascal)", ((6, 1),)),
    ("TITAN X", ((5, 2), (6, 1))),  # GeForce GTX TITAN X (Maxwell) and NVIDIA TITAN X (Pascal)
    ("GeForce GTX 1080 Ti", ((6, 1),)),
    ("GeForce GTX 1080", ((6, 1),)),
    ("GeForce GTX 1070 Ti", ((6, 1),)),
    ("GeForce GTX 1070", ((6, 1),)),
    ("GeForce GTX 1060", ((6, 1),)),
    ("GeForce GTX 1050 Ti", ((6, 1),)),
    ("GeForce GTX 1050", ((6, 1),)),
    ("GeForce GT 1030", ((6, 1),)),
    ("Quadro P6000", ((6, 1),)),
    ("Quadro P5000", ((6, 1),)),
    ("Quadro P4000", ((6, 1),)),
    ("Quadro P2200", ((6, 1),)),
    ("Quadro P2000", ((6, 1),)),
    ("Quadro P1000", ((6, 1),)),
    ("Quadro P620", ((6, 1),)),
    ("Quadro P600", ((6, 1),)),
    ("Quadro P400", ((6, 1),)),
    ("Jetson TX2", ((6, 2),)),
    ("Tesla M60", ((5, 2),)),
    ("Tesla M40", ((5, 2),)),
    ("Tesla M6", ((5, 2),)),
    ("Tesla M4", ((5, 2),)),
    ("Quadro M6000", ((5, 2),)),
    ("Quadro M5000", ((5, 2),)),
    ("Quadro M4000", ((5, 2),)),
    ("Quadro M2000", ((5, 2),)),
    ("GeForce GTX 980 Ti", ((5, 2),)),
    ("GeForce GTX 980", ((5, 2),)),
    ("GeForce GTX 970", ((5, 2),)),
    ("GeForce GTX 960", ((5, 2),)),
    ("GeForce GTX 950", ((5, 2),)),
    ("GeForce GTX 750 Ti", ((5, 0),)),
    ("GeForce GTX 750", ((5, 0),)),
    ("Jetson TX1", ((5, 3),)),
    ("Jetson Nano", ((5, 3),)),
)

# Words people put in front of a GPU name or leave out: "NVIDIA Tesla V100", "geforce-gtx-1080".
_BRANDS = re.compile(r"^(nvidia)?(geforce|tesla|quadro)?(gtx|gt)?")
# Words NVML and board makers add: "Tesla V100-SXM2-16GB", "V100-PCIE-32GB", "GTX 1060 6GB".
_VARIANT = re.compile(r"sxm\d?|pcie|fhhl|mezzanine|\d+gb")
_TARGET = re.compile(r"^(?:sm|compute)_?(\d)(\d)$")


@dataclass(frozen=True)
class LegacyGpu:
    """A GPU of compute capability below 7.5."""

    name: str
    compute_capabilities: tuple[tuple[int, int], ...]

    @property
    def targets(self) -> str:
        """`sm_70`, or `sm_52/sm_61` for a name two GPUs share."""
        return "/".join(f"sm_{major}{minor}" for major, minor in self.compute_capabilities)

    @property
    def family(self) -> str:
        families = {_FAMILIES[major] for major, _ in self.compute_capabilities}
        return " or ".join(sorted(families))

    def reason(self) -> str:
        """Why FlipFlop cannot model it, and what the user can do instead."""
        capabilities = " or ".join(f"{major}.{minor}" for major, minor in self.compute_capabilities)
        described = self.name if self.name == self.targets else f"{self.name} ({self.targets})"
        return (
            f"{described} is not supported: nvcc 13 cannot compile for compute capability "
            f"{capabilities} ({self.family}; CUDA 13 dropped every target older than sm_75), so "
            "FlipFlop ships no profile for it; use a CUDA 12 toolchain (--nvcc PATH) with a "
            "profile file of your own (--gpu PROFILE.json)"
        )


def _key(name: str) -> str:
    words = [word for word in re.split(r"[^a-z0-9]+", name.lower()) if word]
    return _BRANDS.sub("", "".join(word for word in words if not _VARIANT.fullmatch(word)))


_BY_KEY = {_key(name): LegacyGpu(name, capabilities) for name, capabilities in _GPUS}


def legacy_gpus() -> list[LegacyGpu]:
    """Every pre-Turing GPU recognised by name."""
    return list(_BY_KEY.values())


def legacy_gpu(name: str) -> LegacyGpu | None:
    """The pre-Turing GPU `name` refers to (`v100`, `Tesla V100-SXM2-16GB`, `gtx-1080`, `sm_61`)."""
    target = _TARGET.match(name.strip().lower())
    if target:
        capability = (int(target[1]), int(target[2]))
        if capability[0] in _FAMILIES and capability < OLDEST_SUPPORTED:
            return LegacyGpu(f"sm_{target[1]}{target[2]}", (capability,))
        return None
    return _BY_KEY.get(_key(name))
