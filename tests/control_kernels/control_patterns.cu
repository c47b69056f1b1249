// Loops and branches whose counts follow from the launch but not from a formula the symbolic
// analysis reads (each kernel's comment says what the launch decides).
#define TILE 1000

// A warp-stride loop unrolled by 4 over a parameter-sized row (the stride compiled in, as
// with a tunable block size): nvcc runs (count & 3) iterations in a remainder prologue, then
// the rest four at a time.
__global__ void unrolled_rows(float* rows, int n)
{
    float* row = rows + (size_t)blockIdx.x * n;
#pragma unroll 4
    for (int j = threadIdx.x; j < n; j += 32) {
        row[j] = row[j] * 2.0f;  // remainder
    }
}

// The same with the block's runtime stride: nvcc tests the bound after every unrolled copy,
// so an iteration may leave the loop from the middle of its body.
__global__ void unrolled_exits(float* rows, int n)
{
    float* row = rows + (size_t)blockIdx.x * n;
#pragma unroll 4
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        row[j] = row[j] * 2.0f;  // exits
    }
}

// A loop bounded by min(): each thread handles at most 8 elements of its segment, fewer
// near the end of the array.
__global__ void min_bounded(float* data, int n)
{
    int first = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    int count = min(8, n - first);
    for (int k = 0; k < count; k++) {
        data[first + k] += 1.0f;  // bounded
    }
}

// Each block covers TILE elements; the last block's range ends at n (min of the block's end
// and n): only the last block, which the grid's %ctaid picks out, runs fewer iterations.
__global__ void last_block_short(float* data, int n)
{
    int end = min((int)(blockIdx.x + 1) * TILE, n);
    for (int i = blockIdx.x * TILE + threadIdx.x; i < end; i += blockDim.x) {
        data[i] = data[i] * 0.5f;  // boundary
    }
}

// A linked-list walk: the trip count is in the data, so it stays an assumption.
__global__ void follow_links(const int* next, float* value, int heads)
{
    int node = blockIdx.x * blockDim.x + threadIdx.x;
    if (node >= heads) {
        return;
    }
    float sum = 0.0f;
    while (node >= 0) {
        sum += value[node];  // walk
        node = next[node];
    }
    value[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// Each block handles TILE elements and only the last block's guard idles threads: the guard
// compares the thread index with min(TILE, n - first), which %ctaid decides.
__global__ void last_block_guard(float* data, int n)
{
    int first = blockIdx.x * TILE;
    int count = min(TILE, n - first);
    if (threadIdx.x < count) {
        data[first + threadIdx.x] *= 2.0f;  // guarded
    }
}

// Dedispersion's shape: a tile of outputs per thread along both axes, each behind a bounds
// test, each summing CHANNELS inputs. The inner loop holds no branch the analysis must count,
// so a run of the control flow steps over it instead of walking its trips for every output.
// The row loop stays rolled, as nvcc leaves dedispersion's: its bounds test reads the loop's
// counter, which only a run of the launch can count.
#define CHANNELS 1536
#define TILE_X 3
#define TILE_Y 8
#define ROWS 300
#define SAMPLES 1000
__global__ void tiled_channel_sums(const unsigned char* input, float* output)
{
    int x = (blockIdx.x * blockDim.x + threadIdx.x) * TILE_X;
    int y = (blockIdx.y * blockDim.y + threadIdx.y) * TILE_Y;
    for (int tx = 0; tx < TILE_X; tx++) {
        int column = x + tx;
        if (column < SAMPLES) {
#pragma unroll 1
            for (int ty = 0; ty < TILE_Y; ty++) {
                int row = y + ty;
                if (row < ROWS) {
                    float sum = 0.0f;
#pragma unroll 1
                    for (int channel = 0; channel < CHANNELS; channel++) {
                        sum += input[channel * SAMPLES + column + row];  // channel sum
                    }
                    output[row * SAMPLES + column] = sum;
                }
            }
        }
    }
}

// The same tiles with the row test as a `break` in a tile loop nvcc keeps rolled: the loop
// has two exits, its counter's and the row's, and the row's ends it first at the bottom edge.
__global__ void tiled_rows_break(const unsigned char* input, float* output)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = (blockIdx.y * blockDim.y + threadIdx.y) * TILE_Y;
    if (x >= SAMPLES) {
        return;
    }
#pragma unroll 1
    for (int ty = 0; ty < TILE_Y; ty++) {
        int row = y + ty;
        if (row >= ROWS) {
            break;
        }
        output[row * SAMPLES + x] = input[row * SAMPLES + x];  // row copy
    }
}
