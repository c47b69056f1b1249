// Kernels with C linkage keep their plain names in PTX (no C++ mangling), as code loaded by
// name through the driver API (cuModuleGetFunction) requires.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" __global__ void relu_inplace(float* data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] = fmaxf(data[i], 0.0f);
    }
}

extern "C" __global__ void relu_half2(__half2* data, int pairs)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < pairs) {
        data[i] = __hmax2(data[i], __float2half2_rn(0.0f));
    }
}

void relu(float* data, __half2* halves, int n)
{
    relu_inplace<<<(n + 255) / 256, 256>>>(data, n);
    relu_half2<<<(n / 2 + 255) / 256, 256>>>(halves, n / 2);
}
