// flipflop-test: arch=sm_80+
// Tensor-core GEMM with the raw PTX instruction mma.sync.m16n8k16 (fp16 in, fp32 accumulate):
// each warp computes a 16x8 tile of C; fragments are loaded per the PTX ISA fragment layout.
// A is row-major m x k, B is stored column-major (n x k), C row-major. Sizes are multiples of
// the tile.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t pack_pair(const half* p)
{
    return *reinterpret_cast<const uint32_t*>(p);
}

__global__ void mma_gemm(const half* __restrict__ a, const half* __restrict__ b, float* __restrict__ c, int m, int n, int k)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    int tiles_n = n / 8;
    int tile_m = (warp / tiles_n) * 16;
    int tile_n = (warp % tiles_n) * 8;
    if (tile_m >= m) {
        return;
    }
    int group = lane / 4;       // row within the 8-row half of the fragment
    int pair = (lane % 4) * 2;  // column pair
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int p = 0; p < k; p += 16) {
        uint32_t af[4];
        af[0] = pack_pair(a + (tile_m + group) * k + p + pair);
        af[1] = pack_pair(a + (tile_m + group + 8) * k + p + pair);
        af[2] = pack_pair(a + (tile_m + group) * k + p + pair + 8);
        af[3] = pack_pair(a + (tile_m + group + 8) * k + p + pair + 8);
        uint32_t bf[2];
        bf[0] = pack_pair(b + (tile_n + group) * k + p + pair);
        bf[1] = pack_pair(b + (tile_n + group) * k + p + pair + 8);
        mma_m16n8k16(acc, af, bf);
    }
    c[(tile_m + group) * n + tile_n + pair] = acc[0];
    c[(tile_m + group) * n + tile_n + pair + 1] = acc[1];
    c[(tile_m + group + 8) * n + tile_n + pair] = acc[2];
    c[(tile_m + group + 8) * n + tile_n + pair + 1] = acc[3];
}

void gemm_mma(const half* a, const half* b, float* c, int m, int n, int k)
{
    int warps = (m / 16) * (n / 8);
    int threads = 256;
    int blocks = (warps * 32 + threads - 1) / threads;
    mma_gemm<<<blocks, threads>>>(a, b, c, m, n, k);
}
