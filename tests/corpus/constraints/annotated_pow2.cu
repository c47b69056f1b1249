// A bitonic sort of one block's keys: the partner index `tid ^ j` needs a power-of-two block,
// which the code does not show in a form FlipFlop reads; the annotation says so.
#include <cuda_runtime.h>

// flipflop: block_x=pow2
__global__ void bitonic_block(float* __restrict__ keys)
{
    extern __shared__ float shared_keys[];
    const unsigned tid = threadIdx.x;
    float* block_keys = keys + blockIdx.x * blockDim.x;
    shared_keys[tid] = block_keys[tid];
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            const unsigned partner = tid ^ j;
            if (partner > tid) {
                const bool ascending = (tid & k) == 0;
                const float a = shared_keys[tid];
                const float b = shared_keys[partner];
                if ((a > b) == ascending) {
                    shared_keys[tid] = b;
                    shared_keys[partner] = a;
                }
            }
            __syncthreads();
        }
    }
    block_keys[tid] = shared_keys[tid];
}

void sort_blocks(float* keys, int blocks)
{
    bitonic_block<<<blocks, 512, 512 * sizeof(float)>>>(keys);
}
