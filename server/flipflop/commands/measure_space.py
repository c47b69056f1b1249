"""`flipflop measure` with tunables: the search-space half of the command (see measure.py).

Builds the measurement from the options (the kernel's description, the configurations, Kernel
Tuner's launch semantics), then either prints the plan and compiles every configuration
(`--dry-run`), or measures on the GPU into a Kernel Tuner cache with a `.env.json` beside it
(the device as found, idle power before and after, the method, the command and commit).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from flipflop.calibration.device import CudaDevice, GpuError, GpuUnavailable, NvmlDevice
from flipflop.calibration.kernel_build import BuildResult, CubinStore, nvrtc_version
from flipflop.calibration.runner import git_commit
from flipflop.calibration.space_runner import (
    DATA_SEED,
    PlannedConfig,
    SpaceRequest,
    SpaceSummary,
    argument_sizes,
    cache_header,
    compile_all,
    measure_space,
    plan,
)
from flipflop.calibration.space_selection import Selection, read_configuration_file, select
from flipflop.calibration.spec import SpecError
from flipflop.commands import measuring as command
from flipflop.commands.errors import print_error
from flipflop.formats.errors import FormatError
from flipflop.formats.kernel_tuner_writer import KernelTunerCacheWriter
from flipflop.formats.tune_file import read_tune_file
from flipflop.space.errors import SpaceError
from flipflop.space.kernel_tuner import KernelTunerLaunch, parse_launch_options
from flipflop.space.tunables import parse_tune_option
from flipflop.toolchain.errors import ToolchainError

# Launch sizes that depend on the SM count are planned for this many (an H200 has 132).
PLAN_SMS = 132


def space_request(args: argparse.Namespace, argv: list[str]) -> tuple[SpaceRequest, Selection]:
    """The space measurement from the options; SpecError, SpaceError, FormatError or OSError
    with the reason."""
    command.check_method(args)
    if args.grid is not None or args.threads is not None or args.blocks:
        raise SpecError("with tunables the launch is Kernel Tuner's: use --problem-size and "
                        "--grid-div-*, not --grid, --threads or --blocks")
    spec = command.load_spec(args)
    if not args.file.is_file():
        raise FileNotFoundError(2, "No such file or directory", str(args.file))
    tunables = [parse_tune_option(text) for text in args.tune]
    if args.tune_file is not None:
        tunables.extend(read_tune_file(args.tune_file))
    files = [read_configuration_file(path) for path in args.configs]
    selection = select(tunables, args.restrict, files, args.sample, args.seed)
    launch = _launch(args, selection)
    launch.check(tuple(t.name for t in selection.tunables))
    request = SpaceRequest(
        source=args.file,
        kernel=args.kernel,
        spec=spec,
        tunables=selection.tunables,
        launch=launch,
        configurations=selection.configurations,
        params=dict(args.param),
        compiler_options=tuple(args.compiler_options),
        include_dirs=tuple(Path(d) for d in args.include_dirs),
        cubin_dir=args.cubin_dir,
        repeats=args.repeats,
        window_s=args.window,
        cooldown_s=args.cooldown,
        idle_s=args.idle,
        command=tuple(argv),
    )
    return request, selection


def _launch(args: argparse.Namespace, selection: Selection) -> KernelTunerLaunch:
    problem = args.problem_size
    if problem is None:
        if selection.problem_size is None:
            raise SpaceError("give --problem-size (Kernel Tuner's problem_size): no --configs "
                             "cache says it")
        problem = tuple(str(extent) for extent in selection.problem_size)

    def joined(value: tuple[str, ...] | None) -> str | None:
        return None if value is None else ",".join(value)

    return parse_launch_options(",".join(problem), joined(args.grid_div_x),
                                joined(args.grid_div_y), joined(args.grid_div_z),
                                joined(args.block_size_names))


def run_space(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        request, selection = space_request(args, argv)
        if args.dry_run:
            planned = plan(request, args.arch)
            sizes = argument_sizes(request, planned, PLAN_SMS)
    except OSError as exc:
        print_error(Path(exc.filename or args.file), 1, 1, f"cannot read: {exc.strerror}")
        return command.EXIT_BAD_INPUT
    except (FormatError, SpecError, SpaceError) as exc:
        return _bad_input(args, exc)
    if args.dry_run:
        return _dry_run(args, request, selection, planned, sizes)
    out = args.out or Path(f"{request.kernel}.cache.json")
    env_out = args.env_out or out.with_name(out.name.removesuffix(".json") + ".env.json")

    def work(device: CudaDevice, nvml: NvmlDevice) -> SpaceSummary:
        header = cache_header(request, device.facts.name)
        with KernelTunerCacheWriter(out, header) as writer:
            return measure_space(request, device, nvml, writer,
                                 lambda line: print(line, file=sys.stderr))

    try:
        summary = command.with_gpu(args.gpu_index, work)
    except GpuUnavailable as exc:
        print(f"flipflop measure: error: no GPU to measure on: {exc}", file=sys.stderr)
        return command.EXIT_NO_GPU
    except (GpuError, ToolchainError) as exc:
        print(f"flipflop measure: error: {exc}", file=sys.stderr)
        return command.EXIT_NO_GPU
    except (FormatError, SpecError, SpaceError) as exc:
        return _bad_input(args, exc)
    env = environment(request, selection, summary, argv)
    env_out.parent.mkdir(parents=True, exist_ok=True)
    env_out.write_text(json.dumps(env, indent=1) + "\n")
    print(f"wrote {out} ({summary.measured} measured, {summary.skipped} already there, "
          f"{summary.compile_failed} failed to compile, {summary.runtime_failed} to run, "
          f"{summary.incorrect} incorrect) and {env_out}")
    return 0


def _bad_input(args: argparse.Namespace, exc: FormatError | SpecError | SpaceError) -> int:
    """A description, tune file or cache that cannot be used: one `FILE: error:` line."""
    if isinstance(exc, FormatError):
        print(f"{exc}".replace(": ", ": error: ", 1), file=sys.stderr)
    else:
        command.report_spec_error(args.file, exc, args.args_file)
    return command.EXIT_BAD_INPUT


def environment(request: SpaceRequest, selection: Selection, summary: SpaceSummary,
                argv: list[str]) -> dict[str, Any]:
    """What a cache cannot hold: the device as found, idle power, the method, provenance."""
    launch = request.launch
    return {
        "schema": "flipflop.kernel-tuner-env/1",
        "kernel": request.kernel,
        "source": str(request.source),
        "device": asdict(summary.device),
        "idle_power_w": summary.idle_power_w,
        "idle_power_after_w": summary.idle_power_after_w,
        "measured": summary.measured,
        "already_in_cache": summary.skipped,
        "compile_failed": summary.compile_failed,
        "runtime_failed": summary.runtime_failed,
        "incorrect": summary.incorrect,
        "seconds": summary.seconds,
        "method": {
            "repeats": request.repeats, "window_s": request.window_s,
            "cooldown_s": request.cooldown_s, "idle_s": request.idle_s,
            "compiler": f"{', '.join(summary.compilers) or 'none'} (Kernel Tuner's "
                        f"cuda-python rules, a cubin for the real architecture); NVRTC here "
                        f"{nvrtc_version()}",
            "compiler_options": list(request.compiler_options),
            "data_seed": DATA_SEED,
            "energy": "nvml_energy: board energy per launch from the total-energy counter "
                      "over the window; nvml_energy_above_idle: less idle power over the "
                      "window; nvml_power: counter energy / window; time: mean of times (ms)",
        },
        "launch": {
            "problem_size": [e if isinstance(e, int) else e.text for e in launch.problem_size],
            "grid_div": [None if d is None else [e if isinstance(e, int) else e.text
                                                 for e in d] for d in launch.grid_divs],
            "block_size_names": list(launch.block_names(t.name for t in request.tunables)),
        },
        "selection": {"available": selection.available, "sample": selection.sample,
                      "seed": selection.seed, "order": "seeded shuffle"},
        "note": request.spec.note,
        "command": argv,
        "commit": git_commit(request.source),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def _dry_run(args: argparse.Namespace, request: SpaceRequest, selection: Selection,
             planned: Sequence[PlannedConfig], sizes: dict[str, int]) -> int:
    total_bytes = 0
    element_bytes = {"f16": 2, "f32": 4, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8}
    described = []
    for arg in request.spec.args:
        if arg.is_pointer:
            nbytes = sizes[arg.name] * element_bytes[arg.type.rstrip("*")]
            total_bytes += nbytes
            described.append(f"{arg.name} {arg.type.rstrip('*')}[{sizes[arg.name]}] {arg.init}")
    print(f"{request.source}: {request.kernel} for {args.arch}: {len(planned)} configurations "
          f"(of {selection.available}, sample {selection.sample}, seed {selection.seed}, "
          f"seeded order)")
    launch = request.launch
    problem = [e if isinstance(e, int) else e.text for e in launch.problem_size]
    divisors = ["default" if d is None else "*".join(str(e if isinstance(e, int) else e.text)
                                                    for e in d) for d in launch.grid_divs]
    print(f"  launch: problem_size {problem}, grid_div x/y/z {' / '.join(divisors)}, block "
          f"from {', '.join(launch.block_names(t.name for t in request.tunables))}")
    print(f"  arguments ({total_bytes / 2**20:.1f} MiB on the GPU): {'; '.join(described)}"
          + "".join(f"; __constant__ {c.name} <- {c.source or c.init}"
                    for c in request.spec.constants))
    check = request.spec.check
    print(f"  per configuration: {'check ' + check.reference if check else 'no check'}, warm-up "
          f">= 3 launches and >= 50 ms, {request.repeats} timed repeats, energy window >= "
          f"{request.window_s} s, cooldown {request.cooldown_s} s; idle {request.idle_s} s "
          f"before and after")
    store = CubinStore(request.cubin_dir) if request.cubin_dir is not None else None

    def show(item: PlannedConfig, result: BuildResult) -> None:
        state = "stored" if result.cached else ("compiled" if result.ok else "FAILED")
        print(f"    {item.key:40} block {'x'.join(map(str, item.block)):10} grid "
              f"{'x'.join(map(str, item.grid)):14} {state}", flush=True)

    try:
        results = compile_all(planned, store, show)
    except ToolchainError as exc:
        print(f"flipflop measure: error: {exc}", file=sys.stderr)
        return command.EXIT_NO_GPU
    failed = [item.key for item, result in results if not result.ok]
    print(f"  compiled {len(results) - len(failed)}/{len(results)} for {args.arch}"
          + (f"; cubins in {request.cubin_dir}" if request.cubin_dir else ""))
    if args.plan_out is not None:
        command.write_plan(args.plan_out, {
            "file": str(request.source), "kernel": request.kernel, "arch": args.arch,
            "available": selection.available, "sample": selection.sample,
            "seed": selection.seed, "argument_bytes": total_bytes,
            "window_s": request.window_s, "repeats": request.repeats,
            "cooldown_s": request.cooldown_s, "idle_s": request.idle_s,
            "configs": [{"key": item.key, "block": list(item.block), "grid": list(item.grid),
                         "compiled": result.ok} for item, result in results],
        })
    if failed:
        for item, result in results:
            if not result.ok:
                print(f"{request.source}: error: configuration {item.key} does not compile for "
                      f"{args.arch}:\n{result.log}", file=sys.stderr)
        return command.EXIT_BAD_INPUT
    return 0
