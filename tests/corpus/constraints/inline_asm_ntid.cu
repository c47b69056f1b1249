// The block size read through inline assembly: FlipFlop cannot see what the code does with it.
#include <cuda_runtime.h>

__global__ void asm_stride(float* __restrict__ data, int n)
{
    unsigned threads;
    asm("mov.u32 %0, %%ntid.x;" : "=r"(threads));
    const int i = blockIdx.x * 128 + threadIdx.x;
    if (i < n && threads == 128) {
        data[i] += 1.0f;
    }
}

void run(float* data, int n)
{
    asm_stride<<<(n + 127) / 128, 128>>>(data, n);
}
