// Block size as a template parameter, instantiated for several sizes and chosen at run time:
// the way many libraries pin the block shape into the code.
#include <cuda_runtime.h>

template <int BLOCK, int ITEMS>
__global__ void scale_items(float* __restrict__ data, float factor, int n)
{
    int base = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
    for (int item = 0; item < ITEMS; ++item) {
        int i = base + item * BLOCK;
        if (i < n) {
            data[i] *= factor;
        }
    }
}

void scale(float* data, float factor, int n)
{
    if (n < (1 << 16)) {
        scale_items<128, 1><<<(n + 127) / 128, 128>>>(data, factor, n);
    } else if (n < (1 << 22)) {
        scale_items<256, 4><<<(n + 1023) / 1024, 256>>>(data, factor, n);
    } else {
        scale_items<512, 8><<<(n + 4095) / 4096, 512>>>(data, factor, n);
    }
}
