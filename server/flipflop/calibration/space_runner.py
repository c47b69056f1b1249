"""Measure configurations of a search space of compile-time tunables as Kernel Tuner would.

Each configuration is the kernel source with Kernel Tuner's `#define`s prepended
(`KernelTunerLaunch.prepare_source`), compiled by Kernel Tuner's rules (`kernel_build`),
launched at Kernel Tuner's block and grid, with its arguments allocated once and filled from
the kernel's description (`spec.read_spec_file`) and its `__constant__` symbols filled at every
load (`cmem_args`). Per configuration: a check against the reference (outputs reset first),
warm-up, CUDA-event timing, and an energy window read from NVML's total-energy counter
(`runner.measure_launch`). Idle power is measured before the first configuration (and again
after the last, to show drift). Every result goes to a Kernel Tuner cache as soon as it is
measured; configurations already in the cache are not measured again.

Nothing here changes clocks, power limits or any other device setting.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np
from numpy.typing import NDArray

from flipflop.calibration.device import CudaDevice, GpuError, NvmlDevice, argument_block
from flipflop.calibration.kernel_build import (
    BuildRequest,
    BuildResult,
    CubinStore,
    build_all,
    kernel_tuner_options,
    kernel_tuner_text,
)
from flipflop.calibration.records import DeviceInfo
from flipflop.calibration.references import Expected
from flipflop.calibration.runner import (
    NUMPY_TYPES,
    Buffer,
    check_outputs,
    device_info,
    initial_data,
    measure_idle_power,
    measure_launch,
    reference_outputs,
    reset_outputs,
)
from flipflop.calibration.spec import KernelSpec, SpecError, evaluate
from flipflop.formats.kernel_tuner_writer import (
    COMPILATION_FAILED,
    RUNTIME_FAILED,
    CacheHeader,
    KernelTunerCacheWriter,
)
from flipflop.launch import Dim3
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import KernelTunerLaunch, cache_key
from flipflop.space.tunables import Configuration, ParamValue, SplitMix64, Tunable

DATA_SEED = 20240607  # the seed of every argument's data, as `flipflop measure` has always used


@dataclass(frozen=True)
class SpaceRequest:
    source: Path
    kernel: str
    spec: KernelSpec  # arguments, constants, check and parameters of the kernel
    tunables: tuple[Tunable, ...]  # the cache's tune_params
    launch: KernelTunerLaunch
    configurations: tuple[Configuration, ...]  # in measuring order
    params: Mapping[str, float] = field(default_factory=dict)  # overrides the spec's
    compiler_options: tuple[str, ...] = ()
    include_dirs: tuple[Path, ...] = ()
    cubin_dir: Path | None = None
    repeats: int = 15
    window_s: float = 1.0
    cooldown_s: float = 0.2
    idle_s: float = 1.0
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlannedConfig:
    config: Configuration
    key: str
    block: Dim3
    grid: Dim3
    build: BuildRequest


def shuffled(items: Sequence[Configuration], seed: int) -> tuple[Configuration, ...]:
    """The items in a seeded random order (Fisher–Yates with SplitMix64), so that drift of
    temperature or clocks over a session does not follow the order of the space."""
    order = list(items)
    generator = SplitMix64(seed ^ 0x5EED)
    for position in range(len(order) - 1, 0, -1):
        other = generator.below(position + 1)
        order[position], order[other] = order[other], order[position]
    return tuple(order)


def config_names(params: Mapping[str, float], config: Configuration,
                 block: Dim3 | None = None, grid: Dim3 | None = None,
                 sms: int = 0) -> dict[str, float]:
    """The names a description's expressions may use: parameters, the configuration's numeric
    tunables, and the launch."""
    names: dict[str, float] = dict(params)
    for name, value in config.items():
        if isinstance(value, (bool, int, float)):
            names[name] = float(value)
    if block is not None:
        names.update(block_x=block[0], block_y=block[1], block_z=block[2],
                     block_threads=block[0] * block[1] * block[2], sms=sms)
    if grid is not None:
        names.update(grid_x=grid[0], grid_y=grid[1], grid_z=grid[2],
                     grid_blocks=grid[0] * grid[1] * grid[2])
    return names


def plan(request: SpaceRequest, arch: str) -> tuple[PlannedConfig, ...]:
    """Every configuration's key, launch and compile request; SpaceError/SpecError on a
    configuration the launch semantics cannot place."""
    text = request.source.read_text()
    options = kernel_tuner_options(request.compiler_options, arch,
                                   (request.source.resolve().parent, *request.include_dirs))
    folders = (request.source.resolve().parent, *request.include_dirs)
    keys = tuple(t.name for t in request.tunables)
    planned = []
    for config in request.configurations:
        prepared = kernel_tuner_text(request.launch.prepare_source(config, text))
        planned.append(PlannedConfig(
            config=config,
            key=cache_key(config, keys),
            block=request.launch.block(config),
            grid=request.launch.grid(config),
            build=BuildRequest(request.source.name, prepared, arch, options, folders),
        ))
    return tuple(planned)


def argument_sizes(request: SpaceRequest, planned: Sequence[PlannedConfig], sms: int
                   ) -> dict[str, int]:
    """Elements of every pointer argument: the most any configuration needs."""
    params = {**request.spec.params, **request.params}
    sizes: dict[str, int] = {}
    for arg in request.spec.args:
        if arg.is_pointer:
            sizes[arg.name] = max(
                int(evaluate(arg.count, config_names(params, p.config, p.block, p.grid, sms)))
                for p in planned
            )
    return sizes


def compile_all(planned: Sequence[PlannedConfig], store: CubinStore | None,
                progress: Callable[[PlannedConfig, BuildResult], None] = lambda _i, _r: None,
                workers: int = 0) -> list[tuple[PlannedConfig, BuildResult]]:
    """Compile (or find) every configuration's cubin, in parallel; nothing runs."""
    results = build_all([item.build for item in planned], store, workers,
                        lambda index, result: progress(planned[index], result))
    return list(zip(planned, results, strict=True))


