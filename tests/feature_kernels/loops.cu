// Grid-stride loop: every element once, so each launched thread runs n / (grid * block) times.
__global__ void scale_grid_stride(int n, float a, float *x)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        x[i] = a * x[i];
}

// A loop bounded by a parameter: k runs `steps` times, one fma each.
__global__ void poly_steps(const float *in, float *out, int steps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    float acc = 0.0f;
#pragma unroll 1
    for (int k = 0; k < steps; ++k)
        acc = acc * v + 1.0f;
    out[i] = acc;
}

// A constant-bound loop of 16 iterations kept rolled.
__global__ void sixteen_steps(float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = out[i];
#pragma unroll 1
    for (int k = 0; k < 16; ++k)
        acc = acc * acc + 0.5f;
    out[i] = acc;
}

// Only the first 128 threads of each block work: in a 256-thread block half of them idle.
__global__ void first_128(float *out)
{
    if (threadIdx.x < 128)
        out[blockIdx.x * 128 + threadIdx.x] = 2.0f * out[blockIdx.x * 128 + threadIdx.x];
}

__device__ __noinline__ float smooth(float v)
{
    return v * v + 1.0f;
}

// A noinline device function called in a loop of 10: its fma counts 10 times.
__global__ void call_in_loop(float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = out[i];
#pragma unroll 1
    for (int k = 0; k < 10; ++k)
        acc = smooth(acc);
    out[i] = acc;
}
