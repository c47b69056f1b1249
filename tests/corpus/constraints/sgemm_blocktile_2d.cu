// 2-D block tiling: each thread computes TM x TN results of a BM x BN tile, so the block needs
// exactly (BM * BN) / (TM * TN) threads; the loads stride by that count.
#include <cuda_runtime.h>

template <int BM, int BN, int BK, int TM, int TN>
__global__ void sgemm_blocktile_2d(int m, int n, int k, const float* a, const float* b, float* c)
{
    constexpr int threads = (BM * BN) / (TM * TN);
    __shared__ float a_tile[BM * BK];
    __shared__ float b_tile[BK * BN];
    const int thread_col = threadIdx.x % (BN / TN);
    const int thread_row = threadIdx.x / (BN / TN);
    const int a_row = threadIdx.x / BK;
    const int a_col = threadIdx.x % BK;
    const int a_stride = threads / BK;
    const int b_row = threadIdx.x / BN;
    const int b_col = threadIdx.x % BN;
    const int b_stride = threads / BN;
    a += blockIdx.y * BM * k;
    b += blockIdx.x * BN;
    c += blockIdx.y * BM * n + blockIdx.x * BN;
    float result[TM * TN] = {0.0f};
    float reg_m[TM];
    float reg_n[TN];
    for (int step = 0; step < k; step += BK) {
        for (int offset = 0; offset < BM; offset += a_stride) {
            a_tile[(a_row + offset) * BK + a_col] = a[(a_row + offset) * k + a_col];
        }
        for (int offset = 0; offset < BK; offset += b_stride) {
            b_tile[(b_row + offset) * BN + b_col] = b[(b_row + offset) * n + b_col];
        }
        __syncthreads();
        a += BK;
        b += BK * n;
        for (int dot = 0; dot < BK; ++dot) {
            for (int i = 0; i < TM; ++i) reg_m[i] = a_tile[(thread_row * TM + i) * BK + dot];
            for (int j = 0; j < TN; ++j) reg_n[j] = b_tile[dot * BN + thread_col * TN + j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) result[i * TN + j] += reg_m[i] * reg_n[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            c[(thread_row * TM + i) * n + thread_col * TN + j] = result[i * TN + j];
}

void run_blocktile(int m, int n, int k, const float* a, const float* b, float* c)
{
    constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
    dim3 block((BM * BN) / (TM * TN));
    sgemm_blocktile_2d<BM, BN, BK, TM, TN><<<grid, block>>>(m, n, k, a, b, c);
}
