// Classic shared-memory tree reduction with the block size as a template parameter, so the
// loop over strides is fully unrolled; each thread first adds two elements while loading.
#include <cuda_runtime.h>

template <unsigned int BLOCK>
__global__ void reduce_tree(const float* __restrict__ input, float* __restrict__ partial, unsigned int n)
{
    __shared__ float scratch[BLOCK];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (BLOCK * 2) + tid;
    float value = 0.0f;
    if (i < n) {
        value = input[i];
    }
    if (i + BLOCK < n) {
        value += input[i + BLOCK];
    }
    scratch[tid] = value;
    __syncthreads();
#pragma unroll
    for (unsigned int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (tid < stride) {
            scratch[tid] += scratch[tid + stride];
        }
        __syncthreads();
    }
    if (tid == 0) {
        partial[blockIdx.x] = scratch[0];
    }
}

void reduce_partials(const float* input, float* partial, unsigned int n)
{
    constexpr unsigned int block = 256;
    unsigned int grid = (n + block * 2 - 1) / (block * 2);
    reduce_tree<block><<<grid, block>>>(input, partial, n);
}
