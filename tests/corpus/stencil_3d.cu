// Seven-point Laplacian on a 3-D grid with a 3-D block; the centre plane of the block is
// staged in shared memory (with a one-point halo) because it is read five times.
#include <cuda_runtime.h>

constexpr int BX = 8;
constexpr int BY = 8;
constexpr int BZ = 4;

__global__ void laplacian_3d(const float* __restrict__ u, float* __restrict__ lap, int nx, int ny, int nz, float inv_h2)
{
    __shared__ float plane[BZ][BY + 2][BX + 2];
    int i = blockIdx.x * BX + threadIdx.x;
    int j = blockIdx.y * BY + threadIdx.y;
    int k = blockIdx.z * BZ + threadIdx.z;
    bool inside = i < nx && j < ny && k < nz;
    long c = ((long)k * ny + j) * nx + i;
    int tx = threadIdx.x + 1;
    int ty = threadIdx.y + 1;
    plane[threadIdx.z][ty][tx] = inside ? u[c] : 0.0f;
    if (threadIdx.x == 0 && i > 0 && inside) plane[threadIdx.z][ty][0] = u[c - 1];
    if (threadIdx.x == BX - 1 && i < nx - 1 && inside) plane[threadIdx.z][ty][BX + 1] = u[c + 1];
    if (threadIdx.y == 0 && j > 0 && inside) plane[threadIdx.z][0][tx] = u[c - nx];
    if (threadIdx.y == BY - 1 && j < ny - 1 && inside) plane[threadIdx.z][BY + 1][tx] = u[c + nx];
    __syncthreads();
    if (i > 0 && i < nx - 1 && j > 0 && j < ny - 1 && k > 0 && k < nz - 1) {
        long slab = (long)nx * ny;
        float sum = plane[threadIdx.z][ty][tx - 1] + plane[threadIdx.z][ty][tx + 1]
                  + plane[threadIdx.z][ty - 1][tx] + plane[threadIdx.z][ty + 1][tx]
                  + u[c - slab] + u[c + slab] - 6.0f * plane[threadIdx.z][ty][tx];
        lap[c] = sum * inv_h2;
    }
}

void laplacian(const float* u, float* lap, int nx, int ny, int nz, float h)
{
    dim3 block(BX, BY, BZ);
    dim3 grid((nx + BX - 1) / BX, (ny + BY - 1) / BY, (nz + BZ - 1) / BZ);
    laplacian_3d<<<grid, block>>>(u, lap, nx, ny, nz, 1.0f / (h * h));
}
