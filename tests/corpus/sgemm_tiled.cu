// Shared-memory tiled SGEMM: each block stages TILE x TILE tiles of A and B and every thread
// accumulates one element of C from them.
#include <cuda_runtime.h>

constexpr int TILE = 32;

__global__ void sgemm_tiled(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c)
{
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int base = 0; base < k; base += TILE) {
        a_tile[threadIdx.y][threadIdx.x] = (row < m && base + threadIdx.x < k) ? a[row * k + base + threadIdx.x] : 0.0f;
        b_tile[threadIdx.y][threadIdx.x] = (col < n && base + threadIdx.y < k) ? b[(base + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < TILE; ++p) {
            acc += a_tile[threadIdx.y][p] * b_tile[p][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[row * n + col] = acc;
    }
}

void gemm_tiled(int m, int n, int k, const float* a, const float* b, float* c)
{
    dim3 block(TILE, TILE);
    dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    sgemm_tiled<<<grid, block>>>(m, n, k, a, b, c);
}
