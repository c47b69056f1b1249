"""What `flipflop measure` shares between block sweeps (`flipflop.commands.measure`) and search
spaces (`flipflop.commands.measure_space`): exit codes, the kernel's description, the checks of
the method's options, error messages, plans, and the GPU, opened at its two system edges."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from flipflop.calibration.device import CudaDevice, NvmlDevice
from flipflop.calibration.spec import (
    KernelSpec,
    SpecError,
    find_spec,
    parse_headers,
    read_spec_file,
)
from flipflop.commands.errors import print_error

T = TypeVar("T")
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_NO_GPU = 3


def load_spec(args: argparse.Namespace) -> KernelSpec:
    """The kernel's description: the --args file, else the source's header."""
    if not args.kernel:
        raise SpecError("--kernel NAME is required")
    if args.args_file is not None:
        spec = read_spec_file(str(args.args_file), args.args_file.read_text())
        if spec.kernel != args.kernel:
            raise SpecError(f"{args.args_file}: describes kernel {spec.kernel!r}, "
                            f"not {args.kernel!r}")
    else:
        text = args.file.read_text()
        spec = find_spec(parse_headers(text, str(args.file)), args.kernel, str(args.file))
    if args.dynamic_smem is not None:
        spec = dataclasses.replace(spec, dynamic_smem=str(args.dynamic_smem))
    return spec


def check_method(args: argparse.Namespace) -> None:
    if args.repeats < 1 or args.window <= 0 or args.cooldown < 0 or args.idle <= 0:
        raise SpecError("--repeats must be >= 1, --window and --idle > 0, --cooldown >= 0")
    if args.dry_run and not args.arch:
        raise SpecError("--dry-run needs --arch sm_XY (there is no GPU to ask)")


def report_spec_error(path: Path, exc: Exception, *others: Path | None) -> None:
    """A message that names its file (and line) as it is, else `FILE:1:1: error: MESSAGE`."""
    message = str(exc)
    for where in (path, *others):
        if where is not None and message.startswith(str(where)):
            print(f"{message.replace(': ', ': error: ', 1)}", file=sys.stderr)
            return
    print_error(path, 1, 1, message)


def write_plan(path: Path, plan: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plan, indent=1) + "\n")


def with_gpu(gpu_index: int, work: Callable[[CudaDevice, NvmlDevice], T]) -> T:
    """Run `work` with the GPU opened (CUDA context and NVML), closing both afterwards."""
    device = open_device(gpu_index)
    try:
        nvml = open_nvml(device)
        try:
            return work(device, nvml)
        finally:
            nvml.close()
    finally:
        device.close()


def open_device(gpu_index: int) -> CudaDevice:
    """The system edge: the local GPU through the CUDA driver."""
    return CudaDevice(gpu_index)


def open_nvml(device: CudaDevice) -> NvmlDevice:
    """The system edge: the same GPU through NVML."""
    return NvmlDevice(device.facts.pci_bus_id)
