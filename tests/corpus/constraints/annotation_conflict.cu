// An annotation that asks for a block the code refuses: the assert pins 16 threads in x.
#include <cassert>
#include <cuda_runtime.h>

// flipflop: block=32x32
__global__ void blur16(const float* __restrict__ in, float* __restrict__ out, int width)
{
    assert(blockDim.x == 16);
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    out[y * width + x] = 0.5f * (in[y * width + x] + in[y * width + (x + 1) % width]);
}

void blur(const float* in, float* out, int width, int height)
{
    blur16<<<dim3(width / 16, height / 16), dim3(16, 16)>>>(in, out, width);
}