@dataclass(frozen=True)
class SpaceSummary:
    device: DeviceInfo
    idle_power_w: float
    idle_power_after_w: float
    measured: int
    skipped: int  # already in the cache
    compile_failed: int
    runtime_failed: int
    incorrect: int
    seconds: float
    compilers: tuple[str, ...] = ()  # what made the cubins measured, e.g. "nvrtc 13.0"


class _Arguments:
    """Device buffers, their initial data and the reference outputs of one space."""

    def __init__(self, request: SpaceRequest, device: CudaDevice, sizes: Mapping[str, int]
                 ) -> None:
        rng = np.random.default_rng(DATA_SEED)
        self.spec = request.spec
        self.buffers: list[Buffer] = []
        for arg in request.spec.args:
            if not arg.is_pointer:
                continue
            host = initial_data(arg.type.rstrip("*"), arg.init, sizes[arg.name], rng)
            pointer = device.alloc(host.nbytes)
            device.upload(pointer, host)
            self.buffers.append(Buffer(arg, pointer, host))
        hosts = {b.spec.name: b.host for b in self.buffers}
        params = {**request.spec.params, **request.params}
        self.constants: list[tuple[str, NDArray[Any]]] = []
        for constant in request.spec.constants:
            if constant.source is not None:
                data = hosts[constant.source]
            else:
                count = int(evaluate(constant.count, params))
                data = initial_data(constant.type, constant.init, count, rng)
            self.constants.append((constant.name, data))
        self._expected: dict[str, Expected] | None = None

    def expected(self, names: Mapping[str, float]) -> dict[str, Expected]:
        if self._expected is None:
            self._expected = reference_outputs(self.spec, self.buffers, names,
                                               dict(self.constants))
        return self._expected

    def fill_constants(self, device: CudaDevice, module: Any) -> None:
        for name, data in self.constants:
            pointer, size = device.global_symbol(module, name)
            if data.nbytes > size:
                raise SpecError(f"constant {name}: {data.nbytes} bytes of data for a symbol of "
                                f"{size} bytes")
            device.upload(pointer, data)

    def block(self, names: Mapping[str, float]) -> tuple[NDArray[np.uint64], list[Any]]:
        pointers = {b.spec.name: b.pointer for b in self.buffers}
        storage: list[NDArray[Any]] = []
        for arg in self.spec.args:
            if arg.is_pointer:
                storage.append(np.array([pointers[arg.name]], dtype=np.uint64))
            else:
                storage.append(np.array([evaluate(arg.value, names)],
                                        dtype=NUMPY_TYPES[arg.type]))
        return argument_block(storage), storage


