// Vector add c = a + b: the purely DRAM-bound baseline. 2^26 floats per array (768 MB moved
// per launch, about 15x the H200's 50 MB L2), one element per thread.
/* flipflop-measure
{"kernel": "vector_add",
 "params": {"n": 67108864},
 "threads": ["n"],
 "blocks": "32,64,96,128,192,256,384,512,768,1024",
 "args": [{"name": "a", "type": "f32*", "count": "n", "init": "random"},
          {"name": "b", "type": "f32*", "count": "n", "init": "random"},
          {"name": "c", "type": "f32*", "count": "n", "init": "poison"},
          {"name": "n", "type": "i32", "value": "n"}],
 "check": {"reference": "vector_add", "outputs": ["c"], "rtol": 1e-6},
 "work": {"dram_bytes": "12*n", "fp32_flops": "n", "active_sms": "min(grid_blocks, sms)"}}
*/

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
