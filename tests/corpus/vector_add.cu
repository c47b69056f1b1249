// Element-wise vector addition, one element per thread, guarded against the ragged tail.
#include <cuda_runtime.h>

__global__ void vector_add(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}

void add_vectors(const float* a, const float* b, float* c, int n)
{
    dim3 block(128);
    dim3 grid((n + block.x - 1) / block.x);
    vector_add<<<grid, block>>>(a, b, c, n);
}
