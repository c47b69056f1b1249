// Each block covers 256 elements with 64 threads, four apiece, at literal offsets: the code is
// written for 64 threads and never reads blockDim.
#include <cuda_runtime.h>

__global__ void axpy_four(float a, const float* __restrict__ x, float* __restrict__ y, int n)
{
    const int base = blockIdx.x * 256 + threadIdx.x;
#pragma unroll
    for (int part = 0; part < 4; ++part) {
        const int i = base + part * 64;
        if (i < n) {
            y[i] += a * x[i];
        }
    }
}

void axpy(float a, const float* x, float* y, int n)
{
    axpy_four<<<(n + 255) / 256, 64>>>(a, x, y, n);
}
