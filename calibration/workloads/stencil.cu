// One Jacobi sweep of the 5-point Laplace stencil on an 8192 x 8192 float grid (256 MB in,
// 256 MB out); boundary cells are copied. Neighbouring rows are re-read through L1/L2, so the
// block's height changes how much of that reuse is caught.
/* flipflop-measure
{"kernel": "stencil5",
 "params": {"n": 8192},
 "threads": ["n", "n"],
 "blocks": "32x1,64x1,128x1,256x1,32x2,32x4,32x8,32x16,32x32,64x4,64x8,16x16",
 "args": [{"name": "in", "type": "f32*", "count": "n*n", "init": "random"},
          {"name": "out", "type": "f32*", "count": "n*n", "init": "poison"},
          {"name": "n", "type": "i32", "value": "n"}],
 "check": {"reference": "stencil5", "outputs": ["out"], "rtol": 1e-6},
 "work": {"dram_bytes": "8*n*n", "fp32_flops": "5*n*n", "active_sms": "min(grid_blocks, sms)"}}
*/

extern "C" __global__ void stencil5(const float* __restrict__ in, float* __restrict__ out, int n) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= n) return;
    const size_t i = (size_t)y * n + x;
    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) {
        out[i] = in[i];
        return;
    }
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - n] + in[i + n]);
}
