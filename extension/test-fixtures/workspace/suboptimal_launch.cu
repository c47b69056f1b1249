// Time stepping of many small independent systems, one block per system. Each system has 32
// oscillators, but the launch asks for 1024 threads: the other 992 idle at the guard and still
// hold SM resources and draw power. FlipFlop flags the launch and offers a better block.
#include <cuda_runtime.h>

__global__ void integrate_systems(float* __restrict__ position, float* __restrict__ velocity,
                                  const float* __restrict__ stiffness, int oscillators, float dt)
{
    if (threadIdx.x < oscillators) {
        int i = blockIdx.x * oscillators + threadIdx.x;
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

void integrate(float* position, float* velocity, const float* stiffness, int systems)
{
    // flipflop: grid=4096
    integrate_systems<<<systems, 1024>>>(position, velocity, stiffness, 32, 1e-3f);
}
