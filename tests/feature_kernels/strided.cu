// Each lane reads a float 32 elements (128 bytes) after its neighbour: 32 sectors per request.
__global__ void strided_read(const float *in, float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i * 32];
}
