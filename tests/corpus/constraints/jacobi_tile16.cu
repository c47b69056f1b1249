// Jacobi sweep written for exactly 16x16 threads: the shared tile carries a one-cell halo and the
// threads on the tile's edge (index 0 and 15) load it. Nothing reads blockDim.
#include <cuda_runtime.h>

__global__ void jacobi_tile16(const float* __restrict__ in, float* __restrict__ out, int width, int height)
{
    __shared__ float tile[18][18];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int x = blockIdx.x * 16 + tx;
    const int y = blockIdx.y * 16 + ty;
    const bool inside = x < width && y < height;
    tile[ty + 1][tx + 1] = inside ? in[y * width + x] : 0.0f;
    if (tx == 0) {
        tile[ty + 1][0] = x > 0 && inside ? in[y * width + x - 1] : 0.0f;
    }
    if (threadIdx.x == 15) {
        tile[ty + 1][17] = x + 1 < width && inside ? in[y * width + x + 1] : 0.0f;
    }
    if (ty == 0) {
        tile[0][tx + 1] = y > 0 && inside ? in[(y - 1) * width + x] : 0.0f;
    }
    if (threadIdx.y == 15) {
        tile[17][tx + 1] = y + 1 < height && inside ? in[(y + 1) * width + x] : 0.0f;
    }
    __syncthreads();
    if (inside) {
        out[y * width + x] = 0.25f * (tile[ty][tx + 1] + tile[ty + 2][tx + 1] +
                                      tile[ty + 1][tx] + tile[ty + 1][tx + 2]);
    }
}

void sweep(const float* in, float* out, int width, int height)
{
    dim3 block(16, 16);
    dim3 grid((width + 15) / 16, (height + 15) / 16);
    jacobi_tile16<<<grid, block>>>(in, out, width, height);
}
