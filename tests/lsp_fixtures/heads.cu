// One block per attention head scales that head's HEAD_DIM values: the grid is fixed by the
// number of heads, so threads beyond HEAD_DIM in a block only idle at the guard.
#include <cuda_runtime.h>

constexpr int kHeadDim = 64;
constexpr int kNumHeads = 8192;

__global__ void scale_heads(float* data, const float* scale, int head_dim)
{
    int head = blockIdx.x;
    int i = threadIdx.x;
    if (i < head_dim) {
        float* row = data + head * head_dim;
        row[i] = row[i] * scale[head];
    }
}

void launch(float* data, const float* scale)
{
    scale_heads<<<kNumHeads, 1024>>>(data, scale, kHeadDim);
}
