"""CPU references (NumPy, float64) for the workloads' correctness checks.

A workload header names one of these in `check.reference`. Each takes the kernel's initial
arguments by name (arrays as uploaded, scalars as numbers) and returns the expected outputs by
name. `relative_error` is ‖out − ref‖ / ‖ref‖, the norm-wise error the check compares with the
header's `rtol`.

The kernels of the measured search spaces are large (a 4096² convolution with a 15×15 filter,
a 4096³ GEMM, 20 M points against 600 edges): their references compute a fixed, seeded sample
of output elements exactly (`Sampled`), and the check compares the kernel's output there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Arrays = Mapping[str, NDArray[np.generic]]
Scalars = Mapping[str, float]
# Output elements a sampled reference computes; the seed makes the positions fixed.
SAMPLE_SIZE = 4096
SAMPLE_SEED = 20240607


@dataclass(frozen=True)
class Sampled:
    """Expected values of an output at some of its elements (flat indices)."""

    indices: NDArray[np.int64]
    values: NDArray[np.float64]


Expected = NDArray[np.float64] | Sampled
Reference = Callable[[Arrays, Scalars], dict[str, Expected]]


def _f64(array: NDArray[np.generic]) -> NDArray[np.float64]:
    return np.asarray(array, dtype=np.float64)


def vector_add(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    return {"c": _f64(arrays["a"]) + _f64(arrays["b"])}


def copy(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    return {"dst": _f64(arrays["src"])}


def reduce_sum(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    return {"total": np.array([_f64(arrays["x"]).sum()])}


def transpose(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    n = int(scalars["n"])
    return {"out": _f64(arrays["in"]).reshape(n, n).T.ravel()}


def matmul(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    n = int(scalars["n"])
    a = _f64(arrays["a"]).reshape(n, n)
    b = _f64(arrays["b"]).reshape(n, n)
    return {"c": (a @ b).ravel()}


def stencil5(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    n = int(scalars["n"])
    grid = _f64(arrays["in"]).reshape(n, n)
    out = grid.copy()
    out[1:-1, 1:-1] = 0.2 * (
        grid[1:-1, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:] + grid[:-2, 1:-1] + grid[2:, 1:-1]
    )
    return {"out": out.ravel()}


def softmax_rows(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    cols = int(scalars["cols"])
    x = _f64(arrays["x"]).reshape(-1, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).ravel()}


def layernorm_rows(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    cols = int(scalars["cols"])
    x = _f64(arrays["x"]).reshape(-1, cols)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5) * _f64(arrays["gamma"]) + _f64(arrays["beta"])
    return {"y": y.ravel()}


def conv2d_3x3(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    c_in, h, w = int(scalars["c_in"]), int(scalars["h"]), int(scalars["w"])
    image = np.pad(_f64(arrays["in"]).reshape(c_in, h, w), ((0, 0), (1, 1), (1, 1)))
    weight = _f64(arrays["weight"]).reshape(-1, c_in, 3, 3)
    out = np.zeros((weight.shape[0], h, w))
    for dy in range(3):
        for dx in range(3):
            window = image[:, dy : dy + h, dx : dx + w].reshape(c_in, h * w)
            out += (weight[:, :, dy, dx] @ window).reshape(-1, h, w)
    return {"out": out.ravel()}


def attention_heads(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    seq, dim = int(scalars["seq"]), int(scalars["dim"])
    q, k, v = (_f64(arrays[name]).reshape(-1, seq, dim) for name in ("q", "k", "v"))
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(dim)
    weights = np.exp(scores - scores.max(axis=2, keepdims=True))
    weights /= weights.sum(axis=2, keepdims=True)
    return {"o": (weights @ v).ravel()}


def _sample(count: int) -> NDArray[np.int64]:
    rng = np.random.default_rng(SAMPLE_SEED)
    if count <= SAMPLE_SIZE:
        return np.arange(count, dtype=np.int64)
    return np.sort(rng.choice(count, size=SAMPLE_SIZE, replace=False)).astype(np.int64)


def convolution_sampled(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    """Kernel Tuner's `convolution_kernel`: out[y, x] = Σ_ij in[y + i, x + j] · f[i, j], the
    input `image_width + 2·(filter_width // 2)` wide, the filter read from `d_filter` (a copy of
    the `filter` argument)."""
    height, width = int(scalars["image_height"]), int(scalars["image_width"])
    fh, fw = int(scalars["filter_height"]), int(scalars["filter_width"])
    in_width = width + (fw // 2) * 2
    image = _f64(arrays["input"])
    weights = _f64(arrays["filter"])[: fh * fw].reshape(fh, fw)
    indices = _sample(height * width)
    ys, xs = np.divmod(indices, width)
    rows = ys[:, None, None] + np.arange(fh)[None, :, None]
    cols = xs[:, None, None] + np.arange(fw)[None, None, :]
    windows = image[rows * in_width + cols]
    return {"output": Sampled(indices, np.einsum("sij,ij->s", windows, weights))}


def pnpoly_sampled(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    """Kernel Tuner's `cn_pnpoly`: 1 where the crossing number of the point against the polygon
    in `d_vertices` (edges j-1 → j, closed) is odd. Every variant writes the parity. Points
    within float32 rounding of an edge may differ from float64: the check allows a few."""
    n = int(scalars["n"])
    points = _f64(arrays["points"])[: 2 * n].reshape(n, 2)
    vertices = _f64(arrays["d_vertices"]).reshape(-1, 2)
    indices = _sample(n)
    px, py = points[indices, 0][:, None], points[indices, 1][:, None]
    vj = vertices
    vk = np.roll(vertices, 1, axis=0)  # k = j - 1, and k = last for j = 0
    between = (vj[:, 1] > py) != (vk[:, 1] > py)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (vk[:, 0] - vj[:, 0]) / (vk[:, 1] - vj[:, 1])
        crosses = between & (px < slope * (py - vj[:, 1]) + vj[:, 0])
    return {"bitmap": Sampled(indices, (crosses.sum(axis=1) % 2).astype(np.float64))}


def xgemm_sampled(arrays: Arrays, scalars: Scalars) -> dict[str, Expected]:
    """CLBlast's `Xgemm` (kernel 0) as Kernel Tuner measured it: C = alpha·A·B + beta·C with
    A[k·M + m], B[k·N + n] and C[n·M + m] (column-major), C's initial contents as uploaded."""
    m, n, k = int(scalars["m"]), int(scalars["n"]), int(scalars["k"])
    alpha, beta = float(scalars["alpha"]), float(scalars["beta"])
    a = _f64(arrays["a"])[: k * m].reshape(k, m)
    b = _f64(arrays["b"])[: k * n].reshape(k, n)
    c = _f64(arrays["c"])
    indices = _sample(m * n)
    cols, rows = np.divmod(indices, m)
    products = np.einsum("ks,ks->s", a[:, rows], b[:, cols])
    return {"c": Sampled(indices, alpha * products + beta * c[indices])}


