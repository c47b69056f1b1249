// Half-precision GEMM on tensor cores through the WMMA API: each warp owns one 16x16 tile of
// C and walks K in steps of 16, accumulating in fp32. m, n, k must be multiples of 16.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

constexpr int WMMA_M = 16;
constexpr int WMMA_N = 16;
constexpr int WMMA_K = 16;

__global__ void wmma_gemm(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, int m, int n, int k)
{
    int warp_m = (blockIdx.x * blockDim.x + threadIdx.x) / warpSize;
    int warp_n = blockIdx.y * blockDim.y + threadIdx.y;
    int tile_row = warp_m * WMMA_M;
    int tile_col = warp_n * WMMA_N;
    if (tile_row >= m || tile_col >= n) {
        return;
    }
    wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> b_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int p = 0; p < k; p += WMMA_K) {
        wmma::load_matrix_sync(a_frag, a + tile_row * k + p, k);
        wmma::load_matrix_sync(b_frag, b + tile_col * k + p, k);
        wmma::mma_sync(acc, a_frag, b_frag, acc);
    }
    wmma::store_matrix_sync(c + tile_row * n + tile_col, acc, n, wmma::mem_row_major);
}

void gemm_tensor_cores(const half* a, const half* b, float* c, int m, int n, int k)
{
    // 4 warps along M and 4 along N per block: a 64x64 block tile.
    dim3 block(128, 4);
    dim3 grid((m + 64 - 1) / 64, (n + 64 - 1) / 64);
    wmma_gemm<<<grid, block>>>(a, b, c, m, n, k);
}
