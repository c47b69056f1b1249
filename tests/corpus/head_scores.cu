// One block per attention head: each head's query·key dot product over HEAD_DIM features,
// reduced across the block with warp shuffles and shared memory. The launch uses a block much
// wider than the head, so most threads only take part in the reduction.
#include <cuda_runtime.h>

constexpr int HEAD_DIM = 64;
constexpr int HEADS = 1024;

__global__ void head_scores(const float* __restrict__ q, const float* __restrict__ k,
                            float* __restrict__ scores, float scale)
{
    __shared__ float partial[32];
    const int head = blockIdx.x;
    const int t = threadIdx.x;
    float value = 0.0f;
    if (t < HEAD_DIM) {
        value = q[head * HEAD_DIM + t] * k[head * HEAD_DIM + t];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    if (t % 32 == 0) {
        partial[t / 32] = value;
    }
    __syncthreads();
    if (t < 32) {
        value = t < blockDim.x / 32 ? partial[t] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) {
            value += __shfl_down_sync(0xffffffffu, value, offset);
        }
        if (t == 0) {
            scores[head] = value * scale;
        }
    }
}

void score_heads(const float* q, const float* k, float* scores)
{
    head_scores<<<HEADS, 1024>>>(q, k, scores, 0.125f);
}