REFERENCES: dict[str, Reference] = {
    "vector_add": vector_add,
    "copy": copy,
    "reduce_sum": reduce_sum,
    "transpose": transpose,
    "matmul": matmul,
    "stencil5": stencil5,
    "softmax_rows": softmax_rows,
    "layernorm_rows": layernorm_rows,
    "conv2d_3x3": conv2d_3x3,
    "attention_heads": attention_heads,
    "convolution_sampled": convolution_sampled,
    "pnpoly_sampled": pnpoly_sampled,
    "xgemm_sampled": xgemm_sampled,
}


def expected_error(out: NDArray[np.generic], expected: Expected) -> float:
    """The relative error of an output against a full or a sampled reference."""
    if isinstance(expected, Sampled):
        flat = out.ravel()
        if expected.indices.size and int(expected.indices.max()) >= flat.size:
            return float("inf")
        return relative_error(flat[expected.indices], expected.values)
    return relative_error(out.ravel()[: expected.size], expected)


def relative_error(out: NDArray[np.generic], ref: NDArray[np.float64]) -> float:
    """‖out − ref‖₂ / ‖ref‖₂ (absolute when the reference is zero); NaN anywhere → inf."""
    got = _f64(out).ravel()
    want = ref.ravel()
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    scale = float(np.linalg.norm(want)) or 1.0
    return float(np.linalg.norm(got - want)) / scale
