// DRAM bandwidth under three access patterns, each over buffers far larger than any L2
// (1 GB; the H200's L2 is 50 MB): a coalesced 16-byte-per-thread copy, a strided read that
// touches one 32-byte sector per thread, and a random gather through an index array.
/* flipflop-measure
{"kernel": "dram_copy_coalesced",
 "params": {"n4": 67108864},
 "threads": ["n4"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "src", "type": "f32*", "count": "4*n4", "init": "random"},
          {"name": "dst", "type": "f32*", "count": "4*n4", "init": "poison"},
          {"name": "n4", "type": "i32", "value": "n4"}],
 "check": {"reference": "copy", "outputs": ["dst"], "rtol": 0},
 "work": {"dram_bytes": "32*n4", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "dram_read_strided",
 "params": {"n": 268435456, "stride": 32},
 "threads": ["n/stride"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "src", "type": "f32*", "count": "n", "init": "random"},
          {"name": "sink", "type": "f32*", "count": "1", "init": "zero"},
          {"name": "n", "type": "i32", "value": "n"},
          {"name": "stride", "type": "i32", "value": "stride"}],
 "work": {"dram_bytes": "32*n/stride", "active_sms": "min(grid_blocks, sms)"}}
*/
/* flipflop-measure
{"kernel": "dram_read_random",
 "params": {"n": 268435456, "m": 16777216},
 "threads": ["m"],
 "blocks": "128,256,512,1024",
 "args": [{"name": "src", "type": "f32*", "count": "n", "init": "random"},
          {"name": "index", "type": "i32*", "count": "m", "init": "index_random", "range": "n"},
          {"name": "sink", "type": "f32*", "count": "1", "init": "zero"},
          {"name": "m", "type": "i32", "value": "m"}],
 "work": {"dram_bytes": "36*m", "active_sms": "min(grid_blocks, sms)"}}
*/

// The reads feed a comparison that is never true for the random inputs in [-1, 1), so the
// loads stay while `sink` is (almost) never written.
#define KEEP(value, sink) \
    if ((value) == 12345.0f) *(sink) = (value)

extern "C" __global__ void dram_copy_coalesced(const float4* __restrict__ src,
                                               float4* __restrict__ dst, int n4) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) dst[i] = src[i];
}

extern "C" __global__ void dram_read_strided(const float* __restrict__ src, float* sink, int n,
                                             int stride) {
    const size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * stride;
    if (i < (size_t)n) {
        const float v = src[i];
        KEEP(v, sink);
    }
}

extern "C" __global__ void dram_read_random(const float* __restrict__ src,
                                            const int* __restrict__ index, float* sink, int m) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        const float v = src[index[i]];
        KEEP(v, sink);
    }
}
