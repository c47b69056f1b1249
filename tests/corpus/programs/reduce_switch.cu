// Sum reductions, from the plainest tree to a fully unrolled, many-items-per-thread version,
// each kernel a template over the element type and, for the later steps, over the block size
// (and whether n is a power of two) so that the compiler can unroll. One host function picks
// the kernel and instantiates it for every block size with a `switch`, the way sample
// collections do it; explicit instantiations at the end give int, float and double versions.
// The block size and the grid come from the caller, which is not in this file.
#include <cuda_runtime.h>

// Dynamic shared memory as an array of T (one declaration serves every T).
template <typename T>
__device__ __forceinline__ T *shared_scratch()
{
    extern __shared__ __align__(sizeof(double)) unsigned char scratch_bytes[];
    return reinterpret_cast<T *>(scratch_bytes);
}

// Step 1: interleaved pairs, a modulo test picks the active threads (divergent).
template <typename T>
__global__ void reduce_interleaved(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[t] = (i < n) ? in[i] : T(0);
    __syncthreads();
    for (unsigned int gap = 1; gap < blockDim.x; gap *= 2) {
        if ((t % (2 * gap)) == 0) {
            partial[t] += partial[t + gap];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = partial[0];
    }
}

// Step 2: contiguous active threads, strided shared-memory index (bank conflicts).
template <typename T>
__global__ void reduce_strided_index(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[t] = (i < n) ? in[i] : T(0);
    __syncthreads();
    for (unsigned int gap = 1; gap < blockDim.x; gap *= 2) {
        const unsigned int slot = 2 * gap * t;
        if (slot < blockDim.x) {
            partial[slot] += partial[slot + gap];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = partial[0];
    }
}

// Step 3: halving distance, conflict-free.
template <typename T>
__global__ void reduce_halving(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[t] = (i < n) ? in[i] : T(0);
    __syncthreads();
    for (unsigned int gap = blockDim.x / 2; gap > 0; gap >>= 1) {
        if (t < gap) {
            partial[t] += partial[t + gap];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = partial[0];
    }
}

// Step 4: each thread adds two elements while loading.
template <typename T>
__global__ void reduce_add_on_load(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    T sum = (i < n) ? in[i] : T(0);
    if (i + blockDim.x < n) {
        sum += in[i + blockDim.x];
    }
    partial[t] = sum;
    __syncthreads();
    for (unsigned int gap = blockDim.x / 2; gap > 0; gap >>= 1) {
        if (t < gap) {
            partial[t] = sum = sum + partial[t + gap];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = sum;
    }
}

// Step 5: the last 32 partial sums are reduced by one warp with shuffles.
template <typename T, unsigned int BLOCK>
__global__ void reduce_last_warp(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int i = blockIdx.x * (BLOCK * 2) + threadIdx.x;
    T sum = (i < n) ? in[i] : T(0);
    if (i + BLOCK < n) {
        sum += in[i + BLOCK];
    }
    partial[t] = sum;
    __syncthreads();
    for (unsigned int gap = blockDim.x / 2; gap > 32; gap >>= 1) {
        if (t < gap) {
            partial[t] = sum = sum + partial[t + gap];
        }
        __syncthreads();
    }
    if (t < 32) {
        if (BLOCK >= 64) {
            sum += partial[t + 32];
        }
        for (int lane_gap = 16; lane_gap > 0; lane_gap /= 2) {
            sum += __shfl_down_sync(0xffffffffu, sum, lane_gap);
        }
    }
    if (t == 0) {
        out[blockIdx.x] = sum;
    }
}

// Step 6: the tree fully unrolled over the compile-time block size.
template <typename T, unsigned int BLOCK>
__global__ void reduce_unrolled(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int i = blockIdx.x * (BLOCK * 2) + threadIdx.x;
    T sum = (i < n) ? in[i] : T(0);
    if (i + BLOCK < n) {
        sum += in[i + BLOCK];
    }
    partial[t] = sum;
    __syncthreads();
    if (BLOCK >= 1024 && t < 512) {
        partial[t] = sum = sum + partial[t + 512];
    }
    __syncthreads();
    if (BLOCK >= 512 && t < 256) {
        partial[t] = sum = sum + partial[t + 256];
    }
    __syncthreads();
    if (BLOCK >= 256 && t < 128) {
        partial[t] = sum = sum + partial[t + 128];
    }
    __syncthreads();
    if (BLOCK >= 128 && t < 64) {
        partial[t] = sum = sum + partial[t + 64];
    }
    __syncthreads();
    if (t < 32) {
        if (BLOCK >= 64) {
            sum += partial[t + 32];
        }
        for (int lane_gap = 16; lane_gap > 0; lane_gap /= 2) {
            sum += __shfl_down_sync(0xffffffffu, sum, lane_gap);
        }
    }
    if (t == 0) {
        out[blockIdx.x] = sum;
    }
}

// Step 7: a grid-stride loop adds many elements per thread before the unrolled tree.
template <typename T, unsigned int BLOCK, bool POW2>
__global__ void reduce_many_per_thread(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int stride = BLOCK * 2 * gridDim.x;
    unsigned int i = blockIdx.x * BLOCK * 2 + threadIdx.x;
    T sum = T(0);
    while (i < n) {
        sum += in[i];
        if (POW2 || i + BLOCK < n) {
            sum += in[i + BLOCK];
        }
        i += stride;
    }
    partial[t] = sum;
    __syncthreads();
    if (BLOCK >= 1024 && t < 512) {
        partial[t] = sum = sum + partial[t + 512];
    }
    __syncthreads();
    if (BLOCK >= 512 && t < 256) {
        partial[t] = sum = sum + partial[t + 256];
    }
    __syncthreads();
    if (BLOCK >= 256 && t < 128) {
        partial[t] = sum = sum + partial[t + 128];
    }
    __syncthreads();
    if (BLOCK >= 128 && t < 64) {
        partial[t] = sum = sum + partial[t + 64];
    }
    __syncthreads();
    if (t < 32) {
        if (BLOCK >= 64) {
            sum += partial[t + 32];
        }
        for (int lane_gap = 16; lane_gap > 0; lane_gap /= 2) {
            sum += __shfl_down_sync(0xffffffffu, sum, lane_gap);
        }
    }
    if (t == 0) {
        out[blockIdx.x] = sum;
    }
}

// Step 8: warp shuffles first, one partial sum per warp in shared memory.
template <typename T, unsigned int BLOCK, bool POW2>
__global__ void reduce_warp_first(const T *in, T *out, unsigned int n)
{
    T *partial = shared_scratch<T>();
    const unsigned int t = threadIdx.x;
    const unsigned int stride = BLOCK * 2 * gridDim.x;
    unsigned int i = blockIdx.x * BLOCK * 2 + threadIdx.x;
    T sum = T(0);
    while (i < n) {
        sum += in[i];
        if (POW2 || i + BLOCK < n) {
            sum += in[i + BLOCK];
        }
        i += stride;
    }
    for (int lane_gap = 16; lane_gap > 0; lane_gap /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, lane_gap);
    }
    if ((t % 32) == 0) {
        partial[t / 32] = sum;
    }
    __syncthreads();
    const unsigned int warps = (BLOCK + 31) / 32;
    if (t < 32) {
        sum = (t < warps) ? partial[t] : T(0);
        for (int lane_gap = 16; lane_gap > 0; lane_gap /= 2) {
            sum += __shfl_down_sync(0xffffffffu, sum, lane_gap);
        }
    }
    if (t == 0) {
        out[blockIdx.x] = sum;
    }
}

template <typename T>
void launch_reduction(int which, int size, int threads, int blocks, T *d_in, T *d_out)
{
    dim3 block(threads, 1, 1);
    dim3 grid(blocks, 1, 1);
    // A block of up to one warp still reads partial[t + 32]: give it two warps of scratch.
    int smemSize = (threads <= 32) ? 2 * threads * sizeof(T) : threads * sizeof(T);
    const bool pow2 = (size & (size - 1)) == 0;

    switch (which) {
    case 0:
        reduce_interleaved<T><<<grid, block, smemSize>>>(d_in, d_out, size);
        break;
    case 1:
        reduce_strided_index<T><<<grid, block, smemSize>>>(d_in, d_out, size);
        break;
    case 2:
        reduce_halving<T><<<grid, block, smemSize>>>(d_in, d_out, size);
        break;
    case 3:
        reduce_add_on_load<T><<<grid, block, smemSize>>>(d_in, d_out, size);
        break;
    case 4:
        switch (threads) {
        case 1024: reduce_last_warp<T, 1024><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 512: reduce_last_warp<T, 512><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 256: reduce_last_warp<T, 256><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 128: reduce_last_warp<T, 128><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 64: reduce_last_warp<T, 64><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 32: reduce_last_warp<T, 32><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 16: reduce_last_warp<T, 16><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 8: reduce_last_warp<T, 8><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 4: reduce_last_warp<T, 4><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 2: reduce_last_warp<T, 2><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 1: reduce_last_warp<T, 1><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        }
        break;
    case 5:
        switch (threads) {
        case 1024: reduce_unrolled<T, 1024><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 512: reduce_unrolled<T, 512><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 256: reduce_unrolled<T, 256><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 128: reduce_unrolled<T, 128><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 64: reduce_unrolled<T, 64><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 32: reduce_unrolled<T, 32><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 16: reduce_unrolled<T, 16><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 8: reduce_unrolled<T, 8><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 4: reduce_unrolled<T, 4><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 2: reduce_unrolled<T, 2><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        case 1: reduce_unrolled<T, 1><<<grid, block, smemSize>>>(d_in, d_out, size); break;
        }
        break;
    case 6:
        if (pow2) {
            switch (threads) {
            case 1024: reduce_many_per_thread<T, 1024, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 512: reduce_many_per_thread<T, 512, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 256: reduce_many_per_thread<T, 256, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 128: reduce_many_per_thread<T, 128, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 64: reduce_many_per_thread<T, 64, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 32: reduce_many_per_thread<T, 32, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 16: reduce_many_per_thread<T, 16, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 8: reduce_many_per_thread<T, 8, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 4: reduce_many_per_thread<T, 4, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 2: reduce_many_per_thread<T, 2, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 1: reduce_many_per_thread<T, 1, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            }
        } else {
            switch (threads) {
            case 1024: reduce_many_per_thread<T, 1024, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 512: reduce_many_per_thread<T, 512, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 256: reduce_many_per_thread<T, 256, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 128: reduce_many_per_thread<T, 128, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 64: reduce_many_per_thread<T, 64, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 32: reduce_many_per_thread<T, 32, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 16: reduce_many_per_thread<T, 16, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 8: reduce_many_per_thread<T, 8, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 4: reduce_many_per_thread<T, 4, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 2: reduce_many_per_thread<T, 2, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 1: reduce_many_per_thread<T, 1, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            }
        }
        break;
    default:
        // One partial sum per warp, plus one so that a block of a single warp has two.
        smemSize = ((threads / 32) + 1) * sizeof(T);
        if (pow2) {
            switch (threads) {
            case 1024: reduce_warp_first<T, 1024, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 512: reduce_warp_first<T, 512, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 256: reduce_warp_first<T, 256, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 128: reduce_warp_first<T, 128, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 64: reduce_warp_first<T, 64, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 32: reduce_warp_first<T, 32, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 16: reduce_warp_first<T, 16, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 8: reduce_warp_first<T, 8, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 4: reduce_warp_first<T, 4, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 2: reduce_warp_first<T, 2, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 1: reduce_warp_first<T, 1, true><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            }
        } else {
            switch (threads) {
            case 1024: reduce_warp_first<T, 1024, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 512: reduce_warp_first<T, 512, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 256: reduce_warp_first<T, 256, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 128: reduce_warp_first<T, 128, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 64: reduce_warp_first<T, 64, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 32: reduce_warp_first<T, 32, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 16: reduce_warp_first<T, 16, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 8: reduce_warp_first<T, 8, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 4: reduce_warp_first<T, 4, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 2: reduce_warp_first<T, 2, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            case 1: reduce_warp_first<T, 1, false><<<grid, block, smemSize>>>(d_in, d_out, size); break;
            }
        }
        break;
    }
}

template void launch_reduction<int>(int, int, int, int, int *, int *);
template void launch_reduction<float>(int, int, int, int, float *, float *);
template void launch_reduction<double>(int, int, int, int, double *, double *);