def measure_space(
    request: SpaceRequest,
    device: CudaDevice,
    nvml: NvmlDevice,
    writer: KernelTunerCacheWriter,
    progress: Callable[[str], None] = lambda _: None,
) -> SpaceSummary:
    """Measure every configuration not yet in `writer`'s cache, appending each result."""
    started = time.perf_counter()
    info = device_info(device, nvml)
    cc = info.compute_capability
    planned = plan(request, f"sm_{cc[0]}{cc[1]}")
    todo = [item for item in planned if item.key not in writer]
    params = {**request.spec.params, **request.params}
    arguments = _Arguments(request, device, argument_sizes(request, planned, info.sms))
    with tempfile.TemporaryDirectory(prefix="flipflop-cubins-") as scratch:
        store = CubinStore(request.cubin_dir or Path(scratch))
        # Every cubin first, in parallel, so that the measurements follow one another.
        built = build_all([item.build for item in todo], store)
        progress(f"{len(built)} configurations built ({sum(r.cached for r in built)} stored "
                 f"before, {sum(not r.ok for r in built)} failed)")
        return _measure_all(request, todo, built, planned, device, nvml, writer, arguments,
                            store, params, info, progress, started)


def _measure_all(request: SpaceRequest, todo: Sequence[PlannedConfig],
                 built: Sequence[BuildResult], planned: Sequence[PlannedConfig],
                 device: CudaDevice, nvml: NvmlDevice, writer: KernelTunerCacheWriter,
                 arguments: _Arguments, store: CubinStore, params: Mapping[str, float],
                 info: DeviceInfo, progress: Callable[[str], None], started: float
                 ) -> SpaceSummary:
    idle_w = measure_idle_power(nvml, request.idle_s)
    progress(f"{info.name}: idle {idle_w:.1f} W; {len(todo)} configurations to measure, "
             f"{len(planned) - len(todo)} already in {writer.path}")
    counts = {"compile": 0, "runtime": 0, "incorrect": 0}
    results = list(built)
    for index, item in enumerate(todo, 1):
        try:
            entry = _measure_config(request, item, results[index - 1], device, nvml, arguments,
                                    params, info.sms, idle_w)
        except _StoredCubinRejected as rejected:
            # Cubins made elsewhere that this driver does not load (a newer compiler, say):
            # build every one still to measure here, in parallel, and go on.
            progress(f"{rejected}: building the {len(todo) - index + 1} remaining cubins here")
            rest = todo[index - 1:]
            for other in rest:
                store.forget(other.build.key())
            results[index - 1:] = build_all([other.build for other in rest], store)
            entry = _measure_config(request, item, results[index - 1], device, nvml, arguments,
                                    params, info.sms, idle_w)
        writer.append(item.key, entry)
        if entry["time"] == COMPILATION_FAILED:
            counts["compile"] += 1
        elif entry["time"] == RUNTIME_FAILED:
            counts["runtime"] += 1
        elif entry.get("correct") is False:
            counts["incorrect"] += 1
        progress(_describe(index, len(todo), item, entry))
        if request.cooldown_s > 0:
            time.sleep(request.cooldown_s)
    idle_after = measure_idle_power(nvml, request.idle_s)
    return SpaceSummary(
        device=info, idle_power_w=idle_w, idle_power_after_w=idle_after, measured=len(todo),
        skipped=len(planned) - len(todo), compile_failed=counts["compile"],
        runtime_failed=counts["runtime"], incorrect=counts["incorrect"],
        seconds=time.perf_counter() - started,
        compilers=tuple(sorted({r.compiler for r in results if r.ok})),
    )


class _StoredCubinRejected(RuntimeError):
    """The driver refused to load a cubin from the store."""


def _describe(index: int, total: int, item: PlannedConfig, entry: Mapping[str, Any]) -> str:
    if isinstance(entry["time"], str):
        return f"[{index}/{total}] {item.key}: {entry['time']}"
    return (f"[{index}/{total}] {item.key}: {entry['time']:.4f} ms, {entry['nvml_power']:.1f} W,"
            f" {entry['nvml_energy'] * 1e3:.3f} mJ, correct={entry.get('correct')}")


