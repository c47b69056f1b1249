// Answers occupancy queries with NVIDIA's cuda_occupancy.h, one query per input line.
//
//   D major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM smemPerBlock
//     smemPerSM numSms smemPerBlockOptin reservedSmemPerBlock      -> selects the device, prints "ok"
//   O regs staticSmem dynamicSmem maxDynamicSmem blockSize carveoutPercent barriers
//     -> "active limitWarps limitRegs limitSmem limitBlocks limitBarriers allocRegs allocSmem"
//   M regs staticSmem dynamicSmem maxDynamicSmem blockSizeLimit -> "blockSize minGridSize"
//
// A failing call prints "error CODE". carveoutPercent -1 is the driver default.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "cuda_occupancy.h"

static cudaOccFuncAttributes function_attributes(int regs, long static_smem, long max_dynamic,
                                                 int max_threads, int barriers) {
    // The values cudaFuncGetAttributes yields through the header's converting constructor.
    cudaOccFuncAttributes attributes;
    attributes.maxThreadsPerBlock = max_threads;
    attributes.numRegs = regs;
    attributes.sharedSizeBytes = static_cast<size_t>(static_smem);
    attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
    attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
    attributes.maxDynamicSharedSizeBytes = static_cast<size_t>(max_dynamic);
    attributes.numBlockBarriers = barriers;
    attributes.virtualResourceCount = 0;
    return attributes;
}

int main() {
    std::ios::sync_with_stdio(false);
    cudaOccDeviceProp device;
    std::string kind;
    char line[128];
    while (std::cin >> kind) {
        if (kind == "D") {
            long smem_per_block, smem_per_sm, optin, reserved;
            std::cin >> device.computeMajor >> device.computeMinor >> device.maxThreadsPerBlock >>
                device.maxThreadsPerMultiprocessor >> device.regsPerBlock >>
                device.regsPerMultiprocessor >> smem_per_block >> smem_per_sm >> device.numSms >>
                optin >> reserved;
            device.warpSize = 32;
            device.sharedMemPerBlock = static_cast<size_t>(smem_per_block);
            device.sharedMemPerMultiprocessor = static_cast<size_t>(smem_per_sm);
            device.sharedMemPerBlockOptin = static_cast<size_t>(optin);
            device.reservedSharedMemPerBlock = static_cast<size_t>(reserved);
            std::cout << "ok\n";
        } else if (kind == "O") {
            int regs, block, carveout, barriers;
            long static_smem, dynamic_smem, max_dynamic;
            std::cin >> regs >> static_smem >> dynamic_smem >> max_dynamic >> block >> carveout >>
                barriers;
            cudaOccFuncAttributes attributes =
                function_attributes(regs, static_smem, max_dynamic, 1024, barriers);
            cudaOccDeviceState state;
            state.carveoutConfig = carveout;
            cudaOccResult result;
            std::memset(&result, 0, sizeof(result));
            cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(
                &result, &device, &attributes, &state, block, static_cast<size_t>(dynamic_smem));
            if (status != CUDA_OCC_SUCCESS) {
                std::cout << "error " << status << '\n';
                continue;
            }
            std::snprintf(line, sizeof(line), "%d %d %d %d %d %d %d %ld\n",
                          result.activeBlocksPerMultiprocessor, result.blockLimitWarps,
                          result.blockLimitRegs, result.blockLimitSharedMem,
                          result.blockLimitBlocks, result.blockLimitBarriers,
                          result.allocatedRegistersPerBlock,
                          static_cast<long>(result.allocatedSharedMemPerBlock));
            std::cout << line;
        } else if (kind == "M") {
            int regs, limit;
            long static_smem, dynamic_smem, max_dynamic;
            std::cin >> regs >> static_smem >> dynamic_smem >> max_dynamic >> limit;
            // cudaOccupancyMaxPotentialBlockSize caps the block size by blockSizeLimit (0: none)
            // and the function's maxThreadsPerBlock; the header sees the smaller of the two.
            int max_threads = limit > 0 && limit < device.maxThreadsPerBlock
                                  ? limit
                                  : device.maxThreadsPerBlock;
            cudaOccFuncAttributes attributes =
                function_attributes(regs, static_smem, max_dynamic, max_threads, 1);
            cudaOccDeviceState state;
            int min_grid = 0, block = 0;
            cudaOccError status = cudaOccMaxPotentialOccupancyBlockSize(
                &min_grid, &block, &device, &attributes, &state, static_cast<size_t>(dynamic_smem));
            if (status != CUDA_OCC_SUCCESS) {
                std::cout << "error " << status << '\n';
                continue;
            }
            std::cout << block << ' ' << min_grid << '\n';
        } else {
            std::cerr << "unknown query " << kind << '\n';
            return 2;
        }
    }
    return 0;
}
