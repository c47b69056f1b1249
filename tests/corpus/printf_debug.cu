// A kernel that reports suspicious values with device printf (a call into the CUDA runtime's
// vprintf, with its arguments packed in a local buffer).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void check_finite(const float* values, int n, int* bad_count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float value = values[i];
        if (!isfinite(value)) {
            int seen = atomicAdd(bad_count, 1);
            if (seen < 16) {
                printf("block %d thread %d: values[%d] = %f\n", blockIdx.x, threadIdx.x, i, value);
            }
        }
    }
}

void report_non_finite(const float* values, int n, int* bad_count)
{
    check_finite<<<(n + 255) / 256, 256>>>(values, n, bad_count);
}