def _kernel_tuner_entry(config: Configuration, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = dict(config.items())
    entry.update(fields)
    entry.setdefault("strategy_time", 0)
    entry["timestamp"] = str(datetime.now(timezone.utc))
    return entry


def _measure_config(
    request: SpaceRequest,
    item: PlannedConfig,
    result: BuildResult,
    device: CudaDevice,
    nvml: NvmlDevice,
    arguments: _Arguments,
    params: Mapping[str, float],
    sms: int,
    idle_w: float,
) -> dict[str, Any]:
    started = time.perf_counter()
    module = None
    try:
        if result.ok:
            try:
                module = device.load_module(result.cubin)
            except GpuError as error:
                if result.cached:
                    raise _StoredCubinRejected(f"{item.key}: {error}") from error
                raise
        # Kernel Tuner's compile_time: compiling (when it was done, here or before) and loading.
        compile_ms = result.seconds * 1e3 + (time.perf_counter() - started) * 1e3
        if module is None:
            return _kernel_tuner_entry(item.config, time=COMPILATION_FAILED,
                                       compile_time=compile_ms, verification_time=0,
                                       benchmark_time=0, framework_time=0,
                                       compiler_log=result.log[-2000:])
        return _run_config(request, item, device, nvml, arguments, module, params, sms, idle_w,
                           compile_ms, started)
    finally:
        if module is not None:
            device.unload_module(module)


def _run_config(
    request: SpaceRequest,
    item: PlannedConfig,
    device: CudaDevice,
    nvml: NvmlDevice,
    arguments: _Arguments,
    module: Any,
    params: Mapping[str, float],
    sms: int,
    idle_w: float,
    compile_ms: float,
    started: float,
) -> dict[str, Any]:
    names = config_names(params, item.config, item.block, item.grid, sms)
    smem = int(evaluate(request.spec.dynamic_smem, names))
    verification_ms = benchmark_ms = 0.0
    try:
        function = device.function(module, request.kernel)
        arguments.fill_constants(device, module)
        if smem > 48 * 1024:
            device.allow_dynamic_smem(function, smem)
        block, _storage = arguments.block(names)

        def launch() -> None:
            device.launch(function, item.grid, item.block, smem, block)

        correct: bool | None = None
        checked = time.perf_counter()
        if request.spec.check is not None:
            correct = check_outputs(device, arguments.buffers, request.spec,
                                    arguments.expected(names), launch)
        reset_outputs(device, arguments.buffers, request.spec)
        verification_ms = (time.perf_counter() - checked) * 1e3
        window = measure_launch(device, nvml, launch, request.repeats, request.window_s, idle_w)
        benchmark_ms = window.seconds * 1e3
    except GpuError as error:
        _still_usable(device, error)
        framework_ms = (time.perf_counter() - started) * 1e3 - compile_ms - verification_ms
        return _kernel_tuner_entry(item.config, time=RUNTIME_FAILED, compile_time=compile_ms,
                                   verification_time=verification_ms, benchmark_time=0,
                                   framework_time=framework_ms, error=str(error))
    times_ms = [t * 1e3 for t in window.times_s]
    framework_ms = ((time.perf_counter() - started) * 1e3 - compile_ms - verification_ms
                    - benchmark_ms)
    entry = _kernel_tuner_entry(
        item.config,
        time=fmean(times_ms),
        times=times_ms,
        compile_time=compile_ms,
        verification_time=verification_ms,
        benchmark_time=benchmark_ms,
        framework_time=framework_ms,
        nvml_energy=window.energy_j,
        nvml_power=window.power_w,
        nvml_energy_above_idle=window.energy_above_idle_j,
        idle_power=idle_w,
        energy_window=window.window_s,
        energy_launches=window.launches,
        time_median=float(np.median(times_ms)),
        block=list(item.block),
        grid=list(item.grid),
        correct=correct,
    )
    if window.power_samples_w:
        entry["instant_power"] = float(np.median(window.power_samples_w))
    for name, value in (("core_freq", window.sm_clock_mhz), ("mem_freq", window.mem_clock_mhz),
                        ("temperature", window.temperature_c)):
        if value is not None and math.isfinite(value):
            entry[name] = value
    return entry


def _still_usable(device: CudaDevice, error: GpuError) -> None:
    """A launch that failed for its configuration (too many resources, say) leaves the
    context usable; one that faulted does not, and nothing after it can be measured."""
    try:
        device.synchronize()
    except GpuError as fault:
        raise GpuError(f"the GPU context is broken after {error} ({fault}); "
                       "the configurations measured so far are in the cache") from fault


def cache_header(request: SpaceRequest, device_name: str) -> CacheHeader:
    """The cache header of this space on this device, problem size as Kernel Tuner keeps it
    (an integer when it has one dimension)."""
    size: list[int | str] = [
        extent if isinstance(extent, int) else extent.text for extent in request.launch.problem_size
    ]
    problem: int | str | tuple[int | str, ...] = size[0] if len(size) == 1 else tuple(size)
    tune_params: dict[str, Sequence[ParamValue]] = {t.name: t.values for t in request.tunables}
    return CacheHeader(device_name, request.kernel, problem, tune_params)


def check_configurations(tunables: Sequence[Tunable], configurations: Sequence[Configuration]
                         ) -> None:
    """SpaceError when a configuration's names are not the tunables'."""
    names = tuple(t.name for t in tunables)
    for config in configurations:
        if config.names != names:
            raise SpaceError(f"configuration {config.describe()} does not name the tunables "
                             f"{', '.join(names)} in order")
