// Sum reduction: each warp reduces with register shuffles, warp leaders combine in shared
// memory, and one atomic per block adds the block's partial sum to the result.
#include <cuda_runtime.h>

__device__ __forceinline__ float warp_sum(float value)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}

__global__ void reduce_shuffle(const float* __restrict__ input, float* result, int n)
{
    __shared__ float warp_totals[32];
    float sum = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        sum += input[i];
    }
    sum = warp_sum(sum);
    int lane = threadIdx.x % warpSize;
    int warp = threadIdx.x / warpSize;
    if (lane == 0) {
        warp_totals[warp] = sum;
    }
    __syncthreads();
    if (warp == 0) {
        int warps = (blockDim.x + warpSize - 1) / warpSize;
        sum = lane < warps ? warp_totals[lane] : 0.0f;
        sum = warp_sum(sum);
        if (lane == 0) {
            atomicAdd(result, sum);
        }
    }
}

void sum_array(const float* input, float* result, int n)
{
    const int threads = 512;
    int blocks = (n + threads - 1) / threads;
    if (blocks > 1024) {
        blocks = 1024;
    }
    reduce_shuffle<<<blocks, threads>>>(input, result, n);
}
