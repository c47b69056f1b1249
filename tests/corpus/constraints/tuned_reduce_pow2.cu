// A reduction whose block size is a tunable: the tree halves its stride from blockDim.x / 2,
// so the tuned values 96 and 192 would drop elements; FlipFlop warns about them.
#ifndef block_size_x
#define block_size_x 256
#endif
// flipflop: tune block_size_x=64,96,128,192,256
// flipflop: problem=1048576
__global__ void reduce_pow2(const float* in, float* out, int n)
{
    __shared__ float s[block_size_x];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
