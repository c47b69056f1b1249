// Block sum through full-mask warp shuffles: every warp must be whole.
#include <cuda_runtime.h>

__global__ void block_sums(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float warp_sums[32];
    float value = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        value += in[i];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_down_sync(0xffffffff, value, offset);
    }
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    if (lane == 0) {
        warp_sums[warp] = value;
    }
    __syncthreads();
    if (warp == 0) {
        value = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset /= 2) {
            value += __shfl_down_sync(0xffffffff, value, offset);
        }
        if (lane == 0) {
            atomicAdd(out, value);
        }
    }
}

void total(const float* in, float* out, int n)
{
    block_sums<<<120, 256>>>(in, out, n);
}
