// The same 256 FMAs per thread, as one dependent chain or as eight independent ones. The
// multipliers come from the arguments so that nothing folds: both kernels compile to one
// straight block of loads, 256 fma.rn.f32 and a store.
extern "C" __global__ void one_chain(float* out, const float* in, float a, float b)
{
    float x = in[threadIdx.x];
    #pragma unroll
    for (int i = 0; i < 256; ++i) {
        x = x * a + b;  // each FMA waits for the one before it
    }
    out[threadIdx.x] = x;
}

extern "C" __global__ void eight_chains(float* out, const float* in, float a, float b)
{
    float x[8];
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
        x[k] = in[threadIdx.x + 32 * k];
    }
    #pragma unroll
    for (int i = 0; i < 32; ++i) {
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            x[k] = x[k] * a + b;  // eight chains, interleaved by the unrolling
        }
    }
    float sum = 0.0f;
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
        sum += x[k];
    }
    out[threadIdx.x] = sum;
}
