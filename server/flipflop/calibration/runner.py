"""Run one kernel at every candidate block shape on the local GPU and record time and energy.

Method (calibration/README.md, "How `measure` measures"): compile a cubin for the device's own
architecture; allocate and fill the arguments from the file's `flipflop-measure` header; per block
shape, check the result against the CPU reference once (outputs poisoned first), warm up, time
`repeats` batches with CUDA events (median), then launch back to back for at least `window_s`
while observers read NVML's energy counter, instant power, clock and temperature; rest
`cooldown_s` before the next shape. Idle power is measured once, before the sweep, with the GPU
untouched for `idle_s`.
"""

from __future__ import annotations

import math
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
from numpy.typing import NDArray

from flipflop.calibration.device import CudaDevice, GpuError, NvmlDevice, argument_block
from flipflop.calibration.kernel_build import BuildRequest, BuildResult, CubinStore
from flipflop.calibration.observers import (
    ClockTemperatureObserver,
    EnergyCounterObserver,
    InstantPowerObserver,
    Observer,
)
from flipflop.calibration.records import ConfigMeasurement, DeviceInfo, MeasurementSet
from flipflop.calibration.references import REFERENCES, Expected, expected_error
from flipflop.calibration.spec import (
    ArgSpec,
    KernelSpec,
    SpecError,
    evaluate,
    grid_for,
    launch_names,
)
from flipflop.launch import Dim3
from flipflop.toolchain.discovery import find_toolchain
from flipflop.toolchain.errors import ToolchainError
from flipflop.toolchain.process import run_tool

NUMPY_TYPES: dict[str, type[np.generic]] = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
    "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
}
COMPILE_TIMEOUT_S = 300.0
# A default 1-D sweep when neither the header nor the command line names block shapes.
DEFAULT_BLOCKS: tuple[Dim3, ...] = tuple((t, 1, 1) for t in range(32, 1025, 32))


@dataclass(frozen=True)
class MeasureRequest:
    file: Path
    kernel: str
    spec: KernelSpec
    params: Mapping[str, float] = field(default_factory=dict)  # overrides the header's
    grid: Dim3 | None = None
    threads: Dim3 | None = None
    blocks: tuple[Dim3, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    defines: tuple[str, ...] = ()
    nvcc: str | None = None
    repeats: int = 15
    window_s: float = 1.0
    cooldown_s: float = 0.2
    idle_s: float = 1.0
    command: tuple[str, ...] = ()
    cubin_dir: Path | None = None  # compiled cubins, reused when their inputs are unchanged


def _nvcc_options(request: MeasureRequest) -> tuple[str, ...]:
    options = ["-O3", "-lineinfo", "-I", str(request.file.resolve().parent)]
    for directory in request.include_dirs:
        options += ["-I", str(directory)]
    options += [f"-D{d}" for d in request.defines]
    return tuple(options)


def compile_cubin(request: MeasureRequest, arch: str) -> bytes:
    """nvcc -cubin for `arch` (or the stored cubin of the same inputs); a failure raises
    ToolchainError with nvcc's message."""
    return build_cubin(request, arch).cubin


def build_cubin(request: MeasureRequest, arch: str) -> BuildResult:
    options = _nvcc_options(request)
    text = request.file.read_text()
    key_request = BuildRequest(str(request.file), text, arch, ("nvcc", *options),
                               (request.file.resolve().parent, *request.include_dirs))
    store = CubinStore(request.cubin_dir) if request.cubin_dir is not None else None
    key = key_request.key()
    if store is not None:
        stored = store.get(key)
        if stored is not None:
            return BuildResult(True, stored, "", 0.0, "store", cached=True)
    toolchain = find_toolchain(request.nvcc)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="flipflop-measure-") as scratch:
        out = Path(scratch) / "kernel.cubin"
        argv: list[str | Path] = [toolchain.nvcc, "-cubin", f"-arch={arch}", *options,
                                  "-o", out, request.file]
        run = run_tool(argv, COMPILE_TIMEOUT_S)
        if run.returncode != 0:
            raise ToolchainError(f"nvcc failed on {request.file}:\n{run.stderr.strip()}")
        result = BuildResult(True, out.read_bytes(), run.stderr.strip(),
                             time.perf_counter() - started, f"nvcc {toolchain.version}")
    if store is not None:
        store.put(key, result, str(request.file))
    return result


