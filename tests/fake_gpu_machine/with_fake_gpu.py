"""Run `flipflop ARGS` with `measure`'s two system edges (the CUDA device, NVML) replaced by the
doubles of tests/gpu_double.py; the kernel's parameter types come from its --args file."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flipflop.calibration.spec import read_spec_file
from flipflop.cli import main
from flipflop.commands import measuring
from gpu_double import FakeGpu, FakeNvml


def _argument_types(argv: list[str]) -> list[str]:
    if "--args" not in argv:
        return []
    path = argv[argv.index("--args") + 1]
    spec = read_spec_file(path, Path(path).read_text())
    return ["ptr" if a.is_pointer else ("f32" if a.type.startswith("f") else "i32")
            for a in spec.args]


if __name__ == "__main__":  # compiler workers are spawned: they import this file again
    types = _argument_types(sys.argv[1:])
    measuring.open_device = lambda index: FakeGpu(types)  # type: ignore[assignment]
    measuring.open_nvml = lambda gpu: FakeNvml(gpu)  # type: ignore[assignment,arg-type]
    sys.exit(main(sys.argv[1:]))
