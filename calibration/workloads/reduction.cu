// Sum of 2^26 floats (256 MB): one element per thread, a shuffle + shared-memory block
// reduction, then one double-precision atomic per block. Block count and barrier cost change
// with the block size; the DRAM traffic does not.
/* flipflop-measure
{"kernel": "reduce_sum",
 "params": {"n": 67108864},
 "threads": ["n"],
 "blocks": "32,64,128,256,512,1024",
 "args": [{"name": "x", "type": "f32*", "count": "n", "init": "random"},
          {"name": "total", "type": "f64*", "count": "1", "init": "zero"},
          {"name": "n", "type": "i32", "value": "n"}],
 "check": {"reference": "reduce_sum", "outputs": ["total"], "rtol": 1e-5},
 "work": {"dram_bytes": "4*n", "fp32_flops": "n", "active_sms": "min(grid_blocks, sms)"}}
*/
#include "block_reduce.cuh"

extern "C" __global__ void reduce_sum(const float* __restrict__ x, double* total, int n) {
    __shared__ float scratch[32];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float v = (i < n) ? x[i] : 0.0f;
    const float s = block_sum(v, scratch);
    if (threadIdx.x == 0) atomicAdd(total, static_cast<double>(s));
}
