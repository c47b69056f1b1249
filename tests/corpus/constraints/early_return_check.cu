// Kernels that refuse any other block: an early return on the wrong size, and a trap when the
// block is not a whole number of 64-thread groups.
#include <cuda_runtime.h>

__global__ void histogram_256(const unsigned char* __restrict__ data, unsigned int* __restrict__ bins, int n)
{
    if (blockDim.x != 256) {
        return;
    }
    __shared__ unsigned int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}

__global__ void pairs_of_groups(float* __restrict__ data, int n)
{
    if (blockDim.x % 64 != 0) {
        __trap();
    }
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] = data[i] * 2.0f + 1.0f;
    }
}

void run(const unsigned char* data, unsigned int* bins, float* values, int n)
{
    histogram_256<<<64, 256>>>(data, bins, n);
    pairs_of_groups<<<(n + 127) / 128, 128>>>(values, n);
}
