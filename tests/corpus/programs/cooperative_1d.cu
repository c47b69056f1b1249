// Cooperative groups in a kernel launched with a 1-D block and a runtime grid: the kernel
// asks for `this_thread_block()` and its `thread_rank()`, which read every thread index
// component, but the launch is 1-D and so is the problem.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

namespace cg = cooperative_groups;

__global__ void block_sums(const float *__restrict__ in, float *__restrict__ sums, int n)
{
    __shared__ float partial[1024];
    cg::thread_block block = cg::this_thread_block();
    const unsigned int t = block.thread_rank();
    const unsigned int i = block.group_index().x * block.size() + t;
    partial[t] = i < n ? in[i] : 0.0f;
    block.sync();
    for (unsigned int gap = block.size() / 2; gap > 0; gap >>= 1) {
        if (t < gap) {
            partial[t] += partial[t + gap];
        }
        block.sync();
    }
    if (t == 0) {
        sums[block.group_index().x] = partial[0];
    }
}

void sum_blocks(const float *in, float *sums, int n)
{
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    block_sums<<<blocks, threads>>>(in, sums, n);
}
