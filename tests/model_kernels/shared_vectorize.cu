// ptxas's merging of neighbouring shared-memory accesses (flipflop.analysis.vectorize): one
// kernel per rule; tests/test_shared_vectorize.py compares the model's accesses with the
// LDS/STS ptxas emits for each (nvdisasm), on sm_75 and sm_86.

__global__ void aligned4(float *out) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[4*t] + s[4*t+1] + s[4*t+2] + s[4*t+3];
}
__global__ void shifted(float *out) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[4*t+1] + s[4*t+2] + s[4*t+3] + s[4*t+4];
}
__global__ void lanestride1(float *out) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[t] + s[t+1] + s[t+2] + s[t+3];
}
__global__ void eight(float *out) {
    __shared__ float s[2048];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    float a = 0;
    #pragma unroll
    for (int i = 0; i < 8; i++) a += s[8*t + i];
    out[t] = a;
}
__global__ void stores4(float *out, float v) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[4*t] = v; s[4*t+1] = v*2; s[4*t+2] = v*3; s[4*t+3] = v*4;
    __syncthreads();
    out[t] = s[1023 - t];
}
__global__ void second_array(float *out) {
    __shared__ float a[3];
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; if (t < 3) a[t] = t; __syncthreads();
    out[t] = s[4*t] + s[4*t+1] + s[4*t+2] + s[4*t+3] + a[t%3];
}

__global__ void dyn(float *out) {
    extern __shared__ float s[];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[4*t] + s[4*t+1] + s[4*t+2] + s[4*t+3];
}
__global__ void storebetween(float *out, float *in) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    float a = s[4*t] + s[4*t+1];
    s[1000 - t] = a;
    out[t] = a + s[4*t+2] + s[4*t+3];
}
__global__ void gap(float *out) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[4*t] + s[4*t+2];
}
__global__ void pair(float *out) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[4*t] + s[4*t+1];
}
__global__ void bytes(float *out) {
    __shared__ unsigned char s[4096];
    int t = threadIdx.x;
    s[t] = t; __syncthreads();
    out[t] = s[4*t] + s[4*t+1] + s[4*t+2] + s[4*t+3];
}
__global__ void far_apart(float *out, const float *in) {
    __shared__ float s[2048];
    int t = threadIdx.x;
    #pragma unroll
    for (int i = 0; i < 16; i++) s[128 * i + 2 * t] = in[i * 64 + t];
    #pragma unroll
    for (int i = 0; i < 16; i++) s[128 * i + 2 * t + 1] = in[i * 64 + t + 1024];
    __syncthreads();
    out[t] = s[2047 - t];
}
