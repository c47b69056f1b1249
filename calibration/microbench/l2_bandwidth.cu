// L2 bandwidth: many passes over a 16 MB buffer (resident in the L2 of an A100, H100 or H200
// after the first pass), read with .cg loads that bypass L1. Grid: 8 blocks per SM.
/* flipflop-measure
{"kernel": "l2_read",
 "params": {"n": 4194304, "passes": 32},
 "grid": ["8*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "src", "type": "f32*", "count": "n", "init": "random"},
          {"name": "sink", "type": "f32*", "count": "1", "init": "zero"},
          {"name": "n", "type": "i32", "value": "n"},
          {"name": "passes", "type": "i32", "value": "passes"}],
 "work": {"l2_bytes": "4*n*passes", "active_sms": "min(grid_blocks, sms)"}}
*/

extern "C" __global__ void l2_read(const float* __restrict__ src, float* sink, int n, int passes) {
    const int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p)
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            acc += __ldcg(src + i);
    if (acc == 12345.0f) *sink = acc;  // never true for these inputs; keeps the loads
}
