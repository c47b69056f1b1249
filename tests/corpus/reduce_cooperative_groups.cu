// Maximum reduction written with cooperative groups: a 32-thread tile reduces with
// cg::reduce, tile leaders publish to shared memory, the first tile finishes the block.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

__global__ void max_reduce(const float* __restrict__ input, float* __restrict__ block_max, int n)
{
    __shared__ float tile_max[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);

    float best = -3.402823466e38f;
    for (int i = block.group_index().x * block.size() + block.thread_rank(); i < n;
         i += gridDim.x * block.size()) {
        best = fmaxf(best, input[i]);
    }
    best = cg::reduce(tile, best, cg::greater<float>());
    if (tile.thread_rank() == 0) {
        tile_max[tile.meta_group_rank()] = best;
    }
    block.sync();
    if (tile.meta_group_rank() == 0) {
        unsigned int tiles = tile.meta_group_size();
        best = tile.thread_rank() < tiles ? tile_max[tile.thread_rank()] : -3.402823466e38f;
        best = cg::reduce(tile, best, cg::greater<float>());
        if (tile.thread_rank() == 0) {
            block_max[block.group_index().x] = best;
        }
    }
}

void block_maxima(const float* input, float* block_max, int n)
{
    dim3 block(256);
    dim3 grid(120);
    max_reduce<<<grid, block>>>(input, block_max, n);
}
