// Row-wise softmax with one thread per row: three loops over the row (max, sum of
// exponentials, normalised write). Neighbouring threads read addresses a whole row apart.
#include <cuda_runtime.h>

#define THREADS 256

__global__ void softmax_thread_rows(int rows, int columns, const float* input, float* output)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    float largest = input[row * columns];
    for (int j = 0; j < columns; j++) {
        largest = fmaxf(largest, input[row * columns + j]);
    }
    float total = 0.0f;
    for (int j = 0; j < columns; j++) {
        total += expf(input[row * columns + j] - largest);
    }
    for (int j = 0; j < columns; j++) {
        output[row * columns + j] = expf(input[row * columns + j] - largest) / total;
    }
}

void softmax(int rows, int columns, const float* input, float* output)
{
    dim3 grid((rows + THREADS - 1) / THREADS);
    dim3 block(THREADS);
    softmax_thread_rows<<<grid, block>>>(rows, columns, input, output);
}
