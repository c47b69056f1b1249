// Direct 2-D convolution, 3x3, stride 1, zero padding 1: 16 input channels of 1024 x 1024 to
// 32 output channels (9.7 GFLOP, 64 MB in, 128 MB out), NCHW float. One output pixel of one
// output channel per thread; blockIdx.z walks the output channels.
/* flipflop-measure
{"kernel": "conv2d_3x3",
 "params": {"c_in": 16, "c_out": 32, "h": 1024, "w": 1024},
 "threads": ["w", "h", "c_out"],
 "blocks": "32x1,64x1,128x1,256x1,32x2,32x4,32x8,32x16,16x16,8x8,64x4,128x2",
 "args": [{"name": "in", "type": "f32*", "count": "c_in*h*w", "init": "random"},
          {"name": "weight", "type": "f32*", "count": "c_out*c_in*9", "init": "random"},
          {"name": "out", "type": "f32*", "count": "c_out*h*w", "init": "poison"},
          {"name": "c_in", "type": "i32", "value": "c_in"},
          {"name": "h", "type": "i32", "value": "h"},
          {"name": "w", "type": "i32", "value": "w"}],
 "check": {"reference": "conv2d_3x3", "outputs": ["out"], "rtol": 1e-5},
 "work": {"fp32_flops": "2*9*c_in*c_out*h*w", "dram_bytes": "4*(c_in+c_out)*h*w",
          "active_sms": "min(grid_blocks, sms)"}}
*/

extern "C" __global__ void conv2d_3x3(const float* __restrict__ in, const float* __restrict__ weight,
                                      float* __restrict__ out, int c_in, int h, int w) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    const int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= w || y >= h) return;
    float acc = 0.0f;
    for (int c = 0; c < c_in; ++c) {
        const float* plane = in + (size_t)c * h * w;
        const float* filter = weight + ((size_t)k * c_in + c) * 9;
#pragma unroll
        for (int dy = -1; dy <= 1; ++dy) {
#pragma unroll
            for (int dx = -1; dx <= 1; ++dx) {
                const int yy = y + dy, xx = x + dx;
                if (yy >= 0 && yy < h && xx >= 0 && xx < w)
                    acc = fmaf(plane[(size_t)yy * w + xx], filter[(dy + 1) * 3 + (dx + 1)], acc);
            }
        }
    }
    out[((size_t)k * h + y) * w + x] = acc;
}
