// Row statistics for runtime_grids.cu, in a header of their own as libraries keep them.
#pragma once
#include <cuda_runtime.h>

// One warp per row: mean and reciprocal standard deviation of each of `rows` rows of C values.
template <int WARPS>
__global__ void row_statistics(const float *inp, float *mean, float *rstd, int rows, int C)
{
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * WARPS + warp;
    if (row >= rows) {
        return;
    }
    const float *x = inp + (size_t)row * C;
    float sum = 0.0f;
    float squares = 0.0f;
    for (int i = lane; i < C; i += 32) {
        sum += x[i];
        squares += x[i] * x[i];
    }
    for (int gap = 16; gap > 0; gap /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, gap);
        squares += __shfl_down_sync(0xffffffffu, squares, gap);
    }
    if (lane == 0) {
        const float m = sum / C;
        mean[row] = m;
        rstd[row] = rsqrtf(squares / C - m * m + 1e-5f);
    }
}
