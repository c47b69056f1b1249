// Register-blocked SGEMM with 128-bit (float4) global loads: a 64x64 block tile, K steps of 8,
// every one of the 256 threads computes a 4x4 patch of C. Requires m, n multiples of 64 and
// k a multiple of 8, with 16-byte aligned rows.
#include <cuda_runtime.h>

constexpr int BM = 64;
constexpr int BN = 64;
constexpr int BK = 8;
constexpr int TM = 4;
constexpr int TN = 4;

__global__ void __launch_bounds__(256) sgemm_vectorized(int m, int n, int k, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c)
{
    __shared__ float a_tile[BK][BM];  // stored transposed so the inner loop reads rows
    __shared__ float b_tile[BK][BN];
    int thread_row = threadIdx.x / (BN / TN);
    int thread_col = threadIdx.x % (BN / TN);
    const float* a_block = a + blockIdx.y * BM * k;
    const float* b_block = b + blockIdx.x * BN;

    // 64x8 A tile = 128 float4; 8x64 B tile = 128 float4: the first 128 threads load each.
    int a_row = threadIdx.x / 2;
    int a_col = (threadIdx.x % 2) * 4;
    int b_row = threadIdx.x / 16;
    int b_col = (threadIdx.x % 16) * 4;

    float acc[TM][TN] = {};
    for (int base = 0; base < k; base += BK) {
        if (threadIdx.x < 128) {
            float4 va = *reinterpret_cast<const float4*>(a_block + a_row * k + base + a_col);
            a_tile[a_col + 0][a_row] = va.x;
            a_tile[a_col + 1][a_row] = va.y;
            a_tile[a_col + 2][a_row] = va.z;
            a_tile[a_col + 3][a_row] = va.w;
            float4 vb = *reinterpret_cast<const float4*>(b_block + (base + b_row) * n + b_col);
            *reinterpret_cast<float4*>(&b_tile[b_row][b_col]) = vb;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; ++p) {
            float4 av = *reinterpret_cast<const float4*>(&a_tile[p][thread_row * TM]);
            float4 bv = *reinterpret_cast<const float4*>(&b_tile[p][thread_col * TN]);
            float ar[TM] = {av.x, av.y, av.z, av.w};
            float br[TN] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += ar[i] * br[j];
                }
            }
        }
        __syncthreads();
    }
    float* c_block = c + (blockIdx.y * BM + thread_row * TM) * n + blockIdx.x * BN + thread_col * TN;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        *reinterpret_cast<float4*>(c_block + i * n) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    }
}

void gemm_vectorized(int m, int n, int k, const float* a, const float* b, float* c)
{
    dim3 block(256);
    dim3 grid(n / BN, m / BM);
    sgemm_vectorized<<<grid, block>>>(m, n, k, a, b, c);
}
