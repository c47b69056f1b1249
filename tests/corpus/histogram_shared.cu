// 256-bin byte histogram privatised per block in shared memory: shared atomics during the
// pass, one global atomic per bin per block at the end.
#include <cuda_runtime.h>

constexpr int BINS = 256;

__global__ void histogram_256(const unsigned char* __restrict__ data, size_t n, unsigned int* __restrict__ bins)
{
    __shared__ unsigned int local_bins[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        local_bins[b] = 0;
    }
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        atomicAdd(&local_bins[data[i]], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
        unsigned int count = local_bins[b];
        if (count != 0) {
            atomicAdd(&bins[b], count);
        }
    }
}

void byte_histogram(const unsigned char* data, size_t n, unsigned int* bins, int sm_count)
{
    histogram_256<<<sm_count * 4, 512>>>(data, n, bins);
}
