// Branches ptxas turns into predicated instructions (flipflop.analysis.ifconvert): one kernel
// per case; tests/test_if_conversion.py compares the model's branches with the machine code's
// (nvdisasm) on sm_75 and sm_86.

__global__ void arith2(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
    }
    out[t] = a;
}
__global__ void arith4(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
    }
    out[t] = a;
}
__global__ void arith6(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
    }
    out[t] = a;
}
__global__ void arith8(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
        a = a * 1.0007f + 6.5f;
        a = a * 1.0008f + 7.5f;
    }
    out[t] = a;
}
__global__ void arith12(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
        a = a * 1.0007f + 6.5f;
        a = a * 1.0008f + 7.5f;
        a = a * 1.0009f + 8.5f;
        a = a * 1.0010f + 9.5f;
        a = a * 1.0011f + 10.5f;
        a = a * 1.0012f + 11.5f;
    }
    out[t] = a;
}
__global__ void arith16(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
        a = a * 1.0007f + 6.5f;
        a = a * 1.0008f + 7.5f;
        a = a * 1.0009f + 8.5f;
        a = a * 1.0010f + 9.5f;
        a = a * 1.0011f + 10.5f;
        a = a * 1.0012f + 11.5f;
        a = a * 1.0013f + 12.5f;
        a = a * 1.0014f + 13.5f;
        a = a * 1.0015f + 14.5f;
        a = a * 1.0016f + 15.5f;
    }
    out[t] = a;
}
__global__ void arith24(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
        a = a * 1.0007f + 6.5f;
        a = a * 1.0008f + 7.5f;
        a = a * 1.0009f + 8.5f;
        a = a * 1.0010f + 9.5f;
        a = a * 1.0011f + 10.5f;
        a = a * 1.0012f + 11.5f;
        a = a * 1.0013f + 12.5f;
        a = a * 1.0014f + 13.5f;
        a = a * 1.0015f + 14.5f;
        a = a * 1.0016f + 15.5f;
        a = a * 1.0017f + 16.5f;
        a = a * 1.0018f + 17.5f;
        a = a * 1.0019f + 18.5f;
        a = a * 1.0020f + 19.5f;
        a = a * 1.0021f + 20.5f;
        a = a * 1.0022f + 21.5f;
        a = a * 1.0023f + 22.5f;
        a = a * 1.0024f + 23.5f;
    }
    out[t] = a;
}
__global__ void arith32(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
        a = a * 1.0007f + 6.5f;
        a = a * 1.0008f + 7.5f;
        a = a * 1.0009f + 8.5f;
        a = a * 1.0010f + 9.5f;
        a = a * 1.0011f + 10.5f;
        a = a * 1.0012f + 11.5f;
        a = a * 1.0013f + 12.5f;
        a = a * 1.0014f + 13.5f;
        a = a * 1.0015f + 14.5f;
        a = a * 1.0016f + 15.5f;
        a = a * 1.0017f + 16.5f;
        a = a * 1.0018f + 17.5f;
        a = a * 1.0019f + 18.5f;
        a = a * 1.0020f + 19.5f;
        a = a * 1.0021f + 20.5f;
        a = a * 1.0022f + 21.5f;
        a = a * 1.0023f + 22.5f;
        a = a * 1.0024f + 23.5f;
        a = a * 1.0025f + 24.5f;
        a = a * 1.0026f + 25.5f;
        a = a * 1.0027f + 26.5f;
        a = a * 1.0028f + 27.5f;
        a = a * 1.0029f + 28.5f;
        a = a * 1.0030f + 29.5f;
        a = a * 1.0031f + 30.5f;
        a = a * 1.0032f + 31.5f;
    }
    out[t] = a;
}
__global__ void arith48(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
        a = a * 1.0006f + 5.5f;
        a = a * 1.0007f + 6.5f;
        a = a * 1.0008f + 7.5f;
        a = a * 1.0009f + 8.5f;
        a = a * 1.0010f + 9.5f;
        a = a * 1.0011f + 10.5f;
        a = a * 1.0012f + 11.5f;
        a = a * 1.0013f + 12.5f;
        a = a * 1.0014f + 13.5f;
        a = a * 1.0015f + 14.5f;
        a = a * 1.0016f + 15.5f;
        a = a * 1.0017f + 16.5f;
        a = a * 1.0018f + 17.5f;
        a = a * 1.0019f + 18.5f;
        a = a * 1.0020f + 19.5f;
        a = a * 1.0021f + 20.5f;
        a = a * 1.0022f + 21.5f;
        a = a * 1.0023f + 22.5f;
        a = a * 1.0024f + 23.5f;
        a = a * 1.0025f + 24.5f;
        a = a * 1.0026f + 25.5f;
        a = a * 1.0027f + 26.5f;
        a = a * 1.0028f + 27.5f;
        a = a * 1.0029f + 28.5f;
        a = a * 1.0030f + 29.5f;
        a = a * 1.0031f + 30.5f;
        a = a * 1.0032f + 31.5f;
        a = a * 1.0033f + 32.5f;
        a = a * 1.0034f + 33.5f;
        a = a * 1.0035f + 34.5f;
        a = a * 1.0036f + 35.5f;
        a = a * 1.0037f + 36.5f;
        a = a * 1.0038f + 37.5f;
        a = a * 1.0039f + 38.5f;
        a = a * 1.0040f + 39.5f;
        a = a * 1.0041f + 40.5f;
        a = a * 1.0042f + 41.5f;
        a = a * 1.0043f + 42.5f;
        a = a * 1.0044f + 43.5f;
        a = a * 1.0045f + 44.5f;
        a = a * 1.0046f + 45.5f;
        a = a * 1.0047f + 46.5f;
        a = a * 1.0048f + 47.5f;
    }
    out[t] = a;
}
__global__ void withload(float *out, const float *in, const float *other) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) { a = a * other[t] + 1.0f; }
    out[t] = a;
}
__global__ void withstore(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) { out[t + 1024] = a * 2.0f; }
    out[t] = a;
}
__global__ void withshared(float *out, const float *in) {
    __shared__ float s[256];
    int t = threadIdx.x;
    float a = in[t];
    s[t] = a; __syncthreads();
    if (a > 0.5f) { a = a + s[255 - t]; }
    out[t] = a;
}
__global__ void ifelse(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) { a = a * 3.0f + 1.0f; } else { a = a * 0.5f - 2.0f; }
    out[t] = a;
}
__global__ void arith3(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
    }
    out[t] = a;
}
__global__ void arith5(float *out, const float *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t];
    if (a > 0.5f) {
        a = a * 1.0001f + 0.5f;
        a = a * 1.0002f + 1.5f;
        a = a * 1.0003f + 2.5f;
        a = a * 1.0004f + 3.5f;
        a = a * 1.0005f + 4.5f;
    }
    out[t] = a;
}
__global__ void chain2(float *out, const float *in, const float *v) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float a = in[t]; float b = in[t + 4096]; int c = 0;
    if (a > v[0] && b < a * v[1] + v[2]) { c = !c; }
    out[t] = c;
}
__global__ void int5(int *out, const int *in) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int a = in[t];
    if (a > 5) { a = a * 3 + 1; a = a ^ 0x55; a = a * 7 + 2; a = a ^ 0x33; a = a * 5 + 9; }
    out[t] = a;
}