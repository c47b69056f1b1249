// Multi-head attention forward, softmax(Q K^T / sqrt(d)) V, for 32 heads x 1024 tokens with
// head dimension 64 (fp32; 8.6 GFLOP; Q, K, V, O each 8 MB). The grid is one block per head and
// is fixed whatever the block size: threads share the keys of each query row, so blocks larger
// than the head dimension leave threads idle in the output step, as in the research this
// product follows.
/* flipflop-measure
{"kernel": "attention_heads",
 "params": {"heads": 32, "seq": 1024, "dim": 64},
 "grid": ["heads"],
 "blocks": "32,64,128,256,512,1024",
 "dynamic_smem": "seq*4",
 "args": [{"name": "q", "type": "f32*", "count": "heads*seq*dim", "init": "random"},
          {"name": "k", "type": "f32*", "count": "heads*seq*dim", "init": "random"},
          {"name": "v", "type": "f32*", "count": "heads*seq*dim", "init": "random"},
          {"name": "o", "type": "f32*", "count": "heads*seq*dim", "init": "poison"},
          {"name": "seq", "type": "i32", "value": "seq"},
          {"name": "dim", "type": "i32", "value": "dim"}],
 "check": {"reference": "attention_heads", "outputs": ["o"], "rtol": 1e-4},
 "work": {"fp32_flops": "4*heads*seq*seq*dim", "sfu_ops": "heads*seq*seq",
          "dram_bytes": "16*heads*seq*dim", "active_sms": "min(grid_blocks, sms)"}}
*/
#include "block_reduce.cuh"

extern "C" __global__ void attention_heads(const float* __restrict__ q, const float* __restrict__ k,
                                           const float* __restrict__ v, float* __restrict__ o,
                                           int seq, int dim) {
    extern __shared__ float probs[];  // seq floats: one query row's attention weights
    __shared__ float scratch[32];
    const size_t head = (size_t)blockIdx.x * seq * dim;
    const float scale = rsqrtf((float)dim);
    for (int i = 0; i < seq; ++i) {
        const float* qi = q + head + (size_t)i * dim;
        float m = -INFINITY;
        for (int j = threadIdx.x; j < seq; j += blockDim.x) {
            const float* kj = k + head + (size_t)j * dim;
            float s = 0.0f;
            for (int c = 0; c < dim; ++c) s = fmaf(qi[c], kj[c], s);
            s *= scale;
            probs[j] = s;
            m = fmaxf(m, s);
        }
        m = block_max(m, scratch);
        float total = 0.0f;
        for (int j = threadIdx.x; j < seq; j += blockDim.x) {
            const float p = __expf(probs[j] - m);
            probs[j] = p;
            total += p;
        }
        const float inv = 1.0f / block_sum(total, scratch);  // also orders the probs writes
        for (int c = threadIdx.x; c < dim; c += blockDim.x) {
            float acc = 0.0f;
            for (int j = 0; j < seq; ++j) acc = fmaf(probs[j], v[head + (size_t)j * dim + c], acc);
            o[head + (size_t)i * dim + c] = acc * inv;
        }
        __syncthreads();  // probs is overwritten by the next row
    }
}
