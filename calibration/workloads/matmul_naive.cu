// Naive fp32 matmul C = A B for 2048 x 2048 matrices (17.2 GFLOP): one output per thread,
// operands straight from global memory (L1/L2 catch the reuse, or not, depending on shape).
/* flipflop-measure
{"kernel": "matmul_naive",
 "params": {"n": 2048},
 "threads": ["n", "n"],
 "blocks": "32x1,64x1,128x1,256x1,16x16,32x4,32x8,32x16,32x32,8x8,8x32,64x4",
 "args": [{"name": "a", "type": "f32*", "count": "n*n", "init": "random"},
          {"name": "b", "type": "f32*", "count": "n*n", "init": "random"},
          {"name": "c", "type": "f32*", "count": "n*n", "init": "poison"},
          {"name": "n", "type": "i32", "value": "n"}],
 "check": {"reference": "matmul", "outputs": ["c"], "rtol": 1e-4},
 "work": {"fp32_flops": "2*n*n*n", "dram_bytes": "12*n*n", "active_sms": "min(grid_blocks, sms)"}}
*/

extern "C" __global__ void matmul_naive(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ c, int n) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc = fmaf(a[(size_t)row * n + k], b[(size_t)k * n + col], acc);
    c[(size_t)row * n + col] = acc;
}
