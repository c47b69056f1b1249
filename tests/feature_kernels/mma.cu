#include <cuda_bf16.h>
// One warp-level m16n8k16 bf16 mma per iteration, `steps` iterations: 2*16*8*16 FLOPs per warp each.
__global__ void mma_loop(const unsigned *a, const unsigned *b, float *c, int steps)
{
    unsigned a0 = a[threadIdx.x], a1 = a[threadIdx.x + 32], a2 = a[threadIdx.x + 64], a3 = a[threadIdx.x + 96];
    unsigned b0 = b[threadIdx.x], b1 = b[threadIdx.x + 32];
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
#pragma unroll 1
    for (int s = 0; s < steps; ++s) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
            : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
    c[threadIdx.x * 4 + 0] = d0;
    c[threadIdx.x * 4 + 1] = d1;
    c[threadIdx.x * 4 + 2] = d2;
    c[threadIdx.x * 4 + 3] = d3;
}
