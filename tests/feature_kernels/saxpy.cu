// saxpy: per thread 2 coalesced 4-byte loads, 1 coalesced store, 2 FLOPs (one fma).
__global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
