// Multi-head self-attention, forward pass, written to be read.
//
// Layout: q, k, v and out are [heads][seq_len][HEAD_DIM] in row-major order.
// Launch: one block per (query tile, head). Each thread of the block owns one query row of the
// tile: it computes that query's scores against every key, a numerically safe softmax (with a
// running maximum, so the scores never need to be stored), and the weighted sum of the values.
// Keys and values are brought into shared memory one tile at a time and reused by every thread.
//
// The block size is the number of queries per tile. It is a plain constant here, which is what
// FlipFlop looks at: try `flipflop analyze examples/attention.cu` to see how time and energy
// change with it.
#include <cuda_runtime.h>
#include <float.h>

constexpr int HEAD_DIM = 64;   // features per head
constexpr int KEY_TILE = 32;   // keys staged in shared memory at a time

__global__ void multi_head_attention(const float* __restrict__ q,
                                     const float* __restrict__ k,
                                     const float* __restrict__ v,
                                     float* __restrict__ out,
                                     int seq_len,
                                     float scale)
{
    __shared__ float keys[KEY_TILE][HEAD_DIM];
    __shared__ float values[KEY_TILE][HEAD_DIM];

    const int head = blockIdx.y;
    const int query = blockIdx.x * blockDim.x + threadIdx.x;
    const bool has_query = query < seq_len;
    const size_t head_base = (size_t)head * seq_len * HEAD_DIM;

    // This thread's query, pre-multiplied by 1/sqrt(HEAD_DIM).
    float my_query[HEAD_DIM];
    float weighted_sum[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; ++d) {
        my_query[d] = has_query ? q[head_base + (size_t)query * HEAD_DIM + d] * scale : 0.0f;
        weighted_sum[d] = 0.0f;
    }
    float max_score = -FLT_MAX;  // running maximum of the scores seen so far
    float total_weight = 0.0f;   // running sum of exp(score - max_score)

    for (int first_key = 0; first_key < seq_len; first_key += KEY_TILE) {
        // All threads of the block cooperate to stage the next tile of keys and values.
        for (int i = threadIdx.x; i < KEY_TILE * HEAD_DIM; i += blockDim.x) {
            const int key = first_key + i / HEAD_DIM;
            const int d = i % HEAD_DIM;
            const size_t at = head_base + (size_t)key * HEAD_DIM + d;
            keys[i / HEAD_DIM][d] = key < seq_len ? k[at] : 0.0f;
            values[i / HEAD_DIM][d] = key < seq_len ? v[at] : 0.0f;
        }
        __syncthreads();

        const int keys_in_tile = min(KEY_TILE, seq_len - first_key);
        for (int j = 0; j < keys_in_tile; ++j) {
            float score = 0.0f;
            for (int d = 0; d < HEAD_DIM; ++d) {
                score += my_query[d] * keys[j][d];
            }
            // Online softmax: rescale what was accumulated when a new maximum appears.
            const float new_max = fmaxf(max_score, score);
            const float rescale = __expf(max_score - new_max);
            const float weight = __expf(score - new_max);
            total_weight = total_weight * rescale + weight;
            for (int d = 0; d < HEAD_DIM; ++d) {
                weighted_sum[d] = weighted_sum[d] * rescale + weight * values[j][d];
            }
            max_score = new_max;
        }
        __syncthreads();
    }

    if (has_query) {
        for (int d = 0; d < HEAD_DIM; ++d) {
            out[head_base + (size_t)query * HEAD_DIM + d] = weighted_sum[d] / total_weight;
        }
    }
}

// Host side: 16 heads, 4096 tokens.
void attention_forward(const float* q, const float* k, const float* v, float* out)
{
    const int heads = 16;
    const int seq_len = 4096;
    dim3 block(256);
    dim3 grid((seq_len + block.x - 1) / block.x, heads);
    multi_head_attention<<<grid, block>>>(q, k, v, out, seq_len, 0.125f);
}
