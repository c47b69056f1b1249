// Row-wise softmax, one block per row: a block-wide max, then a block-wide sum of exponentials
// (both via warp shuffles and a small shared array), then the normalised write.
#include <cuda_runtime.h>
#include <float.h>

__device__ float block_reduce_max(float value, float* shared)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    if (threadIdx.x % 32 == 0) {
        shared[threadIdx.x / 32] = value;
    }
    __syncthreads();
    value = threadIdx.x < blockDim.x / 32 ? shared[threadIdx.x] : -FLT_MAX;
    for (int offset = 16; offset > 0; offset /= 2) {
        value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    __syncthreads();
    return value;
}

__device__ float block_reduce_sum(float value, float* shared)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_xor_sync(0xffffffffu, value, offset);
    }
    if (threadIdx.x % 32 == 0) {
        shared[threadIdx.x / 32] = value;
    }
    __syncthreads();
    value = threadIdx.x < blockDim.x / 32 ? shared[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_xor_sync(0xffffffffu, value, offset);
    }
    __syncthreads();
    return value;
}

__global__ void softmax_rows(const float* __restrict__ logits, float* __restrict__ probabilities, int columns)
{
    __shared__ float partial[32];
    const float* row_in = logits + (size_t)blockIdx.x * columns;
    float* row_out = probabilities + (size_t)blockIdx.x * columns;

    float row_max = -FLT_MAX;
    for (int j = threadIdx.x; j < columns; j += blockDim.x) {
        row_max = fmaxf(row_max, row_in[j]);
    }
    row_max = block_reduce_max(row_max, partial);

    float row_sum = 0.0f;
    for (int j = threadIdx.x; j < columns; j += blockDim.x) {
        row_sum += __expf(row_in[j] - row_max);
    }
    row_sum = block_reduce_sum(row_sum, partial);

    float scale = 1.0f / row_sum;
    for (int j = threadIdx.x; j < columns; j += blockDim.x) {
        row_out[j] = __expf(row_in[j] - row_max) * scale;
    }
}

void softmax(const float* logits, float* probabilities, int rows, int columns)
{
    softmax_rows<<<rows, 256>>>(logits, probabilities, columns);
}
