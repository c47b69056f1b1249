// A matrix-multiply benchmark laid out the way tutorial repositories do it: several kernels,
// one host function per kernel that sets up `dim3 gridDim`/`dim3 blockDim` a few lines above
// its launch, a dispatcher that picks one by number, and a driver that passes literal sizes.
// C = alpha * A * B + beta * C, row-major, A is M x K, B is K x N.
#include <cuda_runtime.h>

#include "sgemm_runner_kernels.cuh"

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

// One thread per output element, 2-D block.
__global__ void mm_naive(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C)
{
    const unsigned int row = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int i = 0; i < K; ++i) {
            acc += A[row * K + i] * B[i * N + col];
        }
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

// One thread per output element, 1-D block of EDGE*EDGE threads laid out so that neighbouring
// threads write neighbouring columns.
template <const int EDGE>
__global__ void mm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B,
                             float beta, float *C)
{
    const int row = blockIdx.x * EDGE + (threadIdx.x / EDGE);
    const int col = blockIdx.y * EDGE + (threadIdx.x % EDGE);
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int i = 0; i < K; ++i) {
            acc += A[row * K + i] * B[i * N + col];
        }
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

// EDGE x EDGE tiles of A and B staged through shared memory.
template <const int EDGE>
__global__ void mm_shared_tiles(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C)
{
    __shared__ float tile_a[EDGE * EDGE];
    __shared__ float tile_b[EDGE * EDGE];
    const int tile_row = blockIdx.x;
    const int tile_col = blockIdx.y;
    const int r = threadIdx.x / EDGE;
    const int c = threadIdx.x % EDGE;
    A += tile_row * EDGE * K;
    B += tile_col * EDGE;
    C += tile_row * EDGE * N + tile_col * EDGE;
    float acc = 0.0f;
    for (int step = 0; step < K; step += EDGE) {
        tile_a[r * EDGE + c] = A[r * K + c];
        tile_b[r * EDGE + c] = B[r * N + c];
        __syncthreads();
        A += EDGE;
        B += EDGE * N;
        for (int i = 0; i < EDGE; ++i) {
            acc += tile_a[r * EDGE + i] * tile_b[i * EDGE + c];
        }
        __syncthreads();
    }
    C[r * N + c] = alpha * acc + beta * C[r * N + c];
}

void run_naive(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32, 32);
    mm_naive<<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

void run_coalesced(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32 * 32);
    mm_coalesced<32><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

void run_shared_tiles(int M, int N, int K, float alpha, float *A, float *B, float beta,
                      float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32 * 32);
    mm_shared_tiles<32><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

void run_column_strip(int M, int N, int K, float alpha, float *A, float *B, float beta,
                      float *C)
{
    const unsigned int TM = 64;
    const unsigned int TN = 64;
    const unsigned int TK = 8;
    const unsigned int ROWS = 8;
    dim3 gridDim(CEIL_DIV(N, TN), CEIL_DIV(M, TM));
    dim3 blockDim((TM * TN) / ROWS);
    mm_column_strip<TM, TN, TK, ROWS><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

void run_kernel(int which, int M, int N, int K, float alpha, float *A, float *B, float beta,
                float *C)
{
    switch (which) {
    case 0:
        run_naive(M, N, K, alpha, A, B, beta, C);
        break;
    case 1:
        run_coalesced(M, N, K, alpha, A, B, beta, C);
        break;
    case 2:
        run_shared_tiles(M, N, K, alpha, A, B, beta, C);
        break;
    default:
        run_column_strip(M, N, K, alpha, A, B, beta, C);
        break;
    }
}

int main()
{
    const int size = 4096;
    float *A, *B, *C;
    cudaMalloc(&A, sizeof(float) * size * size);
    cudaMalloc(&B, sizeof(float) * size * size);
    cudaMalloc(&C, sizeof(float) * size * size);
    for (int which = 0; which < 4; ++which) {
        run_kernel(which, size, size, size, 1.0f, A, B, 0.0f, C);
    }
    cudaDeviceSynchronize();
    return 0;
}
