"""`flipflop measure FILE.cu --kernel NAME`: time and energy of every block shape on this GPU.

Needs an NVIDIA GPU, its driver and the `gpu` extra. Arguments come from the file's
`flipflop-measure` header (calibration/README.md); the launch options override it. Never
changes clocks, power limits or other device settings.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from flipflop.calibration.device import CudaDevice, GpuError, GpuUnavailable, NvmlDevice
from flipflop.calibration.records import MeasurementSet, write_measurement
from flipflop.calibration.runner import MeasureRequest, measure
from flipflop.calibration.spec import SpecError, find_spec, parse_headers
from flipflop.commands.errors import print_error
from flipflop.commands.launch_options import add_launch_options
from flipflop.toolchain.errors import ToolchainError

EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_NO_GPU = 3


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "measure",
        help="measure time and energy of a kernel at every block shape (needs a GPU)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", type=Path, metavar="FILE.cu")
    add_launch_options(parser)
    parser.add_argument("--gpu-index", type=int, default=0, metavar="N",
                        help="CUDA device index (default 0)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="measurement JSON (a CSV is written next to it); "
                             "default: KERNEL.measure.json")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]")
    parser.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: discovered)")
    parser.add_argument("--repeats", type=int, default=15, help="timed repeats (median kept)")
    parser.add_argument("--window", type=float, default=1.0, metavar="SECONDS",
                        help="energy window per block shape, at least 1 s for NVML's counter")
    parser.add_argument("--cooldown", type=float, default=0.2, metavar="SECONDS")
    parser.add_argument("--idle", type=float, default=1.0, metavar="SECONDS",
                        help="idle-power measurement before the sweep")
    parser.set_defaults(run=run)


def build_request(args: argparse.Namespace, argv: list[str]) -> MeasureRequest:
    """The measurement request from parsed arguments; SpecError/OSError on bad input."""
    if not args.kernel:
        raise SpecError("--kernel NAME is required")
    if args.repeats < 1 or args.window <= 0 or args.cooldown < 0 or args.idle <= 0:
        raise SpecError("--repeats must be >= 1, --window and --idle > 0, --cooldown >= 0")
    text = args.file.read_text()
    spec = find_spec(parse_headers(text, str(args.file)), args.kernel, str(args.file))
    if args.dynamic_smem is not None:
        spec = dataclasses.replace(spec, dynamic_smem=str(args.dynamic_smem))
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
    )


def run(args: argparse.Namespace) -> int:
    try:
        request = build_request(args, ["flipflop", *sys.argv[1:]])
    except OSError as exc:
        print_error(args.file, 1, 1, f"cannot read: {exc.strerror}")
        return EXIT_BAD_INPUT
    except SpecError as exc:
        message = str(exc)
        if message.startswith(str(args.file)):
            print(f"{message.replace(': ', ': error: ', 1)}", file=sys.stderr)
        else:
            print_error(args.file, 1, 1, message)
        return EXIT_BAD_INPUT
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


def run_measurement(request: MeasureRequest, gpu_index: int) -> MeasurementSet:
    """Open the GPU (CUDA + NVML), run the sweep, release the GPU."""
    device = CudaDevice(gpu_index)
    try:
        nvml = NvmlDevice(device.facts.pci_bus_id)
        try:
            return measure(request, device, nvml, lambda line: print(line, file=sys.stderr))
        finally:
            nvml.close()
    finally:
        device.close()
