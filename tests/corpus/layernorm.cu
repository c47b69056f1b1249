// Layer normalisation over the last dimension, one warp per row (Welford's algorithm for a
// numerically stable mean and variance, merged across lanes with shuffles).
#include <cuda_runtime.h>

struct Moments {
    float count;
    float mean;
    float m2;
};

__device__ Moments merge(Moments a, Moments b)
{
    float count = a.count + b.count;
    if (count == 0.0f) {
        return a;
    }
    float delta = b.mean - a.mean;
    float mean = a.mean + delta * (b.count / count);
    float m2 = a.m2 + b.m2 + delta * delta * (a.count * b.count / count);
    return {count, mean, m2};
}

__global__ void layer_norm(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta, float* __restrict__ y, int rows, int width, float epsilon)
{
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) {
        return;
    }
    const float* in = x + (size_t)row * width;
    Moments m = {0.0f, 0.0f, 0.0f};
    for (int j = lane; j < width; j += 32) {
        float value = in[j];
        m.count += 1.0f;
        float delta = value - m.mean;
        m.mean += delta / m.count;
        m.m2 += delta * (value - m.mean);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        Moments other;
        other.count = __shfl_xor_sync(0xffffffffu, m.count, offset);
        other.mean = __shfl_xor_sync(0xffffffffu, m.mean, offset);
        other.m2 = __shfl_xor_sync(0xffffffffu, m.m2, offset);
        m = merge(m, other);
    }
    float inv_std = rsqrtf(m.m2 / width + epsilon);
    float* out = y + (size_t)row * width;
    for (int j = lane; j < width; j += 32) {
        out[j] = (in[j] - m.mean) * inv_std * gamma[j] + beta[j];
    }
}

void normalize_rows(const float* x, const float* gamma, const float* beta, float* y, int rows, int width)
{
    const int warps_per_block = 4;
    dim3 block(32 * warps_per_block);
    dim3 grid((rows + warps_per_block - 1) / warps_per_block);
    layer_norm<<<grid, block>>>(x, gamma, beta, y, rows, width, 1e-5f);
}
