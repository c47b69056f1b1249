"""Compiling the model tests' kernels: the small ones under model_kernels/ and CLBlast's Xgemm,
the GEMM whose measured search spaces are in calibration/data/measured/gemm."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cuda_toolchain import nvcc_for_tests
from flipflop.analysis import extract_features
from flipflop.analysis.features import KernelFeatures
from flipflop.ptx import parse_ptx

KERNELS = Path(__file__).parent / "model_kernels"
ROOT = Path(__file__).resolve().parents[1]
GEMM = ROOT / "calibration" / "data" / "measured" / "gemm"
XGEMM = ROOT / "calibration" / "validation" / "xgemm.cu"
GEMM_PARAMETERS = ("kSizeM", "kSizeN", "kSizeK", "alpha", "beta", "agm", "bgm", "cgm",
                   "b_offset", "c_offset")  # fmt: skip
GEMM_SIZES = {"kSizeM": 4096, "kSizeN": 4096, "kSizeK": 4096}


def compile_ptx(source: Path, out: Path, *flags: str) -> Path:
    """`nvcc -ptx -arch=sm_86` of `source` into `out`."""
    subprocess.run([nvcc_for_tests(), "-ptx", "-arch=sm_86", *flags, str(source), "-o",
                    str(out)], check=True, capture_output=True)  # fmt: skip
    return out


def features_of(ptx: Path, kernel: str, names: tuple[str, ...] = ()) -> KernelFeatures:
    """The features of the kernel whose mangled name contains `kernel`."""
    module = parse_ptx(ptx.read_text(), str(ptx))
    name = next(k.name for k in module.kernels if kernel in k.name)
    return extract_features(module, name, names)


def xgemm_features(out: Path, *flags: str) -> KernelFeatures:
    """Xgemm compiled with its tunables as `-D` flags (its mangled name follows the vector
    types, so it is found by name)."""
    ptx = compile_ptx(XGEMM, out, f"-I{GEMM}", *flags)
    return features_of(ptx, "Xgemm", GEMM_PARAMETERS)
