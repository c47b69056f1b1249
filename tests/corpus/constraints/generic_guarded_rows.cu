// Block-generic above the row width: one block per row, threads past the width idle. Every
// block of at least `width` threads does the same work.
#include <cuda_runtime.h>

__global__ void normalise_rows(float* __restrict__ rows, int width)
{
    if (threadIdx.x < width) {
        float* row = rows + (size_t)blockIdx.x * width;
        row[threadIdx.x] = row[threadIdx.x] / (1.0f + fabsf(row[threadIdx.x]));
    }
}

void normalise(float* rows, int count)
{
    const int width = 128;
    normalise_rows<<<count, 1024>>>(rows, width);
}
