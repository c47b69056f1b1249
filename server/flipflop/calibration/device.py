"""The local GPU through the CUDA driver API (cuda-python) and NVML (nvidia-ml-py).

Only reads device state and runs kernels: nothing here changes clocks, power limits,
persistence, compute mode or any other device setting. Both libraries are optional
(`pip install 'flipflop[gpu]'`); without them, or without a driver or a GPU, opening the device
raises `GpuUnavailable`, which the commands report as a toolchain error (exit 3).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from flipflop.launch import Dim3

GPU_EXTRA_HINT = "install the GPU extra with `pip install 'flipflop[gpu]'`"


class GpuUnavailable(RuntimeError):
    """No usable GPU: libraries, driver or device missing."""


class GpuError(RuntimeError):
    """A CUDA or NVML call failed while measuring."""


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise GpuUnavailable(f"cuda-python is not installed; {GPU_EXTRA_HINT}") from exc
    return driver


def _nvml() -> Any:
    try:
        import pynvml
    except ImportError as exc:
        raise GpuUnavailable(f"nvidia-ml-py is not installed; {GPU_EXTRA_HINT}") from exc
    return pynvml


@dataclass(frozen=True)
class DeviceFacts:
    index: int
    name: str
    compute_capability: tuple[int, int]
    sms: int
    pci_bus_id: str
    cuda_driver_version: int


class CudaDevice:
    """One device's primary context and a stream; close() releases what it allocated."""

    def __init__(self, index: int) -> None:
        self._cu = _driver()
        cu = self._cu
        try:
            (err,) = cu.cuInit(0)
        except Exception as exc:  # the bindings raise when libcuda itself cannot be loaded
            raise GpuUnavailable(f"no NVIDIA driver: {exc}") from exc
        if err != cu.CUresult.CUDA_SUCCESS:
            raise GpuUnavailable(f"the CUDA driver does not start ({self._error_name(err)})")
        count = self._call(cu.cuDeviceGetCount())
        if not 0 <= index < count:
            raise GpuUnavailable(f"no GPU with index {index} ({count} present)")
        self._device = self._call(cu.cuDeviceGet(index))
        self._context = self._call(cu.cuDevicePrimaryCtxRetain(self._device))
        self._call(cu.cuCtxSetCurrent(self._context))
        self._stream = self._call(cu.cuStreamCreate(0))
        self._allocations: list[Any] = []
        self._modules: list[Any] = []
        attr = cu.CUdevice_attribute
        name = self._call(cu.cuDeviceGetName(256, self._device))
        self.facts = DeviceFacts(
            index=index,
            name=_text(name),
            compute_capability=(
                self._attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                self._attribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
            ),
            sms=self._attribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            pci_bus_id=_text(self._call(cu.cuDeviceGetPCIBusId(32, self._device))),
            cuda_driver_version=int(self._call(cu.cuDriverGetVersion())),
        )

    def _error_name(self, err: Any) -> str:
        result = self._cu.cuGetErrorName(err)
        return str(result[1].decode()) if result[0] == self._cu.CUresult.CUDA_SUCCESS else str(err)

    def _call(self, result: Any) -> Any:
        """Unpack a binding's (error, value...) tuple, raising GpuError on failure."""
        err, *values = result if isinstance(result, tuple) else (result,)
        if err != self._cu.CUresult.CUDA_SUCCESS:
            raise GpuError(f"CUDA driver call failed: {self._error_name(err)}")
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    def _attribute(self, attribute: Any) -> int:
        return int(self._call(self._cu.cuDeviceGetAttribute(attribute, self._device)))

    def load_function(self, image: bytes, name: str) -> Any:
        return self.function(self.load_module(image), name)

    def load_module(self, image: bytes) -> Any:
        """Load a cubin; the module stays until `unload_module` or `close`."""
        buffer = np.frombuffer(image, dtype=np.uint8).copy()  # alive until the load returns
        module = self._call(self._cu.cuModuleLoadData(buffer.ctypes.data))
        self._modules.append(module)
        return module

    def function(self, module: Any, name: str) -> Any:
        result = self._cu.cuModuleGetFunction(module, name.encode())
        if result[0] != self._cu.CUresult.CUDA_SUCCESS:
            raise GpuError(
                f"kernel {name!r} is not in the compiled module (declare it extern \"C\" or give "
                "its mangled name)"
            )
        return result[1]

    def global_symbol(self, module: Any, name: str) -> tuple[int, int]:
        """Address and size in bytes of a module's `__constant__` or `__device__` variable."""
        result = self._cu.cuModuleGetGlobal(module, name.encode())
        if result[0] != self._cu.CUresult.CUDA_SUCCESS:
            raise GpuError(f"the compiled module has no global symbol {name!r}")
        return int(result[1]), int(result[2])

    def unload_module(self, module: Any) -> None:
        if module in self._modules:
            self._modules.remove(module)
            self._call(self._cu.cuModuleUnload(module))

    def allow_dynamic_smem(self, function: Any, nbytes: int) -> None:
        """Raise this kernel's own dynamic shared-memory limit (a function attribute only)."""
        attr = self._cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self._call(self._cu.cuFuncSetAttribute(function, attr, nbytes))

    def alloc(self, nbytes: int) -> int:
        pointer = self._call(self._cu.cuMemAlloc(max(nbytes, 1)))
        self._allocations.append(pointer)
        return int(pointer)

    def upload(self, pointer: int, host: NDArray[Any]) -> None:
        self._call(self._cu.cuMemcpyHtoD(pointer, host.ctypes.data, host.nbytes))

    def download(self, pointer: int, host: NDArray[Any]) -> None:
        self._call(self._cu.cuMemcpyDtoH(host.ctypes.data, pointer, host.nbytes))

    def fill_bytes(self, pointer: int, value: int, nbytes: int) -> None:
        self._call(self._cu.cuMemsetD8(pointer, value, nbytes))

    def launch(
        self, function: Any, grid: Dim3, block: Dim3, smem: int, arguments: NDArray[np.uint64]
    ) -> None:
        self._call(
            self._cu.cuLaunchKernel(
                function, *grid, *block, smem, self._stream, arguments.ctypes.data, 0
            )
        )

    def record_event(self) -> Any:
        event = self._call(self._cu.cuEventCreate(0))
        self._call(self._cu.cuEventRecord(event, self._stream))
        return event

    def event_done(self, event: Any) -> bool:
        (err,) = self._cu.cuEventQuery(event)
        if err == self._cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self._call((err,))
        return True

    def elapsed_s(self, start: Any, end: Any) -> float:
        self._call(self._cu.cuEventSynchronize(end))
        return float(self._call(self._cu.cuEventElapsedTime(start, end))) / 1e3

    def destroy_events(self, events: Sequence[Any]) -> None:
        for event in events:
            self._call(self._cu.cuEventDestroy(event))

    def synchronize(self) -> None:
        self._call(self._cu.cuStreamSynchronize(self._stream))

    def close(self) -> None:
        cu = self._cu
        with contextlib.suppress(Exception):
            cu.cuStreamSynchronize(self._stream)
        for pointer in self._allocations:
            cu.cuMemFree(pointer)
        for module in self._modules:
            cu.cuModuleUnload(module)
        cu.cuStreamDestroy(self._stream)
        cu.cuDevicePrimaryCtxRelease(self._device)
        self._allocations.clear()
        self._modules.clear()