def git_commit(path: Path) -> str:
    """The commit of the repository holding `path`, `-dirty` when tracked files changed."""
    where = path.resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD"], cwd=where, capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return head.stdout.strip() + ("-dirty" if dirty.returncode == 1 else "")


@dataclass
class Buffer:
    spec: ArgSpec
    pointer: int
    host: NDArray[Any]  # the initial contents (inputs) or a scratch array (outputs)


def _initial(arg: ArgSpec, count: int, names: Mapping[str, float], rng: np.random.Generator
             ) -> NDArray[Any]:
    return initial_data(arg.type.rstrip("*"), arg.init, count, rng,
                        lambda: int(evaluate(arg.range, names)))


def initial_data(element: str, init: str, count: int, rng: np.random.Generator,
                 upper: Callable[[], int] = lambda: 1) -> NDArray[Any]:
    """The initial contents of an argument or constant of `count` elements."""
    dtype = NUMPY_TYPES[element]
    if init == "random":
        if np.issubdtype(dtype, np.integer):
            return rng.integers(-1000, 1000, size=count).astype(dtype)
        return rng.uniform(-1.0, 1.0, size=count).astype(dtype)
    if init == "normal":
        return rng.standard_normal(size=count).astype(dtype)
    if init == "circle":
        # tune_pnpoly.py: sort(rand(V) * 2π)[::-1], then (cos, sin) pairs.
        angles = np.sort(rng.random(count // 2) * 2.0 * np.pi)[::-1]
        pairs = np.stack([np.cos(angles), np.sin(angles)], axis=1).ravel()
        return np.concatenate([pairs, np.zeros(count - pairs.size)]).astype(dtype)
    if init == "index_random":
        return rng.integers(0, max(upper(), 1), size=count).astype(dtype)
    if init == "iota":
        return np.arange(count).astype(dtype)
    if init == "ones":
        return np.ones(count, dtype=dtype)
    return np.zeros(count, dtype=dtype)  # "zero"; "poison" is written as 0xFF bytes instead


class _Sweep:
    """State of one sweep: device buffers, the loaded kernel and the reference outputs."""

    def __init__(self, request: MeasureRequest, device: CudaDevice, nvml: NvmlDevice) -> None:
        self.request = request
        self.device = device
        self.nvml = nvml
        self.sms = device.facts.sms
        self.params = {**request.spec.params, **request.params}
        self.blocks = request.blocks or request.spec.blocks or DEFAULT_BLOCKS
        cc = device.facts.compute_capability
        self.function = device.load_function(
            compile_cubin(request, f"sm_{cc[0]}{cc[1]}"), request.spec.kernel
        )
        self.buffers = self._allocate()
        self._reference: dict[str, Expected] | None = None

    def grid(self, block: Dim3) -> Dim3:
        return grid_for(
            self.request.spec, self.params, block, self.sms, self.request.grid, self.request.threads
        )

    def names(self, block: Dim3) -> dict[str, float]:
        return launch_names(self.params, block, self.grid(block), self.sms)

    def _allocate(self) -> list[Buffer]:
        rng = np.random.default_rng(20240607)
        buffers = []
        for arg in self.request.spec.args:
            if not arg.is_pointer:
                continue
            # Sizes may follow the launch (e.g. one output per thread): size for the largest.
            count = max(int(evaluate(arg.count, self.names(b))) for b in self.blocks)
            host = _initial(arg, count, self.names(self.blocks[0]), rng)
            pointer = self.device.alloc(host.nbytes)
            self.device.upload(pointer, host)
            buffers.append(Buffer(arg, pointer, host))
        return buffers

    def arguments(self, block: Dim3) -> tuple[NDArray[np.uint64], list[NDArray[Any]]]:
        pointers = {b.spec.name: b.pointer for b in self.buffers}
        names = self.names(block)
        storage: list[NDArray[Any]] = []
        for arg in self.request.spec.args:
            if arg.is_pointer:
                storage.append(np.array([pointers[arg.name]], dtype=np.uint64))
            else:
                storage.append(np.array([evaluate(arg.value, names)], dtype=NUMPY_TYPES[arg.type]))
        return argument_block(storage), storage

    def reset_outputs(self) -> None:
        reset_outputs(self.device, self.buffers, self.request.spec)

    def check(self, block: Dim3, launch: Callable[[], None]) -> bool | None:
        check = self.request.spec.check
        if check is None:
            return None
        if self._reference is None:
            self._reference = reference_outputs(self.request.spec, self.buffers,
                                                self.names(block))
        return check_outputs(self.device, self.buffers, self.request.spec, self._reference,
                             launch)


def reset_outputs(device: CudaDevice, buffers: Sequence[Buffer], spec: KernelSpec) -> None:
    """Outputs back to their initial state: poisoned (0xFF bytes, NaN for floats) or as first
    uploaded, so a check sees only what the next launch writes."""
    outputs = spec.check.outputs if spec.check is not None else ()
    for buffer in buffers:
        if buffer.spec.init == "poison":
            device.fill_bytes(buffer.pointer, 0xFF, buffer.host.nbytes)
        elif buffer.spec.init == "zero" or buffer.spec.name in outputs:
            device.upload(buffer.pointer, buffer.host)


def reference_outputs(spec: KernelSpec, buffers: Sequence[Buffer], names: Mapping[str, float],
                      constants: Mapping[str, NDArray[Any]] | None = None
                      ) -> dict[str, Expected]:
    """The expected outputs of the check (computed once per sweep, from the initial data of
    the arguments and of the `__constant__` symbols)."""
    assert spec.check is not None
    reference = REFERENCES.get(spec.check.reference)
    if reference is None:
        raise SpecError(f"unknown reference {spec.check.reference!r}")
    return reference({**(constants or {}), **{b.spec.name: b.host for b in buffers}}, names)


def check_outputs(device: CudaDevice, buffers: Sequence[Buffer], spec: KernelSpec,
                  expected: Mapping[str, Expected], launch: Callable[[], None]) -> bool:
    """Reset the outputs, launch once and compare every checked output with the reference."""
    assert spec.check is not None
    reset_outputs(device, buffers, spec)
    launch()
    device.synchronize()
    ok = True
    for buffer in buffers:
        if buffer.spec.name in spec.check.outputs:
            got = np.empty_like(buffer.host)
            device.download(buffer.pointer, got)
            ok = ok and expected_error(got, expected[buffer.spec.name]) <= spec.check.rtol
    return ok


def _wait(device: CudaDevice, event: Any, observers: Sequence[Observer]) -> None:
    while not device.event_done(event):
        for observer in observers:
            observer.during()
        time.sleep(0.005)
    device.destroy_events([event])


def _time_batches(device: CudaDevice, launch: Callable[[], None], repeats: int,
                  estimate_s: float) -> list[float]:
    # Batch tiny kernels so one timed interval is >= ~1 ms of GPU work.
    batch = max(1, min(1000, math.ceil(1e-3 / max(estimate_s, 1e-7))))
    times = []
    for _ in range(repeats):
        start = device.record_event()
        for _ in range(batch):
            launch()
        end = device.record_event()
        times.append(device.elapsed_s(start, end) / batch)
        device.destroy_events([start, end])
    return times


def measure_idle_power(nvml: NvmlDevice, seconds: float) -> float:
    """Mean board power over `seconds` with nothing launched by us (energy-counter based)."""
    start_mj, start = nvml.energy_mj(), time.perf_counter()
    time.sleep(seconds)
    end_mj, end = nvml.energy_mj(), time.perf_counter()
    return (end_mj - start_mj) / 1e3 / (end - start)


def device_info(device: CudaDevice, nvml: NvmlDevice) -> DeviceInfo:
    facts = device.facts
    return DeviceInfo(
        index=facts.index,
        name=facts.name,
        compute_capability=facts.compute_capability,
        sms=facts.sms,
        driver_version=nvml.driver_version(),
        cuda_driver_version=facts.cuda_driver_version,
        sm_clock_mhz=nvml.sm_clock_mhz(),
        mem_clock_mhz=nvml.mem_clock_mhz(),
        max_sm_clock_mhz=nvml.max_sm_clock_mhz(),
        power_limit_w=nvml.power_limit_w(),
        temperature_c=nvml.temperature_c(),
    )


def measure(
    request: MeasureRequest,
    device: CudaDevice,
    nvml: NvmlDevice,
    progress: Callable[[str], None] = lambda _: None,
) -> MeasurementSet:
    """The whole sweep; raises GpuError, ToolchainError or SpecError with a clear message."""
    info = device_info(device, nvml)
    sweep = _Sweep(request, device, nvml)
    idle_w = measure_idle_power(nvml, request.idle_s)
    progress(f"{info.name}: idle {idle_w:.1f} W")
    configs = []
    for block in sweep.blocks:
        configs.append(_measure_block(sweep, block, idle_w))
        c = configs[-1]
        progress(
            f"{request.spec.kernel} block {'x'.join(map(str, block))}: {c.time_s * 1e3:.4f} ms, "
            f"{c.power_w:.1f} W, {c.energy_j * 1e3:.3f} mJ, correct={c.correct}"
        )
        time.sleep(request.cooldown_s)
    first = sweep.blocks[0]
    return MeasurementSet(
        file=str(request.file),
        kernel=request.spec.kernel,
        device=info,
        idle_power_w=idle_w,
        configs=tuple(configs),
        params=dict(sweep.params),
        grid=request.grid,
        threads=request.threads or _header_threads(sweep, first),
        dynamic_smem_bytes=int(evaluate(request.spec.dynamic_smem, sweep.names(first))),
        command=request.command,
        commit=git_commit(request.file),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        kind="measured",
        note=(
            f"repeats={request.repeats}, energy window >= {request.window_s} s, cooldown "
            f"{request.cooldown_s} s, idle measured over {request.idle_s} s before the sweep"
        ),
    )


def _header_threads(sweep: _Sweep, block: Dim3) -> Dim3 | None:
    spec = sweep.request.spec
    if sweep.request.grid is not None or spec.threads is None:
        return None
    names = launch_names(sweep.params, block, None, sweep.sms)
    values = [int(evaluate(t, names)) for t in spec.threads] + [1, 1]
    return (values[0], values[1], values[2])


def _measure_block(sweep: _Sweep, block: Dim3, idle_w: float) -> ConfigMeasurement:
    device = sweep.device
    grid = sweep.grid(block)
    names = sweep.names(block)
    smem = int(evaluate(sweep.request.spec.dynamic_smem, names))
    if smem > 48 * 1024:
        device.allow_dynamic_smem(sweep.function, smem)
    arguments, _storage = sweep.arguments(block)

    def launch() -> None:
        device.launch(sweep.function, grid, block, smem, arguments)

    correct = sweep.check(block, launch)
    sweep.reset_outputs()
    window = measure_launch(device, sweep.nvml, launch, sweep.request.repeats,
                            sweep.request.window_s, idle_w)
    return ConfigMeasurement(
        block=block,
        grid=grid,
        time_s=window.time_s,
        time_s_repeats=window.times_s,
        energy_j=window.energy_j,
        energy_above_idle_j=window.energy_above_idle_j,
        power_w=window.power_w,
        window_s=window.window_s,
        launches_in_window=window.launches,
        power_samples_w=window.power_samples_w,
        sm_clock_mhz=window.sm_clock_mhz,
        temperature_c=window.temperature_c,
        correct=correct,
        work={key: evaluate(expr, names) for key, expr in sweep.request.spec.work.items()},
        dynamic_smem_bytes=smem,
    )


@dataclass(frozen=True)
class LaunchMeasurement:
    """One launch configuration measured: CUDA-event times, then a back-to-back energy window.

    `energy_j` is board energy per launch from NVML's total-energy counter (idle included),
    `energy_above_idle_j` the same less idle power over the window."""

    time_s: float  # median of the timed repeats
    times_s: tuple[float, ...]
    energy_j: float
    energy_above_idle_j: float
    power_w: float  # counter energy / window
    window_s: float
    launches: int
    power_samples_w: tuple[float, ...]
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    temperature_c: float | None
    seconds: float  # wall clock of warm-up, timing and window together


def measure_launch(device: CudaDevice, nvml: NvmlDevice, launch: Callable[[], None],
                   repeats: int, window_s: float, idle_w: float) -> LaunchMeasurement:
    """Warm up (>= 3 launches and >= 50 ms), time `repeats` batches with CUDA events (median),
    then launch back to back for at least `window_s` while observers read NVML."""
    warm_start = time.perf_counter()
    warmups = 0
    while warmups < 3 or time.perf_counter() - warm_start < 0.05:
        launch()
        warmups += 1
        if warmups % 16 == 0:
            device.synchronize()
    device.synchronize()
    estimate = (time.perf_counter() - warm_start) / warmups
    times = _time_batches(device, launch, repeats, estimate)
    time_s = median(times)

    observers: list[Observer] = [
        EnergyCounterObserver(nvml),
        InstantPowerObserver(nvml),
        ClockTemperatureObserver(nvml),
    ]
    planned = max(1, math.ceil(window_s / max(time_s, 1e-7)))
    chunk = max(1, min(planned, math.ceil(0.05 / max(time_s, 1e-7))))
    for observer in observers:
        observer.before_start()
    window_start = time.perf_counter()
    pending: list[Any] = []
    issued = 0
    # At least the planned launches, and on until the wall-clock window is long enough: with
    # one chunk queued behind the running one, the host never runs far ahead of the GPU.
    while issued < planned or time.perf_counter() - window_start < window_s:
        count = min(chunk, planned - issued) if issued < planned else chunk
        for _ in range(count):
            launch()
        issued += count
        pending.append(device.record_event())
        if issued == count:
            for observer in observers:
                observer.after_start()
                observer.during()  # at least one sample, as Kernel Tuner's observers take
        while len(pending) > 1:
            _wait(device, pending.pop(0), observers)
    launches = issued
    while pending:
        _wait(device, pending.pop(0), observers)
    for observer in observers:
        observer.after_finish()
    results: dict[str, Any] = {}
    for observer in observers:
        results.update(observer.get_results())
    energy_j = float(results["energy_j"])
    window_s = float(results["window_s"])
    if energy_j <= 0:
        raise GpuError("NVML's energy counter did not advance: the GPU reports no energy")
    return LaunchMeasurement(
        time_s=time_s,
        times_s=tuple(times),
        energy_j=energy_j / launches,
        energy_above_idle_j=(energy_j - idle_w * window_s) / launches,
        power_w=energy_j / window_s,
        window_s=window_s,
        launches=launches,
        power_samples_w=tuple(results["power_samples_w"]),
        sm_clock_mhz=results["sm_clock_mhz"],
        mem_clock_mhz=results["mem_clock_mhz"],
        temperature_c=results["temperature_c"],
        seconds=time.perf_counter() - warm_start,
    )
