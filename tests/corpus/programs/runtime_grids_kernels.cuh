// Row statistics for runtime_grids.cu, in a header of their own as libraries keep them.
#pragma once
#include <cuda_runtime.h>

// One block per row: the mean of each of the rows of C values, the block striding over the row
// and reducing its partial sums in shared memory.
template <int THREADS>
__global__ void row_means(const float *inp, float *mean, int C)
{
    __shared__ float partial[THREADS];
    const float *x = inp + (size_t)blockIdx.x * C;
    float sum = 0.0f;
#pragma unroll 1
    for (int i = threadIdx.x; i < C; i += THREADS) {
        sum += x[i];
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int gap = THREADS / 2; gap > 0; gap /= 2) {
        if (threadIdx.x < gap) {
            partial[threadIdx.x] += partial[threadIdx.x + gap];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = partial[0] / C;
    }
}
