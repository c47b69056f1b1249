// Shared-memory bandwidth with and without bank conflicts. Each thread reads 4-byte words in
// a loop; with stride 1 a warp touches 32 banks (one wavefront), with stride 32 every lane hits
// the same bank (32 wavefronts). `shared_bytes` counts bank traffic: 128 B per wavefront.
/* flipflop-measure
{"kernel": "smem_read_conflict_free",
 "params": {"iters": 4096},
 "grid": ["8*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "sink", "type": "f32*", "count": "1", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"shared_bytes": "grid_blocks*block_threads*iters*4",
          "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "smem_read_conflict32",
 "params": {"iters": 512},
 "grid": ["8*sms"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "sink", "type": "f32*", "count": "1", "init": "zero"},
          {"name": "iters", "type": "i32", "value": "iters"}],
 "work": {"shared_bytes": "grid_blocks*block_threads*iters*4*32",
          "active_sms": "min(grid_blocks, sms)"}}
*/

#define WORDS 8192  // 32 KB

__device__ __forceinline__ void smem_read(int stride, int iters, float* sink) {
    __shared__ float words[WORDS];
    for (int i = threadIdx.x; i < WORDS; i += blockDim.x) words[i] = (float)i;
    __syncthreads();
    float acc = 0.0f;
    int index = (threadIdx.x * stride) & (WORDS - 1);
    for (int it = 0; it < iters; ++it) {
        acc += words[index];
        index = (index + 32 * stride + 1) & (WORDS - 1);  // moves on, keeps the bank pattern
    }
    if (acc == -1.0f) *sink = acc;  // never true: the sum is positive
}

extern "C" __global__ void smem_read_conflict_free(float* sink, int iters) {
    smem_read(1, iters, sink);
}

extern "C" __global__ void smem_read_conflict32(float* sink, int iters) {
    smem_read(32, iters, sink);
}
