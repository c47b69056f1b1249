// Five-point Jacobi step on a 2-D grid (one output point per thread, boundary left alone).
#include <cuda_runtime.h>

__global__ void jacobi_2d(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i > 0 && i < nx - 1 && j > 0 && j < ny - 1) {
        int c = j * nx + i;
        out[c] = 0.25f * (in[c - 1] + in[c + 1] + in[c - nx] + in[c + nx]);
    }
}

void jacobi_step(const float* in, float* out, int nx, int ny)
{
    dim3 block(16, 16);
    dim3 grid((nx + 15) / 16, (ny + 15) / 16);
    jacobi_2d<<<grid, block>>>(in, out, nx, ny);
}
