// The register-tiled kernel of sgemm_runner.cu, kept in a header the way tutorial repositories
// keep one kernel per file: the runner includes it and launches it.
#pragma once
#include <cuda_runtime.h>

// Each thread computes ROWS results of one column of a TILE_M x TILE_N tile.
template <const int TILE_M, const int TILE_N, const int TILE_K, const int ROWS>
__global__ void mm_column_strip(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C)
{
    __shared__ float tile_a[TILE_M * TILE_K];
    __shared__ float tile_b[TILE_K * TILE_N];
    const int c = threadIdx.x % TILE_N;
    const int r = threadIdx.x / TILE_N;
    A += blockIdx.y * TILE_M * K;
    B += blockIdx.x * TILE_N;
    C += blockIdx.y * TILE_M * N + blockIdx.x * TILE_N;
    const int a_col = threadIdx.x % TILE_K;
    const int a_row = threadIdx.x / TILE_K;
    const int b_col = threadIdx.x % TILE_N;
    const int b_row = threadIdx.x / TILE_N;
    float results[ROWS] = {0.0f};
    for (int step = 0; step < K; step += TILE_K) {
        tile_a[a_row * TILE_K + a_col] = A[a_row * K + a_col];
        tile_b[b_row * TILE_N + b_col] = B[b_row * N + b_col];
        __syncthreads();
        A += TILE_K;
        B += TILE_K * N;
        for (int k = 0; k < TILE_K; ++k) {
            const float b = tile_b[k * TILE_N + c];
            for (int i = 0; i < ROWS; ++i) {
                results[i] += tile_a[(r * ROWS + i) * TILE_K + k] * b;
            }
        }
        __syncthreads();
    }
    for (int i = 0; i < ROWS; ++i) {
        C[(r * ROWS + i) * N + c] = alpha * results[i] + beta * C[(r * ROWS + i) * N + c];
    }
}
