// Naive matrix transpose: reads are coalesced, writes stride by the matrix height.
#include <cuda_runtime.h>

__global__ void transpose_naive(float* __restrict__ out, const float* __restrict__ in, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        out[x * height + y] = in[y * width + x];
    }
}

void transpose(float* out, const float* in, int width, int height)
{
    dim3 block(32, 8);
    dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
    transpose_naive<<<grid, block>>>(out, in, width, height);
}
