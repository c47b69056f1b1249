// CLBlast's GEMM kernel as Kernel Tuner compiled it for the measured search spaces
// (calibration/data/measured/gemm/tune_gemm.py.txt): cl_to_cuda.h, then common.opencl and
// xgemm_part1..4.opencl in that order. Compile with -I pointing at that folder.
#include "cl_to_cuda.h"
#include "common.opencl"
#include "xgemm_part1.opencl"
#include "xgemm_part2.opencl"
#include "xgemm_part3.opencl"
#include "xgemm_part4.opencl"
