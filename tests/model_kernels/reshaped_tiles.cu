// Tiles addressed through a reshaped thread index, as CLBlast's GEMM loads its shared tiles:
// `tid % WIDTH` and `tid / WIDTH` of a signed index (nvcc emits the sign-correcting shift pair).

#define TILE 32

// Loads a 32 x 32 tile row by row, 8 rows per pass of a 256-thread block, and stores it
// transposed into shared memory. Unpadded, the 32 lanes of a warp write one column: 32 words
// in one bank. Padded by one word per row, they fall in 32 different banks.
template <int PITCH>
__device__ void transpose_tile(const float* in, float* out, int n) {
    __shared__ float tile[TILE * PITCH];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int column = tid % TILE;
    const int row = tid / TILE;
    const int x0 = blockIdx.x * TILE;
    const int y0 = blockIdx.y * TILE;
    for (int r = 0; r < TILE; r += 8) {
        tile[column * PITCH + row + r] = in[(y0 + row + r) * n + x0 + column];
    }
    __syncthreads();
    for (int r = 0; r < TILE; r += 8) {
        out[(x0 + row + r) * n + y0 + column] = tile[(row + r) * PITCH + column];
    }
}

extern "C" __global__ void transpose_unpadded(const float* in, float* out, int n) {
    transpose_tile<TILE>(in, out, n);
}

extern "C" __global__ void transpose_padded(const float* in, float* out, int n) {
    transpose_tile<TILE + 1>(in, out, n);
}

// Each thread reads a float4 of a shared row: a warp's request returns four registers per lane.
extern "C" __global__ void vector_row(const float4* in, float* out) {
    __shared__ float4 row[256];
    row[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
    __syncthreads();
    const float4 v = row[threadIdx.x ^ 1];
    out[blockIdx.x * 256 + threadIdx.x] = v.x + v.y + v.z + v.w;
}
