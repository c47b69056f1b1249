// Out-of-place transpose of an 8192 x 8192 float matrix (256 MB each way) through a
// shared-memory tile of the block's shape (rows padded by one word against bank conflicts).
// Each block reads a block_y x block_x tile row-wise and writes it column-wise with
// consecutive threads on consecutive output addresses.
/* flipflop-measure
{"kernel": "transpose",
 "params": {"n": 8192},
 "threads": ["n", "n"],
 "blocks": "32x1,32x2,32x4,32x8,32x16,32x32,64x4,64x8,128x2,16x16,8x8",
 "dynamic_smem": "block_y*(block_x+1)*4",
 "args": [{"name": "in", "type": "f32*", "count": "n*n", "init": "random"},
          {"name": "out", "type": "f32*", "count": "n*n", "init": "poison"},
          {"name": "n", "type": "i32", "value": "n"}],
 "check": {"reference": "transpose", "outputs": ["out"], "rtol": 0},
 "work": {"dram_bytes": "8*n*n", "active_sms": "min(grid_blocks, sms)"}}
*/

extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n) {
    extern __shared__ float tile[];  // block_y rows of block_x + 1 floats
    const int bx = blockDim.x, by = blockDim.y, pitch = bx + 1;
    const int x0 = blockIdx.x * bx, y0 = blockIdx.y * by;
    const int x = x0 + threadIdx.x, y = y0 + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y * pitch + threadIdx.x] = in[(size_t)y * n + x];
    __syncthreads();
    // Re-map the block so that consecutive threads write consecutive addresses of out.
    const int t = threadIdx.y * bx + threadIdx.x;
    const int row = t % by, col = t / by;  // tile element (row, col) -> out[x0 + col][y0 + row]
    const int ox = y0 + row, oy = x0 + col;
    if (ox < n && oy < n) out[(size_t)oy * n + ox] = tile[row * pitch + col];
}
