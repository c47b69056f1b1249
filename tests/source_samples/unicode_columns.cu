// Ünïcödé comments: 😀 takes two UTF-16 code units, é takes one.
__global__ void kernel_plain(float* x) {}
void go(float* x) { /* 😀😀 */ kernel_plain<<<4, 128>>>(x); }
