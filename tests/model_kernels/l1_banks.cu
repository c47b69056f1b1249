// Global loads whose lanes fall on the same banks of the L1 data array, or do not.

// Each lane's float4 64 bytes after the last: lanes two apart start one 128-byte line
// apart at the same offset, on the same four banks.
__global__ void float4_every_64_bytes(const float4 *a, float4 *out)
{
    int t = threadIdx.x;
    out[blockIdx.x * blockDim.x + t] = a[4 * t];
}

__global__ void float4_consecutive(const float4 *a, float4 *out)
{
    int t = threadIdx.x;
    out[blockIdx.x * blockDim.x + t] = a[t];
}

// Every other word: the 32 lanes span two lines, each bank holds two of their words.
__global__ void float_every_other(const float *a, float *out)
{
    int t = threadIdx.x;
    out[blockIdx.x * blockDim.x + t] = a[2 * t];
}

// One word per 128-byte line: every lane on bank 0.
__global__ void float_one_per_line(const float *a, float *out)
{
    int t = threadIdx.x;
    out[blockIdx.x * blockDim.x + t] = a[32 * t];
}
