// flipflop-test: arch=sm_100a,sm_120
// A grid-stride vector scale written with work stealing: every block processes its own tile,
// then cancels blocks that have not started yet and processes their tiles instead
// (cuda::for_each_canceled_block, Blackwell's cluster launch control). libcu++ writes the
// cancellation protocol as inline asm: `elect.sync _|p`, a wait loop with a label inside the
// asm's scope, 128-bit results queried into a predicate named without '%'.
#include <cuda/work_stealing>
#include <cuda_runtime.h>

constexpr int TILE = 256;

__global__ void __launch_bounds__(TILE) scale_stealing(const float* __restrict__ in, float* __restrict__ out, float factor, int n)
{
    cuda::for_each_canceled_block<1>([=](dim3 block) {
        const int index = block.x * TILE + threadIdx.x;
        if (index < n) {
            out[index] = in[index] * factor;
        }
    });
}

void scale(const float* in, float* out, float factor, int n)
{
    scale_stealing<<<(n + TILE - 1) / TILE, TILE>>>(in, out, factor, n);
}
