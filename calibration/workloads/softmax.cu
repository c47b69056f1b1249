// Row-wise softmax of a 16384 x 4096 float matrix (256 MB in, 256 MB out), one block per row
// (the grid is fixed: the block size only changes how many threads share a row). Three passes
// over the row: max, sum of exponentials, normalise; the row stays in L1/L2 between passes.
/* flipflop-measure
{"kernel": "softmax_rows",
 "params": {"rows": 16384, "cols": 4096},
 "grid": ["rows"],
 "blocks": "32,64,128,256,512,1024",
 "args": [{"name": "x", "type": "f32*", "count": "rows*cols", "init": "random"},
          {"name": "y", "type": "f32*", "count": "rows*cols", "init": "poison"},
          {"name": "cols", "type": "i32", "value": "cols"}],
 "check": {"reference": "softmax_rows", "outputs": ["y"], "rtol": 1e-5},
 "work": {"dram_bytes": "8*rows*cols", "sfu_ops": "rows*cols", "fp32_flops": "4*rows*cols",
          "active_sms": "min(grid_blocks, sms)"}}
*/
#include "block_reduce.cuh"

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        int cols) {
    __shared__ float scratch[32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(row[j] - m);
    s = block_sum(s, scratch);
    const float inv = 1.0f / s;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = __expf(row[j] - m) * inv;
}
