// Shared-memory tree reduction that halves its stride from blockDim.x / 2: only a power-of-two
// block adds every element.
#include <cuda_runtime.h>

__global__ void reduce_halving(const float* __restrict__ in, float* __restrict__ partial, int n)
{
    extern __shared__ float scratch[];
    const unsigned tid = threadIdx.x;
    const unsigned i = blockIdx.x * blockDim.x + tid;
    scratch[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            scratch[tid] += scratch[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = scratch[0];
    }
}

void reduce(const float* in, float* partial, int n)
{
    const int threads = 256;
    reduce_halving<<<(n + threads - 1) / threads, threads, threads * sizeof(float)>>>(in, partial, n);
}
