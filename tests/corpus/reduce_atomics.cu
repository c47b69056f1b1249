// Dot product with one global atomic per thread: the simplest (and most contended) way to
// reduce, kept as the baseline the other reductions improve on.
#include <cuda_runtime.h>

__global__ void dot_atomic(const float* x, const float* y, float* result, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(result, x[i] * y[i]);
    }
}

__global__ void count_positive(const int* values, unsigned int* count, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && values[i] > 0) {
        atomicInc(count, 0xffffffffu);
    }
}

void dot(const float* x, const float* y, float* result, const int* values, unsigned int* count, int n)
{
    int block = 256;
    dot_atomic<<<(n + block - 1) / block, block>>>(x, y, result, n);
    count_positive<<<(n + 127) / 128, 128>>>(values, count, n);
}
