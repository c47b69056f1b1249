// One block per row, written for the widest row the code might meet: 1024 threads, of which
// only the first `width` do anything. The host knows the width, a constant of the program;
// a block that still covers it does the same work with far fewer idle threads.
#include <cuda_runtime.h>

__global__ void normalize_rows(const float *__restrict__ in, float *__restrict__ out,
                               const float *__restrict__ gain, int width)
{
    const int row = blockIdx.x;
    if (threadIdx.x < width) {
        const float v = in[(size_t)row * width + threadIdx.x];
        float scaled = v * gain[threadIdx.x];
        for (int k = 0; k < 16; ++k) {
            scaled = scaled * 0.5f + v * 0.25f;
        }
        out[(size_t)row * width + threadIdx.x] = scaled;
    }
}

void normalize(const float *in, float *out, const float *gain)
{
    const int rows = 16384;
    const int width = 128;
    normalize_rows<<<rows, 1024>>>(in, out, gain, width);
}
