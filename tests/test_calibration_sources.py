"""The microbenchmark and workload sources: their headers parse, name real kernels with the
right number of parameters, every one compiles with nvcc, and the CPU references are right."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cuda_toolchain import nvcc_for_tests
from flipflop.calibration.references import REFERENCES, relative_error
from flipflop.calibration.spec import parse_headers

REPOSITORY = Path(__file__).resolve().parents[1]
SOURCES = sorted((REPOSITORY / "calibration" / "microbench").glob("*.cu")) + sorted(
    (REPOSITORY / "calibration" / "workloads").glob("*.cu")
)
WORKLOADS = {
    "vector_add", "reduction", "transpose", "matmul_naive", "matmul_tiled", "stencil",
    "softmax", "layernorm", "conv2d", "attention",
}
WORK_KEYS = {
    "dram_bytes", "l2_bytes", "shared_bytes", "fp32_flops", "fp64_flops", "fp16_flops",
    "int_ops", "sfu_ops", "tensor_flops", "active_sms", "empty_launch",
}
NVCC = nvcc_for_tests()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")


def test_every_workload_kind_is_present() -> None:
    names = {p.stem for p in (REPOSITORY / "calibration" / "workloads").glob("*.cu")}
    assert names >= WORKLOADS


def test_headers_are_complete() -> None:
    for path in SOURCES:
        specs = parse_headers(path.read_text(), str(path))
        assert specs, f"{path.name} has no flipflop-measure header"
        for spec in specs:
            assert spec.blocks, f"{spec.kernel}: no block sweep"
            assert set(spec.work) <= WORK_KEYS, spec.kernel
            assert "active_sms" in spec.work, spec.kernel
            if spec.check is not None:
                assert spec.check.reference in REFERENCES
                assert set(spec.check.outputs) <= {a.name for a in spec.args}
        if path.parent.name == "workloads":
            assert all(s.check is not None for s in specs), f"{path.name}: no CPU reference"


def _ptx(path: Path, arch: str, out: Path) -> str:
    assert NVCC is not None
    ptx = out / f"{path.stem}.ptx"
    subprocess.run([NVCC, "-ptx", f"-arch={arch}", "-o", str(ptx), str(path)], check=True,
                   capture_output=True, timeout=300)
    return ptx.read_text()


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_compiles_and_headers_match_the_kernels(path: Path, tmp_path: Path) -> None:
    ptx = _ptx(path, "sm_90", tmp_path)
    entries = {
        m.group(1): m.group(2)
        for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\)", ptx, re.DOTALL)
    }
    for spec in parse_headers(path.read_text(), str(path)):
        assert spec.kernel in entries, f"{spec.kernel} is not an extern \"C\" entry of {path}"
        params = entries[spec.kernel].count(".param")
        assert params == len(spec.args), f"{spec.kernel}: header has {len(spec.args)} args"
    assert NVCC is not None
    subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(path)],
                   check=True, capture_output=True, timeout=300)


def test_reference_conv2d_matches_direct_loops() -> None:
    rng = np.random.default_rng(1)
    c_in, h, w = 2, 4, 5
    image = rng.uniform(-1, 1, c_in * h * w).astype(np.float32)
    weight = rng.uniform(-1, 1, 3 * c_in * 9).astype(np.float32)
    got = REFERENCES["conv2d_3x3"]({"in": image, "weight": weight},
                                   {"c_in": c_in, "h": h, "w": w})["out"].reshape(3, h, w)
    x = image.reshape(c_in, h, w).astype(np.float64)
    f = weight.reshape(3, c_in, 3, 3).astype(np.float64)
    for k in range(3):
        for y in range(h):
            for xx in range(w):
                acc = 0.0
                for c in range(c_in):
                    for dy in (-1, 0, 1):
                        for dx in (-1, 0, 1):
                            if 0 <= y + dy < h and 0 <= xx + dx < w:
                                acc += x[c, y + dy, xx + dx] * f[k, c, dy + 1, dx + 1]
                assert got[k, y, xx] == pytest.approx(acc)


def test_reference_attention_rows_sum_like_softmax() -> None:
    rng = np.random.default_rng(2)
    seq, dim = 6, 4
    q, k = (rng.uniform(-1, 1, 2 * seq * dim) for _ in range(2))
    v = np.ones(2 * seq * dim)  # softmax weights sum to one, so every output is exactly 1
    out = REFERENCES["attention_heads"]({"q": q, "k": k, "v": v}, {"seq": seq, "dim": dim})["o"]
    assert np.allclose(out, 1.0)
    assert relative_error(out.astype(np.float32), np.ones_like(out)) < 1e-7
    assert relative_error(np.full(3, np.nan), np.ones(3)) == float("inf")


def test_reference_transpose_and_stencil() -> None:
    grid = np.arange(16, dtype=np.float32)
    t = REFERENCES["transpose"]({"in": grid}, {"n": 4})["out"].reshape(4, 4)
    assert t[1, 2] == grid.reshape(4, 4)[2, 1]
    s = REFERENCES["stencil5"]({"in": grid}, {"n": 4})["out"].reshape(4, 4)
    assert s[1, 1] == pytest.approx(0.2 * (5 + 4 + 6 + 1 + 9))
    assert s[0, 3] == 3.0  # boundary copied
