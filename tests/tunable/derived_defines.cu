// A reduction whose items per thread are computed from two tunables, as Kernel Tuner's
// `defines` computes them (`ITEMS_PER_THREAD = items_per_block // block_size_x`): the kernel
// does not compile without that definition.
// flipflop: tune block_size_x=64,128 items_per_block=512,1024
// flipflop: define ITEMS_PER_THREAD=items_per_block//block_size_x
// flipflop: problem=1048576 grid_div_x=items_per_block
__global__ void sum_items(float* __restrict__ out, const float* __restrict__ in)
{
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS_PER_THREAD; i++) {
        total += in[blockIdx.x * items_per_block + i * block_size_x + threadIdx.x];
    }
    out[blockIdx.x * block_size_x + threadIdx.x] = total;
}
