// Eight loads per thread, each behind its own bounds test, as tiled kernels stage their input:
// nothing waits for a load before the next one issues, so all eight are in flight together.
extern "C" __global__ void guarded_tile(float* out, const float* in, int n)
{
    __shared__ float tile[8 * 128];
    int first = blockIdx.x * 8 * 128 + threadIdx.x;
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
        if (first + 128 * k < n) {
            tile[threadIdx.x + 128 * k] = in[first + 128 * k];
        }
    }
    __syncthreads();
    out[first] = tile[(threadIdx.x * 8) % (8 * 128)];
}
