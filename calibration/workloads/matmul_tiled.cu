// Shared-memory tiled fp32 matmul C = A B for 2048 x 2048 matrices (17.2 GFLOP). The block
// shape is the output tile (block_y rows x block_x columns); the k dimension is staged 16 at a
// time, every thread helping to load both tiles, so any block shape works.
/* flipflop-measure
{"kernel": "matmul_tiled",
 "params": {"n": 2048},
 "threads": ["n", "n"],
 "blocks": "8x8,16x8,16x16,32x4,32x8,32x16,32x32,64x2,64x4,64x8,128x2,128x4",
 "dynamic_smem": "16*(block_x+block_y)*4",
 "args": [{"name": "a", "type": "f32*", "count": "n*n", "init": "random"},
          {"name": "b", "type": "f32*", "count": "n*n", "init": "random"},
          {"name": "c", "type": "f32*", "count": "n*n", "init": "poison"},
          {"name": "n", "type": "i32", "value": "n"}],
 "check": {"reference": "matmul", "outputs": ["c"], "rtol": 1e-4},
 "work": {"fp32_flops": "2*n*n*n", "dram_bytes": "12*n*n", "active_sms": "min(grid_blocks, sms)"}}
*/

#define TILE_K 16

extern "C" __global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b,
                                        float* __restrict__ c, int n) {
    extern __shared__ float smem[];
    const int bx = blockDim.x, by = blockDim.y;
    float* a_tile = smem;                // by x TILE_K
    float* b_tile = smem + by * TILE_K;  // TILE_K x bx
    const int tid = threadIdx.y * bx + threadIdx.x, nthreads = bx * by;
    const int row0 = blockIdx.y * by, col0 = blockIdx.x * bx;
    const int row = row0 + threadIdx.y, col = col0 + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE_K) {
        for (int i = tid; i < by * TILE_K; i += nthreads) {
            const int r = row0 + i / TILE_K, k = k0 + i % TILE_K;
            a_tile[i] = (r < n && k < n) ? a[(size_t)r * n + k] : 0.0f;
        }
        for (int i = tid; i < TILE_K * bx; i += nthreads) {
            const int k = k0 + i / bx, cc = col0 + i % bx;
            b_tile[i] = (k < n && cc < n) ? b[(size_t)k * n + cc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE_K; ++k)
            acc = fmaf(a_tile[threadIdx.y * TILE_K + k], b_tile[k * bx + threadIdx.x], acc);
        __syncthreads();
    }
    if (row < n && col < n) c[(size_t)row * n + col] = acc;
}
