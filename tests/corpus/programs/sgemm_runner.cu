// A matrix-multiply benchmark laid out the way tutorial repositories do it: several kernels,
// one host function per kernel that sets up `dim3 gridDim`/`dim3 blockDim` a few lines above
// its launch, a dispatcher that picks one by number, and a driver that passes literal sizes.
// C = alpha * A * B + beta * C, row-major, A is M x K, B is K x N.
#include <cuda_runtime.h>

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

// Each thread computes ROWS results of one column of a ROWS_PER_BLOCK x COLS_PER_BLOCK tile.
template <const int TILE_M, const int TILE_N, const int TILE_K, const int ROWS>
__global__ void mm_column_strip(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C)
{
    __shared__ float tile_a[TILE_M * TILE_K];
    __shared__ float tile_b[TILE_K * TILE_N];
    const int c = threadIdx.x % TILE_N;
    const int r = threadIdx.x / TILE_N;
    A += blockIdx.y * TILE_M * K;
    B += blockIdx.x * TILE_N;
    C += blockIdx.y * TILE_M * N + blockIdx.x * TILE_N;
    const int a_col = threadIdx.x % TILE_K;
    const int a_row = threadIdx.x / TILE_K;
    const int b_col = threadIdx.x % TILE_N;
    const int b_row = threadIdx.x / TILE_N;
    float results[ROWS] = {0.0f};
    for (int step = 0; step < K; step += TILE_K) {
        tile_a[a_row * TILE_K + a_col] = A[a_row * K + a_col];
        tile_b[b_row * TILE_N + b_col] = B[b_row * N + b_col];
        __syncthreads();
        A += TILE_K;
        B += TILE_K * N;
        for (int k = 0; k < TILE_K; ++k) {
            const float b = tile_b[k * TILE_N + c];
            for (int i = 0; i < ROWS; ++i) {
                results[i] += tile_a[(r * ROWS + i) * TILE_K + k] * b;
            }
        }
        __syncthreads();
    }
    for (int i = 0; i < ROWS; ++i) {
        C[(r * ROWS + i) * N + c] = alpha * results[i] + beta * C[(r * ROWS + i) * N + c];
    }
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
