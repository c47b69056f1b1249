"""`flipflop measure FILE.cu --kernel NAME`: time and energy of every block shape on this GPU,
or of configurations of a search space of compile-time tunables.

Needs an NVIDIA GPU, its driver and the `gpu` extra, except with `--dry-run`. Arguments come
from the file's `flipflop-measure` header, or from a description file (`--args FILE.json`, the
same JSON object) for sources that carry none; the launch options override it.

With tunables (`--tune`, `--tune-file` or `--configs`) each configuration is compiled and
launched as Kernel Tuner would (`#define`s, block from the block-size names, grid from the
problem size and grid divisors) and the results go to a Kernel Tuner cache (`--out`), entry by
entry; a cache that exists is continued. `--configs` takes Kernel Tuner caches (their
configurations that succeeded; several files: those that succeeded in all) or JSON lists of
configurations. `--dry-run --arch sm_XY` plans and compiles without a GPU.

Never changes clocks, power limits or other device settings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flipflop.calibration.device import GpuError, GpuUnavailable
from flipflop.calibration.records import MeasurementSet, write_measurement
from flipflop.calibration.runner import (
    DEFAULT_BLOCKS,
    MeasureRequest,
    build_cubin,
    measure,
)
from flipflop.calibration.spec import (
    SpecError,
    evaluate,
    grid_for,
    launch_names,
)
from flipflop.commands.errors import print_error
from flipflop.commands.launch_options import add_launch_options, count_argument, names_argument
from flipflop.commands.measure_space import run_space
from flipflop.commands.measuring import (
    EXIT_BAD_INPUT,
    EXIT_NO_GPU,
    check_method,
    load_spec,
    report_spec_error,
    with_gpu,
    write_plan,
)
from flipflop.toolchain.errors import ToolchainError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "measure",
        help="measure time and energy of a kernel at every block shape or tunable "
             "configuration (needs a GPU)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", type=Path, metavar="FILE.cu")
    add_launch_options(parser)
    parser.add_argument("--gpu-index", type=int, default=0, metavar="N",
                        help="CUDA device index (default 0)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="measurement JSON (a CSV is written next to it; default "
                             "KERNEL.measure.json), or with tunables the Kernel Tuner cache "
                             "(default KERNEL.cache.json)")
    parser.add_argument("--args", type=Path, metavar="FILE.json", dest="args_file",
                        help="the kernel's description (flipflop-measure JSON) when the source "
                             "has no header")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]")
    parser.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: discovered)")
    parser.add_argument("--repeats", type=int, default=15, help="timed repeats (median kept)")
    parser.add_argument("--window", type=float, default=1.0, metavar="SECONDS",
                        help="energy window per configuration, at least 1 s for NVML's counter")
    parser.add_argument("--cooldown", type=float, default=0.2, metavar="SECONDS")
    parser.add_argument("--idle", type=float, default=1.0, metavar="SECONDS",
                        help="idle-power measurement before the sweep")
    parser.add_argument("--cubin-dir", type=Path, metavar="DIR",
                        help="compiled cubins, kept and reused when their inputs are the same")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and compile every configuration for --arch; "
                             "run nothing (no GPU needed)")
    parser.add_argument("--arch", metavar="sm_XY", help="architecture of --dry-run's compiles")
    parser.add_argument("--plan-out", type=Path, metavar="FILE.json",
                        help="with --dry-run: the plan as JSON")
    group = parser.add_argument_group(
        "search space of compile-time tunables (Kernel Tuner semantics)")
    group.add_argument("--tune", action="append", default=[], metavar="NAME=V1,V2,...",
                       help="a tunable: values, or an inclusive range NAME=A..B:STEP; repeat")
    group.add_argument("--tune-file", type=Path, metavar="SPACE.json",
                       help="a Kernel Tuner tune_params object (name: list of values)")
    group.add_argument("--restrict", action="append", default=[], metavar="EXPR",
                       help="a Kernel Tuner restriction")
    group.add_argument("--configs", type=Path, action="append", default=[], metavar="FILE",
                       help="measure these configurations: a Kernel Tuner cache (those that "
                            "succeeded) or a JSON list; repeat to keep those in every file")
    group.add_argument("--problem-size", type=names_argument, metavar="X[,Y[,Z]]",
                       help="Kernel Tuner's problem_size (default: the --configs cache's)")
    for axis in "xyz":
        group.add_argument(f"--grid-div-{axis}", type=names_argument, metavar="P[,Q...]",
                           help=f"grid_div_{axis} (default: the block size)")
    group.add_argument("--block-size-names", type=names_argument, metavar="X[,Y[,Z]]")
    group.add_argument("--sample", type=count_argument, metavar="N",
                       help="a seeded sample of N configurations")
    group.add_argument("--seed", type=int, default=0, metavar="S",
                       help="the sample's seed (also of the measuring order)")
    group.add_argument("--compiler-option", action="append", default=[], metavar="OPT",
                       dest="compiler_options",
                       help="Kernel Tuner's compiler_options, e.g. --compiler-option=-std=c++11")
    group.add_argument("--env-out", type=Path, metavar="FILE.json",
                       help="the device, idle power and method of a space measurement "
                            "(default: beside --out, .env.json)")
    parser.set_defaults(run=run)


def uses_space(args: argparse.Namespace) -> bool:
    return bool(args.tune or args.tune_file is not None or args.configs)


def build_request(args: argparse.Namespace, argv: list[str]) -> MeasureRequest:
    """The block-sweep request from parsed arguments; SpecError/OSError on bad input."""
    check_method(args)
    spec = load_spec(args)
    return MeasureRequest(
        file=args.file,
        kernel=args.kernel,
        spec=spec,
        params=dict(args.param),
        grid=args.grid,
        threads=args.threads,
        blocks=tuple(args.blocks or ()),
        include_dirs=tuple(Path(d) for d in args.include_dirs),
        defines=tuple(args.defines),
        nvcc=args.nvcc,
        repeats=args.repeats,
        window_s=args.window,
        cooldown_s=args.cooldown,
        idle_s=args.idle,
        command=tuple(argv),
        cubin_dir=args.cubin_dir,
    )


def run(args: argparse.Namespace) -> int:
    argv = ["flipflop", *sys.argv[1:]]
    if uses_space(args):
        return run_space(args, argv)
    try:
        request = build_request(args, argv)
        if not args.file.is_file():
            raise FileNotFoundError(2, "No such file or directory", str(args.file))
    except OSError as exc:
        print_error(Path(exc.filename or args.file), 1, 1, f"cannot read: {exc.strerror}")
        return EXIT_BAD_INPUT
    except SpecError as exc:
        report_spec_error(args.file, exc, args.args_file)
        return EXIT_BAD_INPUT
    if args.dry_run:
        return dry_run_sweep(request, args.arch, args.plan_out)
    out = args.out or Path(f"{request.spec.kernel}.measure.json")
    try:
        data = run_measurement(request, args.gpu_index)
    except GpuUnavailable as exc:
        print(f"flipflop measure: error: no GPU to measure on: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except (GpuError, ToolchainError) as exc:
        print(f"flipflop measure: error: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    except SpecError as exc:
        print_error(args.file, 1, 1, str(exc))
        return EXIT_BAD_INPUT
    write_measurement(data, out)
    print(f"wrote {out} and {out.with_suffix('.csv')}")
    return 0


def dry_run_sweep(request: MeasureRequest, arch: str, plan_out: Path | None) -> int:
    """The block sweep's plan and one compile for `arch`; nothing runs."""
    spec = request.spec
    params = {**spec.params, **request.params}
    blocks = request.blocks or spec.blocks or DEFAULT_BLOCKS
    sms = 132  # launch sizes that depend on the SM count are shown for an H200
    rows = []
    try:
        for block in blocks:
            grid = grid_for(spec, params, block, sms, request.grid, request.threads)
            rows.append({"block": list(block), "grid": list(grid)})
        sizes = {arg.name: int(evaluate(arg.count, launch_names(params, blocks[0], None, sms)))
                 for arg in spec.args if arg.is_pointer and "grid" not in arg.count}
        result = build_cubin(request, arch)
    except SpecError as exc:
        report_spec_error(request.file, exc)
        return EXIT_BAD_INPUT
    except ToolchainError as exc:
        print(f"flipflop measure: error: {exc}", file=sys.stderr)
        return EXIT_NO_GPU
    variant = "".join(f" {k}={v:g}" for k, v in request.params.items())
    print(f"{request.file}: {spec.kernel}{variant}: {len(blocks)} block shapes "
          f"({', '.join('x'.join(map(str, r['block'])) for r in rows)}); "
          f"window >= {request.window_s} s, {request.repeats} repeats, cooldown "
          f"{request.cooldown_s} s, idle {request.idle_s} s; compiled for {arch} "
          f"({'stored' if result.cached else result.compiler}, {len(result.cubin)} bytes)")
    if plan_out is not None:
        write_plan(plan_out, {"file": str(request.file), "kernel": spec.kernel, "arch": arch,
                              "configs": rows, "argument_elements": sizes,
                              "window_s": request.window_s, "repeats": request.repeats,
                              "cooldown_s": request.cooldown_s, "idle_s": request.idle_s})
    return 0


def run_measurement(request: MeasureRequest, gpu_index: int) -> MeasurementSet:
    """Open the GPU (CUDA + NVML), run the sweep, release the GPU."""
    return with_gpu(gpu_index, lambda device, nvml: measure(
        request, device, nvml, lambda line: print(line, file=sys.stderr)))
