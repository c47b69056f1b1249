// The kernel checks its block against a size passed at run time: which blocks work depends on the
// caller, and FlipFlop cannot tell.
#include <cuda_runtime.h>

__global__ void gather_rows(const float* __restrict__ in, float* __restrict__ out, int row_length, int expected_threads)
{
    if (blockDim.x != expected_threads) {
        return;
    }
    const int i = blockIdx.x * row_length + threadIdx.x;
    for (int j = i; j < (blockIdx.x + 1) * row_length; j += blockDim.x) {
        out[j] = in[j] * 0.5f;
    }
}

void gather(const float* in, float* out, int rows, int row_length)
{
    gather_rows<<<rows, 128>>>(in, out, row_length, 128);
}
