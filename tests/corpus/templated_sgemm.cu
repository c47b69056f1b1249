// SGEMM_CUDA-style tiled matrix multiply: the tile sizes are template parameters, the host
// function instantiates the template with local constants and launches it.
#include <cuda_runtime.h>

template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm1D(int M, int N, int K, const float* __restrict__ A,
                        const float* __restrict__ B, float* __restrict__ C)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int row = threadIdx.x / BN;
    const int col = threadIdx.x % BN;
    const float* a = A + blockIdx.y * BM * K;
    const float* b = B + blockIdx.x * BN;
    float* c = C + blockIdx.y * BM * N + blockIdx.x * BN;
    float sums[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
            As[i] = a[(i / BK) * K + i % BK];
        }
        for (int i = threadIdx.x; i < BK * BN; i += blockDim.x) {
            Bs[i] = b[(i / BN) * N + i % BN];
        }
        __syncthreads();
        a += BK;
        b += BK * N;
        for (int k = 0; k < BK; ++k) {
            const float value = Bs[k * BN + col];
            for (int t = 0; t < TM; ++t) {
                sums[t] += As[(row * TM + t) * BK + k] * value;
            }
        }
        __syncthreads();
    }
    for (int t = 0; t < TM; ++t) {
        c[(row * TM + t) * N + col] = sums[t];
    }
}

void run_sgemm1D(int M, int N, int K, const float* A, const float* B, float* C)
{
    const unsigned BM = 64;
    const unsigned BN = 64;
    const unsigned BK = 8;
    const unsigned TM = 8;
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    dim3 block((BM * BN) / TM);
    sgemm1D<BM, BN, BK, TM><<<grid, block>>>(M, N, K, A, B, C);
}
