// A tiled matrix product whose tile is a #define: the shared tiles, the loop over them and the
// launch all follow TILE, and the code never reads blockDim.
#include <cuda_runtime.h>

#ifndef TILE
#define TILE 16
#endif

__global__ void matmul_tiles(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n)
{
    __shared__ float a_tile[TILE][TILE];
    __shared__ float b_tile[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int step = 0; step < n; step += TILE) {
        a_tile[threadIdx.y][threadIdx.x] = a[row * n + step + threadIdx.x];
        b_tile[threadIdx.y][threadIdx.x] = b[(step + threadIdx.y) * n + col];
        __syncthreads();
        for (int i = 0; i < TILE; ++i) {
            sum += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
        }
        __syncthreads();
    }
    c[row * n + col] = sum;
}

void matmul(const float* a, const float* b, float* c, int n)
{
    matmul_tiles<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(a, b, c, n);
}
