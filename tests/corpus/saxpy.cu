// Single-precision a*x + y with a grid-stride loop: every thread walks the array in steps of
// the whole grid, so any grid size covers any n.
#include <cuda_runtime.h>

__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        y[i] = a * x[i] + y[i];
    }
}

void run_saxpy(int n, float a, const float* x, float* y, cudaStream_t stream)
{
    int block = 256;
    int grid = (n + block - 1) / block;
    saxpy<<<grid, block, 0, stream>>>(n, a, x, y);
}
