// The point-in-polygon pattern (Kernel Tuner's pnpoly): every thread tests TILE points against
// every edge of a polygon. The per-edge work -- two vertex loads and an IEEE division -- is
// shared by the TILE points of the thread, so the work per point falls as TILE grows. In PTX
// the division is one div.rn.f32; in SASS it is about ten instructions, which is what makes
// the tile pay off. (Kernel Tuner's kernel toggles under an `if`, after which nvcc may sink the
// division into the branch; here the toggle is branch-free.)
#ifndef TILE
#define TILE 1
#endif

__global__ void tiled_crossings(const float2* points, const float2* vertices, int* inside,
                                int n, int edges) {
    int first = blockIdx.x * blockDim.x * TILE + threadIdx.x;
    float2 p[TILE];
    int crossings[TILE];
#pragma unroll
    for (int t = 0; t < TILE; t++) {
        int i = first + t * blockDim.x;
        p[t] = i < n ? points[i] : make_float2(0.0f, 0.0f);
        crossings[t] = 0;
    }
#pragma unroll 1
    for (int j = 0, k = edges - 1; j < edges; k = j++) {
        float2 vj = vertices[j];
        float2 vk = vertices[k];
        float slope = (vk.x - vj.x) / (vk.y - vj.y);
#pragma unroll
        for (int t = 0; t < TILE; t++) {
            // Bitwise, not short-circuit: no branch, so every path through the loop body does
            // the same work and one SASS path measures it.
            int straddles = (vj.y > p[t].y) != (vk.y > p[t].y);
            crossings[t] ^= straddles & (p[t].x < slope * (p[t].y - vj.y) + vj.x);
        }
    }
#pragma unroll
    for (int t = 0; t < TILE; t++) {
        int i = first + t * blockDim.x;
        if (i < n) {
            inside[i] = crossings[t];
        }
    }
}
