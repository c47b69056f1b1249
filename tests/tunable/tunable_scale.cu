// Kernel Tuner compiles this file as it is, without a host launch (a corpus file needs one).
// A kernel written for Kernel Tuner: the block size and the items per thread are compile-time
// tunables with #ifndef defaults, the grid covers the problem with block_size_x * tile_size
// items per block.
#ifndef block_size_x
#define block_size_x 256
#endif
#ifndef tile_size
#define tile_size 1
#endif

// flipflop: tune block_size_x=32..1024:32 tile_size=1,2,4,8
// flipflop: problem=16777216 grid_div_x=block_size_x,tile_size
extern "C" __global__ void tiled_scale(float* out, const float* in, float factor, int n)
{
    int first = blockIdx.x * block_size_x * tile_size + threadIdx.x;
#pragma unroll
    for (int t = 0; t < tile_size; t++) {
        int i = first + t * block_size_x;
        if (i < n) {
            out[i] = factor * in[i];
        }
    }
}
