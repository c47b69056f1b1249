// Layer normalisation over the last dimension of a 16384 x 4096 float matrix with learned
// gamma/beta (eps 1e-5), one block per row (fixed grid). Two reductions per row (mean, variance).
/* flipflop-measure
{"kernel": "layernorm_rows",
 "params": {"rows": 16384, "cols": 4096},
 "grid": ["rows"],
 "blocks": "32,64,128,256,512,1024",
 "args": [{"name": "x", "type": "f32*", "count": "rows*cols", "init": "random"},
          {"name": "gamma", "type": "f32*", "count": "cols", "init": "random"},
          {"name": "beta", "type": "f32*", "count": "cols", "init": "random"},
          {"name": "y", "type": "f32*", "count": "rows*cols", "init": "poison"},
          {"name": "cols", "type": "i32", "value": "cols"}],
 "check": {"reference": "layernorm_rows", "outputs": ["y"], "rtol": 1e-4},
 "work": {"dram_bytes": "8*rows*cols", "fp32_flops": "7*rows*cols",
          "active_sms": "min(grid_blocks, sms)"}}
*/
#include "block_reduce.cuh"

extern "C" __global__ void layernorm_rows(const float* __restrict__ x,
                                          const float* __restrict__ gamma,
                                          const float* __restrict__ beta, float* __restrict__ y,
                                          int cols) {
    __shared__ float scratch[32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += row[j];
    const float mean = block_sum(s, scratch) / cols;
    float v = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        const float d = row[j] - mean;
        v += d * d;
    }
    const float rstd = rsqrtf(block_sum(v, scratch) / cols + 1e-5f);
    for (int j = threadIdx.x; j < cols; j += blockDim.x)
        out[j] = (row[j] - mean) * rstd * gamma[j] + beta[j];
}
