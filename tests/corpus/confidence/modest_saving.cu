// Time stepping of many small independent systems, one block per system (a test input for the
// confidence gate: the smaller block is predicted to save about 30% of the energy, less than the
// model's error on a ratio of two block shapes at 80%, more than at 50%).
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
    integrate_systems<<<systems, 256>>>(position, velocity, stiffness, 32, 1e-3f);
}
