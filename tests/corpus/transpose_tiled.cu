// Tiled transpose through shared memory, with and without one column of padding: without it
// the column-wise reads of the tile hit the same bank 32 times.
#include <cuda_runtime.h>

constexpr int TILE = 32;
constexpr int ROWS_PER_PASS = 8;

template <int PAD>
__global__ void transpose_tiled(float* __restrict__ out, const float* __restrict__ in, int width, int height)
{
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int row = 0; row < TILE; row += ROWS_PER_PASS) {
        if (x < width && y + row < height) {
            tile[threadIdx.y + row][threadIdx.x] = in[(y + row) * width + x];
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int row = 0; row < TILE; row += ROWS_PER_PASS) {
        if (x < height && y + row < width) {
            out[(y + row) * height + x] = tile[threadIdx.x][threadIdx.y + row];
        }
    }
}

void transpose_both(float* out, const float* in, int width, int height)
{
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
    transpose_tiled<0><<<grid, block>>>(out, in, width, height);
    transpose_tiled<1><<<grid, block>>>(out, in, width, height);
}
