// Shared helpers of a benchmark suite: the kernels are plain CUDA, the reference uses cuBLAS.
#pragma once
#include <cstdio>
#include <cuda_runtime.h>
#include <cublas_v2.h>

inline void check_blas(cublasStatus_t status, const char* what)
{
    if (status != CUBLAS_STATUS_SUCCESS) {
        std::printf("cuBLAS error %d in %s\n", static_cast<int>(status), what);
    }
}
