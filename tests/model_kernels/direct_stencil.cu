// A 5x5 stencil read straight from global memory (no shared-memory tile), as
// convolution_milo's use_shmem=0 variants are: each input element is requested by up to 25
// threads of a block, but L1 serves all requests after the first.
#define WIDTH 1024
#define PADDED (WIDTH + 4)

extern "C" __global__ void direct_stencil(float* out, const float* in, const float* weights)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    float sum = 0.0f;
    #pragma unroll
    for (int i = 0; i < 5; ++i) {
        #pragma unroll
        for (int j = 0; j < 5; ++j) {
            sum += in[(y + i) * PADDED + x + j] * weights[i * 5 + j];
        }
    }
    out[y * WIDTH + x] = sum;
}
