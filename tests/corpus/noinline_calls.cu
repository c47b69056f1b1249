// Device functions kept as real calls (__noinline__), one recursive and one with a local
// array: the PTX holds .func bodies and call sequences, and ptxas reports the callee's frame
// in the kernel's cumulative stack size.
#include <cuda_runtime.h>

__device__ __noinline__ float polynomial(const float* coefficients, int degree, float x)
{
    float result = 0.0f;
    for (int d = degree; d >= 0; --d) {
        result = result * x + coefficients[d];
    }
    return result;
}

__device__ __noinline__ int collatz_steps(unsigned int value, int depth)
{
    if (value <= 1 || depth > 64) {
        return 0;
    }
    unsigned int next = (value % 2 == 0) ? value / 2 : 3 * value + 1;
    return 1 + collatz_steps(next, depth + 1);
}

__device__ __noinline__ float median_of_nine(const float* values)
{
    float window[9];
    for (int i = 0; i < 9; ++i) {
        float v = values[i];
        int j = i;
        while (j > 0 && window[j - 1] > v) {
            window[j] = window[j - 1];
            --j;
        }
        window[j] = v;
    }
    return window[4];
}

__global__ void evaluate_calls(const float* __restrict__ coefficients, int degree, const float* __restrict__ x, float* __restrict__ y, int* __restrict__ steps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = polynomial(coefficients, degree, x[i]);
        steps[i] = collatz_steps(static_cast<unsigned int>(i) + 1, 0);
        if (i + 9 <= n) {
            y[i] += median_of_nine(x + i);
        }
    }
}

void evaluate_all(const float* coefficients, int degree, const float* x, float* y, int* steps, int n)
{
    evaluate_calls<<<(n + 127) / 128, 128>>>(coefficients, degree, x, y, steps, n);
}
