// Launches whose sizes the host decides at run time, the way training code writes them: the
// batch, sequence and channel counts arrive as function arguments from a caller in another
// file, or from the command line.
#include <cuda_runtime.h>
#include <cstdlib>

#include "runtime_grids_kernels.cuh"

#define WARP_SIZE 32

// One block per (batch, head): a softmax over the T scores of each query row.
__global__ void head_softmax(float *att, int B, int NH, int T)
{
    const int b = blockIdx.x;
    const int h = blockIdx.y;
    float *rows = att + ((size_t)b * NH + h) * T * T;
    for (int r = threadIdx.x; r < T; r += blockDim.x) {
        float *row = rows + (size_t)r * T;
        float largest = -1e30f;
        for (int j = 0; j < T; ++j) {
            largest = fmaxf(largest, row[j]);
        }
        float total = 0.0f;
        for (int j = 0; j < T; ++j) {
            row[j] = __expf(row[j] - largest);
            total += row[j];
        }
        for (int j = 0; j < T; ++j) {
            row[j] /= total;
        }
    }
}

// One thread per element.
__global__ void add_bias(float *out, const float *bias, int N, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N * C) {
        out[i] += bias[i % C];
    }
}

// A 2-D block: x walks channels, y walks rows.
__global__ void scale_rows(float *out, const float *scale, int rows, int C)
{
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= rows) {
        return;
    }
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        out[(size_t)row * C + c] *= scale[row];
    }
}

void attention_softmax(float *att, int B, int NH, int T)
{
    dim3 grid_dim(B, NH);
    head_softmax<<<grid_dim, 256>>>(att, B, NH, T);
}

void bias_forward(float *out, const float *bias, int N, int C, int block_size)
{
    const int grid_size = (N * C + block_size - 1) / block_size;
    add_bias<<<grid_size, block_size>>>(out, bias, N, C);
}

void layer_means(const float *inp, float *mean, int N, int C)
{
    const int threads = 4 * WARP_SIZE;
    row_means<threads><<<N, threads>>>(inp, mean, C);
}

void scale_forward(float *out, const float *scale, int rows, int C, int block_size)
{
    const int block_y = block_size / WARP_SIZE;
    scale_rows<<<(rows + block_y - 1) / block_y, dim3(WARP_SIZE, block_y)>>>(out, scale, rows, C);
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 1024;
    float *out;
    float *bias;
    cudaMalloc(&out, sizeof(float) * n * 768);
    cudaMalloc(&bias, sizeof(float) * 768);
    add_bias<<<(n * 768 + 255) / 256, 256>>>(out, bias, n, 768);
    cudaDeviceSynchronize();
    return 0;
}
