// Naive SGEMM, C = alpha*A*B + beta*C (row-major), one output element per thread.
#include <cuda_runtime.h>

__global__ void sgemm_naive(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p) {
            acc += a[row * k + p] * b[p * n + col];
        }
        c[row * n + col] = alpha * acc + beta * c[row * n + col];
    }
}

void gemm(int m, int n, int k, const float* a, const float* b, float* c)
{
    dim3 block(16, 16);
    dim3 grid((n + block.x - 1) / block.x, (m + block.y - 1) / block.y);
    sgemm_naive<<<grid, block>>>(m, n, k, 1.0f, a, b, 0.0f, c);
}
