"""CPU references (NumPy, float64) for the workloads' correctness checks.

A workload header names one of these in `check.reference`. Each takes the kernel's initial
arguments by name (arrays as uploaded, scalars as numbers) and returns the expected outputs by
name. `relative_error` is ‖out − ref‖ / ‖ref‖, the norm-wise error the check compares with the
header's `rtol`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import NDArray

Arrays = Mapping[str, NDArray[np.generic]]
Scalars = Mapping[str, float]
Reference = Callable[[Arrays, Scalars], dict[str, NDArray[np.float64]]]


def _f64(array: NDArray[np.generic]) -> NDArray[np.float64]:
    return np.asarray(array, dtype=np.float64)


def vector_add(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    return {"c": _f64(arrays["a"]) + _f64(arrays["b"])}


def copy(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    return {"dst": _f64(arrays["src"])}


def reduce_sum(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    return {"total": np.array([_f64(arrays["x"]).sum()])}


def transpose(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    n = int(scalars["n"])
    return {"out": _f64(arrays["in"]).reshape(n, n).T.ravel()}


def matmul(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    n = int(scalars["n"])
    a = _f64(arrays["a"]).reshape(n, n)
    b = _f64(arrays["b"]).reshape(n, n)
    return {"c": (a @ b).ravel()}


def stencil5(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    n = int(scalars["n"])
    grid = _f64(arrays["in"]).reshape(n, n)
    out = grid.copy()
    out[1:-1, 1:-1] = 0.2 * (
        grid[1:-1, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:] + grid[:-2, 1:-1] + grid[2:, 1:-1]
    )
    return {"out": out.ravel()}


def softmax_rows(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    cols = int(scalars["cols"])
    x = _f64(arrays["x"]).reshape(-1, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).ravel()}


def layernorm_rows(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    cols = int(scalars["cols"])
    x = _f64(arrays["x"]).reshape(-1, cols)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x - mean) / np.sqrt(var + 1e-5) * _f64(arrays["gamma"]) + _f64(arrays["beta"])
    return {"y": y.ravel()}


def conv2d_3x3(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    c_in, h, w = int(scalars["c_in"]), int(scalars["h"]), int(scalars["w"])
    image = np.pad(_f64(arrays["in"]).reshape(c_in, h, w), ((0, 0), (1, 1), (1, 1)))
    weight = _f64(arrays["weight"]).reshape(-1, c_in, 3, 3)
    out = np.zeros((weight.shape[0], h, w))
    for dy in range(3):
        for dx in range(3):
            window = image[:, dy : dy + h, dx : dx + w].reshape(c_in, h * w)
            out += (weight[:, :, dy, dx] @ window).reshape(-1, h, w)
    return {"out": out.ravel()}


def attention_heads(arrays: Arrays, scalars: Scalars) -> dict[str, NDArray[np.float64]]:
    seq, dim = int(scalars["seq"]), int(scalars["dim"])
    q, k, v = (_f64(arrays[name]).reshape(-1, seq, dim) for name in ("q", "k", "v"))
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(dim)
    weights = np.exp(scores - scores.max(axis=2, keepdims=True))
    weights /= weights.sum(axis=2, keepdims=True)
    return {"o": (weights @ v).ravel()}


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
}


def relative_error(out: NDArray[np.generic], ref: NDArray[np.float64]) -> float:
    """‖out − ref‖₂ / ‖ref‖₂ (absolute when the reference is zero); NaN anywhere → inf."""
    got = _f64(out).ravel()
    want = ref.ravel()
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    scale = float(np.linalg.norm(want)) or 1.0
    return float(np.linalg.norm(got - want)) / scale
