// Block-generic: a grid-stride loop reads blockDim and gridDim, so any block size does the work.
#include <cuda_runtime.h>

__global__ void clamp_all(float* __restrict__ data, float low, float high, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)blockDim.x * gridDim.x) {
        data[i] = fminf(fmaxf(data[i], low), high);
    }
}

void clamp(float* data, float low, float high, size_t n)
{
    clamp_all<<<1024, 256>>>(data, low, high, n);
}
