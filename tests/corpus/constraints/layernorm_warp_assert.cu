// Layer normalisation with one warp per row: the x extent must be one warp, rows stack in y.
#include <cassert>
#include <cuda_runtime.h>

#define WARP_SIZE 32

__global__ void layernorm_warp_rows(const float* __restrict__ in, float* __restrict__ out, int rows, int columns)
{
    assert(blockDim.x == WARP_SIZE);
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) {
        return;
    }
    const float* x = in + (size_t)row * columns;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < columns; i += WARP_SIZE) {
        sum += x[i];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_xor_sync(0xffffffff, sum, offset);
    }
    const float mean = sum / columns;
    float squares = 0.0f;
    for (int i = threadIdx.x; i < columns; i += WARP_SIZE) {
        const float d = x[i] - mean;
        squares += d * d;
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        squares += __shfl_xor_sync(0xffffffff, squares, offset);
    }
    const float scale = rsqrtf(squares / columns + 1e-5f);
    for (int i = threadIdx.x; i < columns; i += WARP_SIZE) {
        out[(size_t)row * columns + i] = (x[i] - mean) * scale;
    }
}

void layernorm(const float* in, float* out, int rows, int columns)
{
    dim3 block(WARP_SIZE, 4);
    layernorm_warp_rows<<<(rows + 3) / 4, block>>>(in, out, rows, columns);
}
