// blockDim used as the stride over a shared buffer sized for 512 values: each thread fills two
// slots, so no more than 256 threads fit.
#include <cuda_runtime.h>

__global__ void pair_sums(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float buffer[512];
    const int base = blockIdx.x * 512;
    buffer[threadIdx.x] = base + threadIdx.x < n ? in[base + threadIdx.x] : 0.0f;
    buffer[threadIdx.x + blockDim.x] =
        base + threadIdx.x + blockDim.x < n ? in[base + threadIdx.x + blockDim.x] : 0.0f;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) {
        out[i] = buffer[2 * threadIdx.x] + buffer[2 * threadIdx.x + 1];
    }
}

void sums(const float* in, float* out, int n)
{
    pair_sums<<<(n + 511) / 512, 256>>>(in, out, n);
}
