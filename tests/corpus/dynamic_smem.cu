// Block-wide inclusive prefix sum (Hillis-Steele, double-buffered) whose shared buffer is
// sized at launch: the third launch parameter carries 2 * blockDim.x floats.
#include <cuda_runtime.h>

__global__ void block_scan(const float* __restrict__ in, float* __restrict__ out, int n)
{
    extern __shared__ float buffer[];
    float* ping = buffer;
    float* pong = buffer + blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    ping[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned int offset = 1; offset < blockDim.x; offset *= 2) {
        float value = ping[threadIdx.x];
        if (threadIdx.x >= offset) {
            value += ping[threadIdx.x - offset];
        }
        pong[threadIdx.x] = value;
        __syncthreads();
        float* swap = ping;
        ping = pong;
        pong = swap;
    }
    if (i < n) {
        out[i] = ping[threadIdx.x];
    }
}

void scan_blocks(const float* in, float* out, int n)
{
    int threads = 512;
    size_t shared_bytes = 2 * threads * sizeof(float);
    block_scan<<<(n + threads - 1) / threads, threads, shared_bytes>>>(in, out, n);
}
