// Row-wise softmax with one warp per row (cooperative groups): each warp strides over its row
// three times (max, sum of exponentials, normalised write) and reduces with cg::reduce.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

constexpr int kThreadsPerBlock = 256;

__global__ void softmax_warp_rows(int rows, int columns, const float* input, float* output)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= rows) {
        return;
    }
    const float* in = input + (size_t)row * columns;
    float* out = output + (size_t)row * columns;

    float largest = in[0];
    for (int j = warp.thread_rank(); j < columns; j += warp.size()) {
        largest = fmaxf(largest, in[j]);
    }
    largest = cg::reduce(warp, largest, cg::greater<float>());

    float total = 0.0f;
    for (int j = warp.thread_rank(); j < columns; j += warp.size()) {
        total += __expf(in[j] - largest);
    }
    total = cg::reduce(warp, total, cg::plus<float>());

    for (int j = warp.thread_rank(); j < columns; j += warp.size()) {
        out[j] = __expf(in[j] - largest) / total;
    }
}

void softmax(int rows, int columns, const float* input, float* output)
{
    const int warps_per_block = kThreadsPerBlock / 32;
    dim3 grid((rows + warps_per_block - 1) / warps_per_block);
    dim3 block(kThreadsPerBlock);
    softmax_warp_rows<<<grid, block>>>(rows, columns, input, output);
}
