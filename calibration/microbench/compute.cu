// Arithmetic throughput and power under each unit's load: fp32, fp64, fp16 (half2), integer,
// SFU (ex2.approx) and tensor cores (WMMA 16x16x16, fp16 in, fp32 accumulate). Each thread
// runs 8 independent dependency chains so the pipes stay full; the grid is 16 blocks per SM.
// `fp32_fma_partial` loads only the first `active_pct` percent of the SMs, which separates
// per-SM static power from the uncore's in the power fit.
/* flipflop-measure
{"kernel": "fp32_fma", "params": {"iters": 2048}, "grid": ["16*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "out", "type": "f32*", "count": "grid_blocks*block_threads", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"fp32_flops": "grid_blocks*block_threads*iters*8*2", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "fp32_fma_partial", "params": {"iters": 2048, "active_pct": 50}, "grid": ["sms"],
 "blocks": "1024",
 "variants": [{"active_pct": 13}, {"active_pct": 25}, {"active_pct": 50}, {"active_pct": 75},
              {"active_pct": 100}],
 "args": [{"name": "out", "type": "f32*", "count": "grid_blocks*block_threads", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"},
          {"name": "active_pct", "type": "i32", "value": "active_pct"}],
 "work": {"fp32_flops": "ceil(grid_blocks*active_pct/100)*block_threads*iters*16*8*2",
          "active_sms": "ceil(grid_blocks*active_pct/100)"}}
*/
/* flipflop-measure
{"kernel": "fp64_fma", "params": {"iters": 1024}, "grid": ["16*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "out", "type": "f64*", "count": "grid_blocks*block_threads", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"fp64_flops": "grid_blocks*block_threads*iters*8*2", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "fp16_hfma2", "params": {"iters": 2048}, "grid": ["16*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "out", "type": "f32*", "count": "grid_blocks*block_threads", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"fp16_flops": "grid_blocks*block_threads*iters*8*4", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "int_imad", "params": {"iters": 2048}, "grid": ["16*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "out", "type": "i32*", "count": "grid_blocks*block_threads", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"int_ops": "grid_blocks*block_threads*iters*8*2", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "sfu_ex2", "params": {"iters": 1024}, "grid": ["16*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "out", "type": "f32*", "count": "grid_blocks*block_threads", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"sfu_ops": "grid_blocks*block_threads*iters*8",
          "fp32_flops": "grid_blocks*block_threads*iters*8", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "tensor_wmma_f16", "params": {"iters": 1024}, "grid": ["16*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "out", "type": "f32*", "count": "grid_blocks*block_threads/32*256", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"tensor_flops": "grid_blocks*block_threads/32*iters*4*8192",
          "active_sms": "min(grid_blocks, sms)"}}
*/
#include <cuda_fp16.h>
#include <mma.h>

#define CHAINS 8

extern "C" __global__ void fp32_fma(float* out, int iters) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = (float)(i + c) * 1e-7f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], 0.999f, 1e-7f);
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    out[i] = s;
}

extern "C" __global__ void fp32_fma_partial(float* out, int iters, int active_pct) {
    // Blocks past the active share leave at once: their SMs stay idle for the whole launch.
    if (blockIdx.x * 100 >= gridDim.x * active_pct) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = (float)(i + c) * 1e-7f;
    for (int it = 0; it < iters * 16; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = fmaf(x[c], 0.999f, 1e-7f);
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    out[i] = s;
}

extern "C" __global__ void fp64_fma(double* out, int iters) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = (double)(i + c) * 1e-7;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = fma(x[c], 0.999, 1e-7);
    }
    double s = 0.0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    out[i] = s;
}

extern "C" __global__ void fp16_hfma2(float* out, int iters) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 x[CHAINS];
    const __half2 a = __float2half2_rn(0.999f), b = __float2half2_rn(1e-3f);
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = __float2half2_rn((float)((i + c) & 7) * 0.1f);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = __hfma2(x[c], a, b);
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += __low2float(x[c]) + __high2float(x[c]);
    out[i] = s;
}

extern "C" __global__ void int_imad(int* out, int iters) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x[CHAINS];
    const int a = iters | 3, b = iters ^ 0x5bd1e995;  // run-time values: no constant folding
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = i + c;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = x[c] * a + b;
    }
    int s = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s ^= x[c];
    out[i] = s;
}

__device__ __forceinline__ float ex2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

extern "C" __global__ void sfu_ex2(float* out, int iters) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) x[c] = (float)((i + c) & 15) * -0.01f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) x[c] = ex2_approx(x[c]) * -0.5f;  // stays in (-1, 0)
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += x[c];
    out[i] = s;
}

extern "C" __global__ void tensor_wmma_f16(float* out, int iters) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4];
    wmma::fill_fragment(a, __float2half(0.01f));
    wmma::fill_fragment(b, __float2half(0.01f));
#pragma unroll
    for (int c = 0; c < 4; ++c) wmma::fill_fragment(acc[c], 0.0f);
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int c = 0; c < 4; ++c) wmma::mma_sync(acc[c], a, b, acc[c]);
    }
#pragma unroll
    for (int c = 1; c < 4; ++c)
        for (int e = 0; e < acc[0].num_elements; ++e) acc[0].x[e] += acc[c].x[e];
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    wmma::store_matrix_sync(out + (size_t)warp * 256, acc[0], 16, wmma::mem_row_major);
}
