// A matrix product written as a template and tuned the way Kernel Tuner tunes one: the script
// names the instance (`tuned_matmul<float>`) and Kernel Tuner instantiates it; this file never
// does. The tunables are block_size_x/y and tile_size_y (rows of C per thread).
#ifndef block_size_x
#define block_size_x 16
#endif
#ifndef block_size_y
#define block_size_y 16
#endif
#ifndef tile_size_y
#define tile_size_y 1
#endif

template <typename T>
__global__ void tuned_matmul(T* __restrict__ C, const T* __restrict__ A,
                             const T* __restrict__ B, int n)
{
    int x = blockIdx.x * block_size_x + threadIdx.x;
    int y = (blockIdx.y * block_size_y + threadIdx.y) * tile_size_y;
    T sum[tile_size_y];
#pragma unroll
    for (int t = 0; t < tile_size_y; t++) {
        sum[t] = 0;
    }
    for (int k = 0; k < n; k++) {
        T b = B[k * n + x];
#pragma unroll
        for (int t = 0; t < tile_size_y; t++) {
            sum[t] += A[(y + t) * n + k] * b;
        }
    }
#pragma unroll
    for (int t = 0; t < tile_size_y; t++) {
        C[(y + t) * n + x] = sum[t];
    }
}

// A block size given as a template argument, as in SGEMM tutorials (`sgemm_block<32>`).
template <int BLOCK>
__global__ void scale_block(float* __restrict__ out, const float* __restrict__ in, int n)
{
    int i = blockIdx.x * BLOCK + threadIdx.x;
    if (i < n) {
        out[i] = 2.0f * in[i];
    }
}
