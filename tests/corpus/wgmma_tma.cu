// flipflop-test: arch=sm_90a
// Hopper GEMM tile: TMA (cp.async.bulk.tensor) brings 64x64 fp16 tiles of A and B into shared
// memory, an mbarrier with a transaction count says when they have landed, and one warpgroup
// (128 threads) multiplies them with wgmma.mma_async m64n64k16, accumulating in fp32 registers.
// The tensor maps are encoded on the host with 128-byte swizzling (cuTensorMapEncodeTiled).
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int BM = 64;
constexpr int BN = 64;
constexpr int BK = 64;
constexpr int TILE_BYTES = BM * BK * sizeof(half);

__device__ __forceinline__ uint32_t shared_address(const void* pointer)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void barrier_init(uint64_t* barrier, uint32_t arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals));
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void barrier_expect_bytes(uint64_t* barrier, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void barrier_wait(uint64_t* barrier, uint32_t phase)
{
    uint32_t done = 0;
    while (!done) {
        asm volatile(
            "{\n"
            ".reg .pred ready;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n"
            "selp.u32 %0, 1, 0, ready;\n"
            "}\n"
            : "=r"(done)
            : "r"(shared_address(barrier)), "r"(phase)
            : "memory");
    }
}

__device__ __forceinline__ void tma_load_2d(void* destination, const CUtensorMap* map, int column, int row, uint64_t* barrier)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        ::"r"(shared_address(destination)), "l"(reinterpret_cast<uint64_t>(map)), "r"(column), "r"(row),
          "r"(shared_address(barrier))
        : "memory");
}

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// leading and stride byte offsets in 16-byte units, swizzle mode 1 = 128-byte swizzle.
__device__ __forceinline__ uint64_t matrix_descriptor(const half* tile)
{
    uint64_t address = shared_address(tile);
    uint64_t descriptor = (address & 0x3FFFF) >> 4;
    descriptor |= uint64_t(1) << 16;           // leading byte offset (unused with swizzle)
    descriptor |= uint64_t(1024 >> 4) << 32;   // stride byte offset: 8 rows x 128 bytes
    descriptor |= uint64_t(1) << 62;           // 128-byte swizzle
    return descriptor;
}

__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], uint64_t a_desc, uint64_t b_desc)
{
    asm volatile(
        "{\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, 1, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a_desc), "l"(b_desc));
}

__global__ void __launch_bounds__(128) wgmma_tma_gemm(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, float* __restrict__ c, int n, int k)
{
    __shared__ alignas(1024) half a_tile[BM * BK];
    __shared__ alignas(1024) half b_tile[BN * BK];
    __shared__ alignas(8) uint64_t tiles_ready;

    int block_row = blockIdx.y * BM;
    int block_col = blockIdx.x * BN;
    if (threadIdx.x == 0) {
        barrier_init(&tiles_ready, 1);
    }
    __syncthreads();

    float acc[32] = {};
    uint32_t phase = 0;
    for (int base = 0; base < k; base += BK) {
        if (threadIdx.x == 0) {
            barrier_expect_bytes(&tiles_ready, 2 * TILE_BYTES);
            tma_load_2d(a_tile, &map_a, base, block_row, &tiles_ready);
            tma_load_2d(b_tile, &map_b, base, block_col, &tiles_ready);
        }
        barrier_wait(&tiles_ready, phase);
        phase ^= 1;

        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int step = 0; step < BK / 16; ++step) {
            // 16 fp16 = 32 bytes further along K inside the swizzled 128-byte rows.
            wgmma_m64n64k16(acc, matrix_descriptor(a_tile + step * 16), matrix_descriptor(b_tile + step * 16));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        __syncthreads();
    }

    // Accumulator layout of m64nNk16: warp w owns rows 16w..16w+15; each thread holds pairs.
    int warp = threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    int row = block_row + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        int col = block_col + j * 8 + (lane % 4) * 2;
        c[row * n + col] = acc[j * 4 + 0];
        c[row * n + col + 1] = acc[j * 4 + 1];
        c[(row + 8) * n + col] = acc[j * 4 + 2];
        c[(row + 8) * n + col + 1] = acc[j * 4 + 3];
    }
}

void gemm_hopper(const CUtensorMap& map_a, const CUtensorMap& map_b, float* c, int m, int n, int k)
{
    dim3 block(128);
    dim3 grid(n / BN, m / BM);
    wgmma_tma_gemm<<<grid, block>>>(map_a, map_b, c, n, k);
}
