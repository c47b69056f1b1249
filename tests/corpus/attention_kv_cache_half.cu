// flipflop-test: arch=sm_75,sm_80,sm_86,sm_89,sm_90,sm_90a,sm_100a,sm_120
// One decoding step of multi-head attention over a KV cache, in half or bfloat16: one block per
// (sequence, head); each warp walks a stride of cached positions, each lane holds HEAD_DIM / 32
// elements of the query as packed pairs. Scores and the running softmax stay in float, the
// products and the weighted value sums use the packed half/bfloat16 intrinsics of cuda_fp16.h
// and cuda_bf16.h, whose inline asm (`{.reg .f16 low,high; ...}`) is what nvcc writes for them.
// Warps merge their partial results through shared memory at the end. UNROLL positions per warp
// are in flight at once (the loop over the cache is unrolled that many times).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <float.h>

template <typename T> struct Packed;

template <> struct Packed<__half> {
    using Pair = __half2;
    static __device__ __forceinline__ float2 to_float2(Pair value) { return __half22float2(value); }
    static __device__ __forceinline__ Pair from_float2(float2 value) { return __float22half2_rn(value); }
    static __device__ __forceinline__ Pair splat(float value) { return __float2half2_rn(value); }
    static __device__ __forceinline__ Pair fma(Pair a, Pair b, Pair c) { return __hfma2(a, b, c); }
    static __device__ __forceinline__ float low(Pair value) { return __low2float(value); }
    static __device__ __forceinline__ float high(Pair value) { return __high2float(value); }
};

template <> struct Packed<__nv_bfloat16> {
    using Pair = __nv_bfloat162;
    static __device__ __forceinline__ float2 to_float2(Pair value) { return __bfloat1622float2(value); }
    static __device__ __forceinline__ Pair from_float2(float2 value) { return __float22bfloat162_rn(value); }
    static __device__ __forceinline__ Pair splat(float value) { return __float2bfloat162_rn(value); }
    // cuda_bf16.h has no packed fma before sm_80; a product and a sum round twice instead of once
    static __device__ __forceinline__ Pair fma(Pair a, Pair b, Pair c) { return __hadd2(__hmul2(a, b), c); }
    static __device__ __forceinline__ float low(Pair value) { return __low2float(value); }
    static __device__ __forceinline__ float high(Pair value) { return __high2float(value); }
};

template <typename T, int HEAD_DIM, int WARPS, int UNROLL = 1>
__global__ void __launch_bounds__(WARPS * 32)
decode_attention(const T* __restrict__ query, const T* __restrict__ key_cache,
                 const T* __restrict__ value_cache, const int* __restrict__ cached_lengths,
                 T* __restrict__ out, int heads, int max_length, float scale)
{
    using P = Packed<T>;
    using Pair = typename P::Pair;
    constexpr int PAIRS = HEAD_DIM / 64;  // packed pairs per lane
    static_assert(HEAD_DIM % 64 == 0, "each lane holds whole pairs");

    __shared__ float partial_max[WARPS];
    __shared__ float partial_sum[WARPS];
    __shared__ float partial_out[WARPS][HEAD_DIM];

    const int sequence = blockIdx.x / heads;
    const int head = blockIdx.x % heads;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int length = cached_lengths[sequence];
    const size_t row = (size_t)sequence * heads + head;

    const Pair* q = reinterpret_cast<const Pair*>(query + row * HEAD_DIM);
    Pair q_pairs[PAIRS];
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        q_pairs[i] = __hmul2(q[lane + 32 * i], P::splat(scale));
    }

    float running_max = -FLT_MAX;
    float running_sum = 0.0f;
    float2 acc[PAIRS];
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        acc[i] = make_float2(0.0f, 0.0f);
    }

    const size_t cache_row = row * (size_t)max_length * HEAD_DIM;
#pragma unroll UNROLL
    for (int position = warp; position < length; position += WARPS) {
        const Pair* k = reinterpret_cast<const Pair*>(key_cache + cache_row + (size_t)position * HEAD_DIM);
        const Pair* v = reinterpret_cast<const Pair*>(value_cache + cache_row + (size_t)position * HEAD_DIM);
        Pair products = P::splat(0.0f);
#pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            products = P::fma(q_pairs[i], k[lane + 32 * i], products);
        }
        float score = P::low(products) + P::high(products);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) {
            score += __shfl_xor_sync(0xffffffffu, score, offset);
        }
        const float new_max = fmaxf(running_max, score);
        const float correction = __expf(running_max - new_max);
        const float weight = __expf(score - new_max);
        running_sum = running_sum * correction + weight;
        const Pair weights = P::splat(weight);
#pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            const float2 weighted = P::to_float2(__hmul2(weights, v[lane + 32 * i]));
            acc[i].x = acc[i].x * correction + weighted.x;
            acc[i].y = acc[i].y * correction + weighted.y;
        }
        running_max = new_max;
    }

    if (lane == 0) {
        partial_max[warp] = running_max;
        partial_sum[warp] = running_sum;
    }
#pragma unroll
    for (int i = 0; i < PAIRS; ++i) {
        partial_out[warp][2 * (lane + 32 * i)] = acc[i].x;
        partial_out[warp][2 * (lane + 32 * i) + 1] = acc[i].y;
    }
    __syncthreads();

    if (warp == 0) {
        float block_max = -FLT_MAX;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            block_max = fmaxf(block_max, partial_max[w]);
        }
        float block_sum = 0.0f;
        float2 merged[PAIRS];
#pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            merged[i] = make_float2(0.0f, 0.0f);
        }
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const float factor = __expf(partial_max[w] - block_max);
            block_sum += partial_sum[w] * factor;
#pragma unroll
            for (int i = 0; i < PAIRS; ++i) {
                merged[i].x += partial_out[w][2 * (lane + 32 * i)] * factor;
                merged[i].y += partial_out[w][2 * (lane + 32 * i) + 1] * factor;
            }
        }
        const float inverse = block_sum > 0.0f ? 1.0f / block_sum : 0.0f;
        Pair* o = reinterpret_cast<Pair*>(out + row * HEAD_DIM);
#pragma unroll
        for (int i = 0; i < PAIRS; ++i) {
            o[lane + 32 * i] = P::from_float2(make_float2(merged[i].x * inverse, merged[i].y * inverse));
        }
    }
}

void decode_step(const __half* query, const __half* keys, const __half* values, const int* lengths,
                 __half* out, const __nv_bfloat16* query_bf, const __nv_bfloat16* keys_bf,
                 const __nv_bfloat16* values_bf, __nv_bfloat16* out_bf, int sequences, int heads,
                 int max_length)
{
    const float scale = 0.125f;
    decode_attention<__half, 128, 4, 2><<<sequences * heads, 128>>>(
        query, keys, values, lengths, out, heads, max_length, scale);
    decode_attention<__nv_bfloat16, 64, 8><<<sequences * heads, 256>>>(
        query_bf, keys_bf, values_bf, lengths, out_bf, heads, max_length, scale);
}
