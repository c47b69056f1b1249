"""The machine code ptxas makes of a kernel, for the tests that check the model's view of it:
ptxas and nvdisasm as calibration/scripts/sass_costs.py finds them (the dev extra installs
nvdisasm)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from cuda_toolchain import nvcc_for_tests

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "calibration" / "scripts" / "sass_costs.py"


class ToolsMissing(RuntimeError):
    """ptxas or nvdisasm is not installed."""


def load_script(path: Path, name: str) -> ModuleType:
    """A script of calibration/scripts as a module registered under `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def ptxas_and_nvdisasm() -> tuple[Path, Path]:
    module = load_script(SCRIPT, "sass_costs_for_machine_code")
    try:
        found = module.find_tools()
    except module.MeasureError as error:
        raise ToolsMissing(
            f"ptxas/nvdisasm missing; run scripts/setup.sh (dev extra): {error}") from error
    return Path(found.ptxas), Path(found.nvdisasm)


def compile_ptx(source: Path, folder: Path, arch: str, *flags: str) -> Path:
    """`nvcc -ptx -arch=ARCH FLAGS source` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    ptx = folder / f"{source.stem}_{arch}.ptx"
    subprocess.run([nvcc_for_tests(), "-ptx", f"-arch={arch}", *flags, str(source), "-o",
                    str(ptx)], check=True, capture_output=True)  # fmt: skip
    return ptx


def disassemble(ptx: Path, arch: str, tools: tuple[Path, Path]) -> str:
    """nvdisasm's listing of the cubin ptxas assembles from `ptx`."""
    ptxas, nvdisasm = tools
    cubin = ptx.with_suffix(".cubin")
    subprocess.run([str(ptxas), f"-arch={arch}", str(ptx), "-o", str(cubin)], check=True,
                   capture_output=True)  # fmt: skip
    return subprocess.run([str(nvdisasm), str(cubin)], check=True, capture_output=True,
                          text=True).stdout  # fmt: skip
