// A CUB block scan over a 2-D block of 32 x 4 threads: the primitive is instantiated with both
// extents, so the launch must be exactly 32 x 4.
#include <cub/block/block_scan.cuh>

typedef cub::BlockScan<int, 32, cub::BLOCK_SCAN_RAKING, 4> TileScan;

__global__ void scan_tiles(const int* __restrict__ in, int* __restrict__ out)
{
    __shared__ TileScan::TempStorage storage;
    const int tile = blockIdx.x * 128;
    const int rank = threadIdx.y * 32 + threadIdx.x;
    int value = in[tile + rank];
    TileScan(storage).ExclusiveSum(value, value);
    out[tile + rank] = value;
}

void scan(const int* in, int* out, int tiles)
{
    scan_tiles<<<tiles, dim3(32, 4)>>>(in, out);
}
