// Time stepping of many small independent systems: only the first n_steps threads of a block
// have work, the rest idle at the guard but still occupy the SM.
#include <cuda_runtime.h>

__global__ void integrate_oscillators(float* __restrict__ position, float* __restrict__ velocity, const float* __restrict__ stiffness, int n_steps, float dt)
{
    if (threadIdx.x < n_steps) {
        int i = blockIdx.x * n_steps + threadIdx.x;
        float x = position[i];
        float v = velocity[i];
        float k = stiffness[i];
        for (int step = 0; step < 100; ++step) {
            v -= k * x * dt;
            x += v * dt;
        }
        position[i] = x;
        velocity[i] = v;
    }
}

void integrate(float* position, float* velocity, const float* stiffness, int systems, int n_steps)
{
    dim3 block(256);
    integrate_oscillators<<<systems, block>>>(position, velocity, stiffness, n_steps, 1e-3f);
}
