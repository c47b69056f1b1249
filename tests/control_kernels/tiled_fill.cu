// A 2-D stencil that first stages its input tile (with a border) in shared memory, the way
// tunable image kernels do: every size is a compile-time constant, and the fill loops start
// at the thread's index and step by the block size. nvcc keeps the outer loop with a copied
// counter and unrolls the inner one by 4 behind a remainder selected by `& 3`.
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 8
#endif
#ifndef tile_size_x
#define tile_size_x 1
#endif
#ifndef tile_size_y
#define tile_size_y 1
#endif
#ifndef radius
#define radius 7
#endif

#define width 4096
#define padded_width (width + 2 * radius)
#define rows_needed (block_size_y * tile_size_y + 2 * radius)
#define columns_needed (block_size_x * tile_size_x + 2 * radius)

__global__ void tiled_fill(float* out, const float* in, const float* weights)
{
    __shared__ float staged[rows_needed][columns_needed];
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int top = blockIdx.y * block_size_y * tile_size_y;
    int left = blockIdx.x * block_size_x * tile_size_x;
#pragma unroll
    for (int i = ty; i < rows_needed; i += block_size_y) {
#pragma unroll
        for (int j = tx; j < columns_needed; j += block_size_x) {
            staged[i][j] = in[(top + i) * padded_width + left + j];  // fill
        }
    }
    __syncthreads();
#pragma unroll
    for (int yi = 0; yi < tile_size_y; yi++) {
#pragma unroll
        for (int xi = 0; xi < tile_size_x; xi++) {
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k <= 2 * radius; k++) {
                sum += weights[k] * staged[ty + yi * block_size_y + k][tx + xi * block_size_x + radius];
            }
            out[(top + ty + yi * block_size_y) * width + left + tx + xi * block_size_x] = sum;
        }
    }
}