class NvmlDevice:
    """Read-only NVML view of the same physical GPU (matched by PCI bus id)."""

    def __init__(self, pci_bus_id: str) -> None:
        self._nvml = _nvml()
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise GpuUnavailable(f"NVML does not start: {exc}") from exc
        try:
            self._handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        except nvml.NVMLError as exc:
            nvml.nvmlShutdown()
            raise GpuUnavailable(f"NVML does not know the GPU at {pci_bus_id}: {exc}") from exc

    def energy_mj(self) -> int:
        """Total energy since the driver loaded, in millijoules (Volta and newer)."""
        return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))

    def instant_power_w(self) -> float | None:
        """One NVML_FI_DEV_POWER_INSTANT sample (mW → W); None where the field is unsupported."""
        nvml = self._nvml
        try:
            (value,) = nvml.nvmlDeviceGetFieldValues(self._handle, [nvml.NVML_FI_DEV_POWER_INSTANT])
        except nvml.NVMLError:
            return None
        if value.nvmlReturn != nvml.NVML_SUCCESS:
            return None
        return _field_number(value, nvml) / 1e3

    def sm_clock_mhz(self) -> float:
        return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))

    def mem_clock_mhz(self) -> float:
        return float(self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_MEM))

    def max_sm_clock_mhz(self) -> float:
        return float(self._nvml.nvmlDeviceGetMaxClockInfo(self._handle, self._nvml.NVML_CLOCK_SM))

    def temperature_c(self) -> float:
        nvml = self._nvml
        return float(nvml.nvmlDeviceGetTemperature(self._handle, nvml.NVML_TEMPERATURE_GPU))

    def power_limit_w(self) -> float:
        return float(self._nvml.nvmlDeviceGetEnforcedPowerLimit(self._handle)) / 1e3

    def driver_version(self) -> str:
        version = self._nvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()


def _text(raw: Any) -> str:
    """A C string from the bindings (bytes with a NUL terminator, or already str)."""
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw).split(b"\0", 1)[0].decode()
    return str(raw).split("\0", 1)[0]


def _field_number(value: Any, nvml: Any) -> float:
    kind = value.valueType
    if kind == nvml.NVML_VALUE_TYPE_DOUBLE:
        return float(value.value.dVal)
    if kind == nvml.NVML_VALUE_TYPE_UNSIGNED_INT:
        return float(value.value.uiVal)
    if kind == nvml.NVML_VALUE_TYPE_UNSIGNED_LONG:
        return float(value.value.ulVal)
    if kind == nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        return float(value.value.ullVal)
    if kind == nvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return float(value.value.sllVal)
    return float(value.value.siVal)


def argument_block(values: Sequence[NDArray[Any]]) -> NDArray[np.uint64]:
    """The `void**` array cuLaunchKernel reads: one pointer to each argument's storage."""
    return np.array([v.ctypes.data for v in values], dtype=np.uint64)
