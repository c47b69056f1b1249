// Shared-memory SGEMM templated on the tile width: one thread per element of a BLOCKSIZE x
// BLOCKSIZE tile of C, the thread's row and column read from threadIdx.x / and % BLOCKSIZE, so
// the launch must give BLOCKSIZE * BLOCKSIZE threads in one dimension.
#include <cuda_runtime.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

template <int BLOCKSIZE>
__global__ void sgemm_shared_block(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c)
{
    __shared__ float a_tile[BLOCKSIZE * BLOCKSIZE];
    __shared__ float b_tile[BLOCKSIZE * BLOCKSIZE];
    const unsigned row = threadIdx.x / BLOCKSIZE;
    const unsigned col = threadIdx.x % BLOCKSIZE;
    a += blockIdx.x * BLOCKSIZE * k;
    b += blockIdx.y * BLOCKSIZE;
    c += blockIdx.x * BLOCKSIZE * n + blockIdx.y * BLOCKSIZE;
    float sum = 0.0f;
    for (int step = 0; step < k; step += BLOCKSIZE) {
        a_tile[row * BLOCKSIZE + col] = a[row * k + col];
        b_tile[row * BLOCKSIZE + col] = b[row * n + col];
        __syncthreads();
        a += BLOCKSIZE;
        b += BLOCKSIZE * n;
        for (int i = 0; i < BLOCKSIZE; ++i) {
            sum += a_tile[row * BLOCKSIZE + i] * b_tile[i * BLOCKSIZE + col];
        }
        __syncthreads();
    }
    c[row * n + col] = alpha * sum + beta * c[row * n + col];
}

void run_sgemm_shared(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c)
{
    dim3 grid(CEIL_DIV(m, 32), CEIL_DIV(n, 32));
    dim3 block(32 * 32);
    sgemm_shared_block<32><<<grid, block>>>(m, n, k, alpha, a, b, beta, c);
}
