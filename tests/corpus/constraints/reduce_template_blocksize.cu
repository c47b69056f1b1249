// Reduction in the style of the classic CUDA samples: the block size is a template argument that
// unrolls the tree, while the indexing reads blockDim; the two must agree.
#include <cuda_runtime.h>

template <unsigned int blockSize>
__global__ void reduce_unrolled(const float* __restrict__ in, float* __restrict__ out, unsigned int n)
{
    __shared__ float sdata[blockSize];
    const unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float sum = i < n ? in[i] : 0.0f;
    if (i + blockDim.x < n) {
        sum += in[i + blockDim.x];
    }
    sdata[tid] = sum;
    __syncthreads();
    if (blockSize >= 512 && tid < 256) { sdata[tid] = sum = sum + sdata[tid + 256]; } __syncthreads();
    if (blockSize >= 256 && tid < 128) { sdata[tid] = sum = sum + sdata[tid + 128]; } __syncthreads();
    if (blockSize >= 128 && tid < 64) { sdata[tid] = sum = sum + sdata[tid + 64]; } __syncthreads();
    if (tid < 32) {
        if (blockSize >= 64) sum += sdata[tid + 32];
        for (int offset = 16; offset > 0; offset /= 2) {
            sum += __shfl_down_sync(0xffffffff, sum, offset);
        }
    }
    if (tid == 0) {
        out[blockIdx.x] = sum;
    }
}

void reduce(const float* in, float* out, unsigned int n)
{
    const unsigned int blocks = (n + 2 * 256 - 1) / (2 * 256);
    reduce_unrolled<256><<<blocks, 256>>>(in, out, n);
}
