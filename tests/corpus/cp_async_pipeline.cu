// flipflop-test: arch=sm_80+
// Double-buffered moving-window sum with asynchronous global->shared copies (cp.async through
// the pipeline primitives): the copy of tile t+1 overlaps the arithmetic on tile t.
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

constexpr int TILE = 256;
constexpr int WINDOW = 8;

__global__ void window_sum(const float* __restrict__ in, float* __restrict__ out, int tiles_per_block)
{
    __shared__ alignas(16) float stage[2][TILE + WINDOW];
    const float* block_in = in + (size_t)blockIdx.x * tiles_per_block * TILE;
    float* block_out = out + (size_t)blockIdx.x * tiles_per_block * TILE;

    auto issue = [&](int tile, int slot) {
        for (int j = threadIdx.x; j < TILE + WINDOW; j += blockDim.x) {
            __pipeline_memcpy_async(&stage[slot][j], block_in + tile * TILE + j, sizeof(float));
        }
        __pipeline_commit();
    };

    issue(0, 0);
    for (int tile = 0; tile < tiles_per_block; ++tile) {
        int slot = tile & 1;
        if (tile + 1 < tiles_per_block) {
            issue(tile + 1, slot ^ 1);
            __pipeline_wait_prior(1);
        } else {
            __pipeline_wait_prior(0);
        }
        __syncthreads();
        for (int j = threadIdx.x; j < TILE; j += blockDim.x) {
            float sum = 0.0f;
#pragma unroll
            for (int w = 0; w < WINDOW; ++w) {
                sum += stage[slot][j + w];
            }
            block_out[tile * TILE + j] = sum;
        }
        __syncthreads();
    }
}

void moving_sums(const float* in, float* out, int blocks, int tiles_per_block)
{
    window_sum<<<blocks, 128>>>(in, out, tiles_per_block);
}
