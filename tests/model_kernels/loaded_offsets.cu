// Loads at offsets read from memory, dedispersion's pattern: each row of the block reads its
// own shifted window of an input channel, the shift a table entry times the row.
#define CHANNELS 64
#define SAMPLES 4096

// The shift is the same for every thread of the block: the rows read the same bytes.
extern "C" __global__ void shared_shift(const unsigned char* input, const int* shifts,
                                        float* output)
{
    float sum = 0.0f;
#pragma unroll 1
    for (int channel = 0; channel < CHANNELS; channel++) {
        sum += input[channel * SAMPLES + shifts[channel] + threadIdx.x];
    }
    output[threadIdx.y * blockDim.x + threadIdx.x] = sum;
}

// The shift grows with the row (a DM's delay): each row at its own loaded offset.
extern "C" __global__ void row_shift(const unsigned char* input, const float* shifts,
                                     float* output)
{
    float sum = 0.0f;
#pragma unroll 1
    for (int channel = 0; channel < CHANNELS; channel++) {
        int shift = (int)(0.02f * threadIdx.y * shifts[channel]);
        sum += input[channel * SAMPLES + shift + threadIdx.x];
    }
    output[threadIdx.y * blockDim.x + threadIdx.x] = sum;
}
