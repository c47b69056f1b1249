"""A stand-in for the GPU at the system edge (`CudaDevice` and `NvmlDevice`), for tests that
run `flipflop measure` where there is no GPU.

Device memory is host memory keyed by fake addresses; a launch decodes the `void**` argument
block the runner builds and calls the test's emulation of the kernel (or nothing); CUDA events
read a modelled GPU clock that each launch advances; NVML's energy counter integrates an idle
power over wall-clock time plus a fixed energy per launch, so the numbers a measurement reports
are known in advance.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from flipflop.calibration.device import DeviceFacts, GpuError

IDLE_W = 90.0
JOULES_PER_LAUNCH = 1e-3
ELF_MAGIC = b"\x7fELF"

# kernel name, grid, block, argument values (device arrays by address, scalars as numbers)
Emulation = Callable[["FakeGpu", str, tuple[int, int, int], tuple[int, int, int], list[Any]],
                     None]


@dataclass
class FakeModule:
    image: bytes
    globals: dict[str, int] = field(default_factory=dict)


class FakeGpu:
    """CudaDevice's interface over host memory; `argument_types` says how to decode launches
    ("ptr", "i32" or "f32" per kernel parameter)."""

    def __init__(self, argument_types: Sequence[str], emulate: Emulation | None = None,
                 seconds_per_launch: float = 2e-4, name: str = "NVIDIA H200") -> None:
        self.facts = DeviceFacts(0, name, (9, 0), 132, "00000000:19:00.0", 13000)
        self.memory: dict[int, NDArray[np.uint8]] = {}
        self._next = 0x7F0000000000
        self.argument_types = tuple(argument_types)
        self.emulate = emulate
        self.seconds_per_launch = seconds_per_launch
        self.clock_s = 0.0
        self.launches = 0
        self.loaded: list[FakeModule] = []

    # memory
    def alloc(self, nbytes: int) -> int:
        pointer = self._next
        self.memory[pointer] = np.zeros(max(nbytes, 1), dtype=np.uint8)
        self._next += (max(nbytes, 1) + 255) // 256 * 256
        return pointer

    def upload(self, pointer: int, host: NDArray[Any]) -> None:
        raw = np.frombuffer(np.ascontiguousarray(host).tobytes(), dtype=np.uint8)
        self.memory[pointer][: raw.size] = raw

    def download(self, pointer: int, host: NDArray[Any]) -> None:
        raw = self.memory[pointer][: host.nbytes]
        host[...] = np.frombuffer(raw.tobytes(), dtype=host.dtype).reshape(host.shape)

    def fill_bytes(self, pointer: int, value: int, nbytes: int) -> None:
        self.memory[pointer][:nbytes] = value

    def view(self, pointer: int, dtype: Any) -> NDArray[Any]:
        return self.memory[pointer].view(dtype)

    # modules
    def load_module(self, image: bytes) -> FakeModule:
        if not image.startswith(ELF_MAGIC):
            raise GpuError("CUDA driver call failed: CUDA_ERROR_INVALID_IMAGE")
        module = FakeModule(image)
        self.loaded.append(module)
        return module

    def function(self, module: FakeModule, name: str) -> str:
        if name.encode() not in module.image:
            raise GpuError(f"kernel {name!r} is not in the compiled module")
        return name

    def global_symbol(self, module: FakeModule, name: str) -> tuple[int, int]:
        if name.encode() not in module.image:
            raise GpuError(f"the compiled module has no global symbol {name!r}")
        if name not in module.globals:
            module.globals[name] = self.alloc(64 * 1024)
        return module.globals[name], 64 * 1024

    def unload_module(self, module: FakeModule) -> None:
        self.loaded.remove(module)

    def allow_dynamic_smem(self, function: str, nbytes: int) -> None:
        pass

    # launches and events
    def launch(self, function: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               smem: int, arguments: NDArray[np.uint64]) -> None:
        values: list[Any] = []
        for address, kind in zip(arguments.tolist(), self.argument_types, strict=True):
            if kind == "ptr":
                values.append(ctypes.c_uint64.from_address(address).value)
            elif kind == "i32":
                values.append(ctypes.c_int32.from_address(address).value)
            else:
                values.append(ctypes.c_float.from_address(address).value)
        if self.emulate is not None:
            self.emulate(self, function, grid, block, values)
        self.clock_s += self.seconds_per_launch
        self.launches += 1

    def record_event(self) -> float:
        return self.clock_s

    def event_done(self, event: float) -> bool:
        return True

    def elapsed_s(self, start: float, end: float) -> float:
        return end - start

    def destroy_events(self, events: Sequence[float]) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def close(self) -> None:
        self.memory.clear()


class FakeNvml:
    """NvmlDevice's read-only interface: the energy counter is IDLE_W over wall-clock time plus
    JOULES_PER_LAUNCH for every launch of `gpu` so far."""

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self._start = time.perf_counter()

    def energy_mj(self) -> int:
        seconds = time.perf_counter() - self._start
        return int(1e3 * (IDLE_W * seconds + JOULES_PER_LAUNCH * self.gpu.launches)) + 10**9

    def instant_power_w(self) -> float | None:
        return 300.0

    def sm_clock_mhz(self) -> float:
        return 1980.0

    def mem_clock_mhz(self) -> float:
        return 3201.0

    def max_sm_clock_mhz(self) -> float:
        return 1980.0

    def temperature_c(self) -> float:
        return 40.0

    def power_limit_w(self) -> float:
        return 700.0

    def driver_version(self) -> str:
        return "580.159.04"

    def close(self) -> None:
        pass
