// Multi-head attention forward pass with an online softmax, one block per (head, tile of 64
// queries): keys and values stream through shared memory in tiles of 64, each thread keeps
// one query row, its running max, running sum and output accumulator in registers.
#include <cuda_runtime.h>
#include <float.h>

constexpr int HEAD_DIM = 64;
constexpr int QUERY_TILE = 64;
constexpr int KEY_TILE = 64;

__global__ void attention_forward(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, float* __restrict__ out, int seq_len, float scale)
{
    __shared__ float k_tile[KEY_TILE][HEAD_DIM];
    __shared__ float v_tile[KEY_TILE][HEAD_DIM];
    int head = blockIdx.y;
    int query = blockIdx.x * QUERY_TILE + threadIdx.x;
    size_t head_offset = (size_t)head * seq_len * HEAD_DIM;

    float q_row[HEAD_DIM];
    float acc[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; ++d) {
        q_row[d] = query < seq_len ? q[head_offset + (size_t)query * HEAD_DIM + d] * scale : 0.0f;
        acc[d] = 0.0f;
    }
    float running_max = -FLT_MAX;
    float running_sum = 0.0f;

    for (int key_base = 0; key_base < seq_len; key_base += KEY_TILE) {
        for (int index = threadIdx.x; index < KEY_TILE * HEAD_DIM; index += blockDim.x) {
            int key = key_base + index / HEAD_DIM;
            int d = index % HEAD_DIM;
            bool valid = key < seq_len;
            k_tile[index / HEAD_DIM][d] = valid ? k[head_offset + (size_t)key * HEAD_DIM + d] : 0.0f;
            v_tile[index / HEAD_DIM][d] = valid ? v[head_offset + (size_t)key * HEAD_DIM + d] : 0.0f;
        }
        __syncthreads();
        int keys = min(KEY_TILE, seq_len - key_base);
        for (int j = 0; j < keys; ++j) {
            float score = 0.0f;
#pragma unroll 16
            for (int d = 0; d < HEAD_DIM; ++d) {
                score += q_row[d] * k_tile[j][d];
            }
            float new_max = fmaxf(running_max, score);
            float correction = __expf(running_max - new_max);
            float weight = __expf(score - new_max);
            running_sum = running_sum * correction + weight;
#pragma unroll 16
            for (int d = 0; d < HEAD_DIM; ++d) {
                acc[d] = acc[d] * correction + weight * v_tile[j][d];
            }
            running_max = new_max;
        }
        __syncthreads();
    }
    if (query < seq_len) {
        for (int d = 0; d < HEAD_DIM; ++d) {
            out[head_offset + (size_t)query * HEAD_DIM + d] = acc[d] / running_sum;
        }
    }
}

void attention(const float* q, const float* k, const float* v, float* out, int heads, int seq_len)
{
    dim3 block(QUERY_TILE);
    dim3 grid((seq_len + QUERY_TILE - 1) / QUERY_TILE, heads);
    attention_forward<<<grid, block>>>(q, k, v, out, seq_len, 0.125f);
}
