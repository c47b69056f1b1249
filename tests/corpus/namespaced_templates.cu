// A kernel template inside nested namespaces, instantiated for two element types and two
// vector widths: its mangled names are long and its demangled names are what users recognise.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace imaging {
namespace filters {

template <typename T, int WIDTH>
__global__ void clamp_brightness(T* __restrict__ pixels, int count, T low, T high)
{
    int first = (blockIdx.x * blockDim.x + threadIdx.x) * WIDTH;
#pragma unroll
    for (int lane = 0; lane < WIDTH; ++lane) {
        int i = first + lane;
        if (i < count) {
            T value = pixels[i];
            pixels[i] = value < low ? low : (value > high ? high : value);
        }
    }
}

}  // namespace filters
}  // namespace imaging

void clamp_all(float* pixels, unsigned char* bytes, int count)
{
    imaging::filters::clamp_brightness<float, 4><<<(count / 4 + 255) / 256, 256>>>(pixels, count, 0.0f, 1.0f);
    imaging::filters::clamp_brightness<unsigned char, 8><<<(count / 8 + 127) / 128, 128>>>(bytes, count, 16, 235);
}
