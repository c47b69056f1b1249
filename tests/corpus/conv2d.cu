// 2-D convolution of a single-channel image with a small filter held in constant memory
// (every thread of a warp reads the same coefficient, which constant memory broadcasts).
#include <cuda_runtime.h>

constexpr int MAX_RADIUS = 7;
__constant__ float filter[(2 * MAX_RADIUS + 1) * (2 * MAX_RADIUS + 1)];

__global__ void convolve_2d(const float* __restrict__ image, float* __restrict__ result, int width, int height, int radius)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) {
        return;
    }
    int side = 2 * radius + 1;
    float sum = 0.0f;
    for (int dy = -radius; dy <= radius; ++dy) {
        int yy = min(max(y + dy, 0), height - 1);
        for (int dx = -radius; dx <= radius; ++dx) {
            int xx = min(max(x + dx, 0), width - 1);
            sum += filter[(dy + radius) * side + dx + radius] * image[yy * width + xx];
        }
    }
    result[y * width + x] = sum;
}

void convolve(const float* image, float* result, const float* host_filter, int width, int height, int radius)
{
    int side = 2 * radius + 1;
    cudaMemcpyToSymbol(filter, host_filter, sizeof(float) * side * side);
    dim3 block(32, 8);
    dim3 grid((width + 31) / 32, (height + 7) / 8);
    convolve_2d<<<grid, block>>>(image, result, width, height, radius);
}
