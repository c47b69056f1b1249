// Launch configurations written the ways CUDA code writes them; every launch here is read by
// tests/test_source.py.
#include <cuda_runtime.h>

#define BLOCK 256
#define WARPS_PER_BLOCK 4
#define BOUNDS __launch_bounds__(512, 2)
#define DIV_UP(a, b) (((a) + (b) - 1) / (b))

static constexpr int kThreads = 128;
namespace cfg { constexpr int kTile = 16; }
struct Launch { static constexpr int kRows = 8; };
enum { kSmallBlock = 64, kNextBlock };

__host__ __device__ inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
inline int iDivUp(int a, int b) { return (a % b != 0) ? (a / b + 1) : (a / b); }

__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

__global__ void __launch_bounds__(256) bounded_one(float* x, int n) {}
__global__ void __launch_bounds__(256, 4) bounded_two(float* x, int n) {}
__global__ void BOUNDS bounded_macro(float* x, int n) {}

template <typename T, int BLOCK_SIZE>
__global__ void __launch_bounds__(BLOCK_SIZE) templated(T* x, int n) {}

__global__ void grid2d(float* x, int width, int height) {}

void run(float* x, int n, int width, int height, int heads, cudaStream_t stream) {
  scale<<<(n + 255) / 256, 256>>>(x, n);
  scale<<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, stream>>>(x, n);
  scale<<<ceil_div(n, kThreads), kThreads>>>(x, n);
  scale<<<DIV_UP(n, 64), dim3(64)>>>(x, n);
  scale<<<iDivUp(n, 32 * WARPS_PER_BLOCK), 32 * WARPS_PER_BLOCK>>>(x, n);
  scale<<<((n + (kSmallBlock - 1)) / kSmallBlock), kSmallBlock>>>(x, n);
  scale<<<(n + 511) >> 9, 512>>>(x, n);
  scale<<<(n - 1) / kNextBlock + 1, kNextBlock>>>(x, n);
  scale<<</* grid */ heads, /* block */ 96 /* threads */, sizeof(float) * 96>>>(x, n);
  templated<float, 128><<<(n + 127) / 128, 128>>>(x, n);

  dim3 block(cfg::kTile, Launch::kRows);
  dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  grid2d<<<grid, block>>>(x, width, height);

  const int threads = 2 * kThreads;
  int blocks = (n + threads - 1) / threads;
  for (int step = 0; step < 10; ++step) {
    scale<<<blocks, threads>>>(x, n);
  }
  // flipflop: threads=1048576 n=1048576
  scale<<<dim3{(unsigned)heads, 1, 1}, dim3{32, 2}>>>(x, n);
}
