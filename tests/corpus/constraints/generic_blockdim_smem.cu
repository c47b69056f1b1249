// Block-generic: the shared buffer is sized at launch from the block, and the reduction folds
// any block size (the partner is checked against blockDim).
#include <cuda_runtime.h>

__global__ void block_max(const float* __restrict__ in, float* __restrict__ out, int n)
{
    extern __shared__ float values[];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    values[threadIdx.x] = i < n ? in[i] : -INFINITY;
    __syncthreads();
    for (unsigned active = blockDim.x; active > 1; active = (active + 1) / 2) {
        const unsigned half = (active + 1) / 2;
        if (threadIdx.x < active / 2 && threadIdx.x + half < blockDim.x) {
            values[threadIdx.x] = fmaxf(values[threadIdx.x], values[threadIdx.x + half]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[blockIdx.x] = values[0];
    }
}

void maxima(const float* in, float* out, int n)
{
    const int threads = 192;
    block_max<<<(n + threads - 1) / threads, threads, threads * sizeof(float)>>>(in, out, n);
}
