// Per-thread histogram of 4-bit codes: the array is indexed by data, known only at run time,
// so it cannot live in registers and goes to local memory (ptxas reports a stack frame).
#include <cuda_runtime.h>

constexpr int CODES = 16;
constexpr int CODES_PER_THREAD = 64;

__global__ void most_frequent_code(const unsigned char* __restrict__ codes, unsigned char* __restrict__ mode, int n_threads)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_threads) {
        return;
    }
    int counts[CODES] = {};
    for (int j = 0; j < CODES_PER_THREAD; ++j) {
        counts[codes[t * CODES_PER_THREAD + j] & (CODES - 1)] += 1;
    }
    int best = 0;
    for (int c = 1; c < CODES; ++c) {
        if (counts[c] > counts[best]) {
            best = c;
        }
    }
    mode[t] = static_cast<unsigned char>(best);
}

void modes(const unsigned char* codes, unsigned char* mode, int n_threads)
{
    most_frequent_code<<<(n_threads + 255) / 256, 256>>>(codes, mode, n_threads);
}
