// A register-hungry kernel squeezed by __launch_bounds__(1024, 2): 2 blocks of 1024 threads
// leave 32 registers per thread, fewer than the 64-entry accumulator needs, so ptxas spills.
#include <cuda_runtime.h>

constexpr int ACCUMULATORS = 64;

__global__ void __launch_bounds__(1024, 2) spilling_accumulate(const float* __restrict__ in, float* __restrict__ out, int rounds)
{
    __shared__ float staged[256];
    float acc[ACCUMULATORS];
#pragma unroll
    for (int a = 0; a < ACCUMULATORS; ++a) {
        acc[a] = in[threadIdx.x + a * blockDim.x];
    }
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int a = 0; a < ACCUMULATORS; ++a) {
            acc[a] = acc[a] * acc[(a + 1) % ACCUMULATORS] + acc[(a + 7) % ACCUMULATORS];
        }
    }
    float total = 0.0f;
#pragma unroll
    for (int a = 0; a < ACCUMULATORS; ++a) {
        total += acc[a];
    }
    staged[threadIdx.x % 256] = total;
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = staged[(threadIdx.x + 1) % 256];
}

void accumulate(const float* in, float* out, int blocks, int rounds)
{
    spilling_accumulate<<<blocks, 1024>>>(in, out, rounds);
}
