// Shared-memory loads with 1, 2 and 4 wavefronts per warp request, for the least cycles a
// request holds the banks (`rates.l1_request_cycles`). A block of 256 threads as 8 × 32.

// Lanes 0..31 of a warp read consecutive floats: one wavefront.
__global__ void conflict_free(float *out)
{
    __shared__ float tile[32 * 64];
    int lane = threadIdx.x + 8 * threadIdx.y;
    tile[lane] = lane;
    __syncthreads();
    out[blockIdx.x * 256 + lane] = tile[threadIdx.y * 8 + threadIdx.x];
}

// Rows of 8 threads 16 floats apart: rows 0 and 2 of a warp start on bank 0, rows 1 and 3 on
// bank 16, so each bank holds two addresses: two wavefronts.
__global__ void two_way(float *out)
{
    __shared__ float tile[32 * 64];
    int lane = threadIdx.x + 8 * threadIdx.y;
    tile[lane] = lane;
    __syncthreads();
    out[blockIdx.x * 256 + lane] = tile[threadIdx.y * 16 + threadIdx.x];
}

// Rows 32 floats apart: all four rows of a warp start on bank 0: four wavefronts.
__global__ void four_way(float *out)
{
    __shared__ float tile[32 * 64];
    int lane = threadIdx.x + 8 * threadIdx.y;
    tile[lane] = lane;
    __syncthreads();
    out[blockIdx.x * 256 + lane] = tile[threadIdx.y * 32 + threadIdx.x];
}

// Sixty-four 2-way loads a thread (rows 16 floats apart, each step 64 floats on): enough
// shared traffic for shared memory to set the time.
__global__ void two_way_loop(float *out)
{
    __shared__ float tile[8192];
    int lane = threadIdx.x + 8 * threadIdx.y;
    for (int i = lane; i < 8192; i += 256)
        tile[i] = i;
    __syncthreads();
    float sum = 0.0f;
#pragma unroll 8
    for (int k = 0; k < 64; ++k)
        sum += tile[threadIdx.y * 16 + threadIdx.x + 64 * k];
    out[blockIdx.x * 256 + lane] = sum;
}
