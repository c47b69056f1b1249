// Device-side random numbers from cuRAND's header-only kernel API: <curand_kernel.h> comes with
// the nvidia-curand wheel (or a toolkit's cuRAND), not with nvcc itself.
#include <curand_kernel.h>

__global__ void uniform_noise(float* out, unsigned long long seed, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    curandStatePhilox4_32_10_t state;
    curand_init(seed, i, 0, &state);
    out[i] = curand_uniform(&state);
}

void noise(float* out, int n)
{
    uniform_noise<<<(n + 255) / 256, 256>>>(out, 1234ULL, n);
}
