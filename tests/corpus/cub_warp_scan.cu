// flipflop-test: arch=sm_75,sm_80,sm_86,sm_89,sm_90,sm_90a,sm_100a,sm_120
// Prefix sums with CUB's warp and block scans, the building blocks of thrust::inclusive_scan
// and of stream compaction: per-warp inclusive sums of 32-bit, 64-bit and floating-point values
// and a block-wide exclusive sum that turns flags into output positions. CUB's warp scan writes
// its shuffle as inline asm with registers it names without '%' (`shfl.sync.up.b32 r0|p, ...`).
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda_runtime.h>

constexpr int BLOCK = 256;
constexpr int WARPS = BLOCK / 32;

template <typename T>
__global__ void __launch_bounds__(BLOCK) warp_prefix_sums(const T* __restrict__ in, T* __restrict__ out, int n)
{
    using WarpScan = cub::WarpScan<T>;
    __shared__ typename WarpScan::TempStorage storage[WARPS];
    const int index = blockIdx.x * BLOCK + threadIdx.x;
    T value = index < n ? in[index] : T(0);
    WarpScan(storage[threadIdx.x / 32]).InclusiveSum(value, value);
    if (index < n) {
        out[index] = value;
    }
}

// Keeps the positive values, in order: each block scans its flags, then one atomic per block
// reserves its slice of the output.
__global__ void __launch_bounds__(BLOCK) compact_positive(const float* __restrict__ in, float* __restrict__ out, int* __restrict__ count, int n)
{
    using BlockScan = cub::BlockScan<int, BLOCK>;
    __shared__ typename BlockScan::TempStorage storage;
    __shared__ int block_base;
    const int index = blockIdx.x * BLOCK + threadIdx.x;
    const float value = index < n ? in[index] : 0.0f;
    const int keep = value > 0.0f ? 1 : 0;
    int position = 0;
    int kept = 0;
    BlockScan(storage).ExclusiveSum(keep, position, kept);
    if (threadIdx.x == 0) {
        block_base = atomicAdd(count, kept);
    }
    __syncthreads();
    if (keep) {
        out[block_base + position] = value;
    }
}

void prefix_sums(const unsigned* u32, unsigned* u32_out, const int* s32, int* s32_out, const float* f32, float* f32_out,
                 const unsigned long long* u64, unsigned long long* u64_out, const long long* s64, long long* s64_out,
                 const double* f64, double* f64_out, int* count, int n)
{
    const int blocks = (n + BLOCK - 1) / BLOCK;
    warp_prefix_sums<unsigned><<<blocks, BLOCK>>>(u32, u32_out, n);
    warp_prefix_sums<int><<<blocks, BLOCK>>>(s32, s32_out, n);
    warp_prefix_sums<float><<<blocks, BLOCK>>>(f32, f32_out, n);
    warp_prefix_sums<unsigned long long><<<blocks, BLOCK>>>(u64, u64_out, n);
    warp_prefix_sums<long long><<<blocks, BLOCK>>>(s64, s64_out, n);
    warp_prefix_sums<double><<<blocks, BLOCK>>>(f64, f64_out, n);
    compact_positive<<<blocks, BLOCK>>>(f32, f32_out, count, n);
}
