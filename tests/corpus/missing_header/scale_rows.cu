// A kernel file whose helper header needs cuBLAS: with a toolkit (or the nvcc wheel) that lacks
// cuBLAS, the preprocessor stops at <cublas_v2.h> inside blas_helpers.h.
#include "blas_helpers.h"

__global__ void scale_rows(float* matrix, const float* factors, int rows, int columns)
{
    const int column = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y;
    if (column < columns && row < rows) {
        matrix[row * columns + column] *= factors[row];
    }
}

void scale(float* matrix, const float* factors, int rows, int columns)
{
    dim3 grid((columns + 127) / 128, rows);
    scale_rows<<<grid, 128>>>(matrix, factors, rows, columns);
}
