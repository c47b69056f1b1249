// flipflop-test: arch=sm_90,sm_90a,sm_100a,sm_120
// Two thread blocks of a cluster exchange their partial sums through distributed shared
// memory: each block's elected thread writes its sum into the peer block's shared memory and
// arrives on the peer's mbarrier; each block waits on its own barrier, then adds the two. The
// synchronisation is hand-written inline asm in the style of CUTLASS's and CUB's barriers:
// registers named without '%', labels inside the asm's scope, `elect.sync _|P`, `[remote]`.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace cg = cooperative_groups;

__device__ __forceinline__ uint32_t shared_address(const void* pointer)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void barrier_init(uint64_t* barrier, uint32_t arrivals)
{
    asm volatile("{\n\t"
                 "mbarrier.init.shared::cta.b64 [%1], %0; \n"
                 "}"
                 :
                 : "r"(arrivals), "r"(shared_address(barrier)));
}

// Spins until the barrier's phase `parity` completes; the loop's labels live in the asm's scope,
// so every inlined copy has its own.
__device__ __forceinline__ void barrier_wait(uint64_t* barrier, uint32_t parity)
{
    asm volatile("{\n\t"
                 ".reg .pred       done_waiting; \n\t"
                 "WAIT_AGAIN: \n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done_waiting, [%0], %1; \n\t"
                 "@done_waiting bra FINISHED; \n\t"
                 "bra     WAIT_AGAIN; \n\t"
                 "FINISHED: \n\t"
                 "}"
                 :
                 : "r"(shared_address(barrier)), "r"(parity));
}

__device__ __forceinline__ bool barrier_test(uint64_t* barrier, uint32_t parity, uint32_t enabled)
{
    uint32_t complete;
    asm volatile("{\n\t"
                 ".reg .pred P1; \n\t"
                 ".reg .pred P2; \n\t"
                 "setp.eq.u32 P2, %3, 1;\n\t"
                 "@P2 mbarrier.test_wait.parity.shared::cta.b64 P1, [%1], %2; \n\t"
                 "selp.b32 %0, 1, 0, P1; \n\t"
                 "}"
                 : "=r"(complete)
                 : "r"(shared_address(barrier)), "r"(parity), "r"(enabled));
    return complete != 0;
}

// Arrives on the barrier at the same shared-memory offset in block `rank` of the cluster.
__device__ __forceinline__ void barrier_arrive_remote(uint64_t* barrier, uint32_t rank)
{
    asm volatile("{\n\t"
                 ".reg .b32 remote;\n\t"
                 "mapa.shared::cluster.u32  remote, %0, %1;\n\t"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64  _, [remote];\n\t"
                 "}"
                 :
                 : "r"(shared_address(barrier)), "r"(rank)
                 : "memory");
}

// One lane of the warp, chosen by the hardware; its lane number comes back as well.
__device__ __forceinline__ uint32_t elect_one(uint32_t& lane)
{
    uint32_t elected = 0;
    asm volatile("{\n"
                 ".reg .b32 %%rx;\n"
                 ".reg .pred %%px;\n"
                 "     elect.sync %%rx|%%px, %2;\n"
                 "@%%px mov.s32 %1, 1;\n"
                 "     mov.s32 %0, %%rx;\n"
                 "}\n"
                 : "+r"(lane), "+r"(elected)
                 : "r"(0xffffffffu));
    return elected;
}

__device__ __forceinline__ bool elected_lane()
{
    uint32_t elected;
    asm volatile("{\n\t .reg .pred P_OUT; \n\t"
                 "elect.sync _|P_OUT, %1;\n\t"
                 "selp.b32 %0, 1, 0, P_OUT; \n"
                 "}"
                 : "=r"(elected)
                 : "r"(0xffffffffu));
    return elected != 0;
}

// The upper half of a 32-bit value, through a register pair declared in the asm.
__device__ __forceinline__ uint32_t upper_half(uint32_t value)
{
    uint32_t upper;
    asm("{\n\t"
        ".reg .b16 lo, hi;\n\t"
        "mov.b32 {lo, hi}, %1;\n\t"
        "cvt.u32.u16 %0, hi; \n\t"
        "}"
        : "=r"(upper)
        : "r"(value));
    return upper;
}

// `__cluster_dims__(2, 1, 1)` spelled out as the attribute it stands for (crt/host_defines.h): the
// source front end does not read the macro yet.
__global__ void __attribute__((cluster_dims(2, 1, 1))) __launch_bounds__(256)
cluster_pair_sum(const float* __restrict__ in, float* __restrict__ out, uint32_t* __restrict__ leaders, int n)
{
    __shared__ uint64_t arrived;
    __shared__ float warp_sums[8];
    __shared__ float peer_sum;
    cg::cluster_group cluster = cg::this_cluster();
    const uint32_t rank = cluster.block_rank();
    const uint32_t peer = rank ^ 1u;

    if (threadIdx.x == 0) {
        barrier_init(&arrived, 1);
    }
    cluster.sync();

    const int index = blockIdx.x * blockDim.x + threadIdx.x;
    float value = index < n ? in[index] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_xor_sync(0xffffffffu, value, offset);
    }
    if (threadIdx.x % 32 == 0) {
        warp_sums[threadIdx.x / 32] = value;
    }
    __syncthreads();

    if (threadIdx.x < 32) {
        float block_sum = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
        for (int offset = 4; offset > 0; offset /= 2) {
            block_sum += __shfl_xor_sync(0xffffffffu, block_sum, offset);
        }
        uint32_t lane = 0;
        if (elect_one(lane)) {
            float* remote_sum = cluster.map_shared_rank(&peer_sum, peer);
            *remote_sum = block_sum;
            leaders[blockIdx.x] = upper_half(lane << 16);
            barrier_arrive_remote(&arrived, peer);
        }
        if (elected_lane()) {
            if (!barrier_test(&arrived, 0, 1)) {
                barrier_wait(&arrived, 0);
            }
            out[blockIdx.x] = block_sum + peer_sum;
        }
    }
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
    cg::invoke_one(warp, [&] { leaders[gridDim.x + blockIdx.x] = rank; });
    barrier_wait(&arrived, 0);
    cluster.sync();
}

void pair_sums(const float* in, float* out, uint32_t* leaders, int n)
{
    const int blocks = 2 * ((n + 511) / 512);
    cluster_pair_sum<<<blocks, 256>>>(in, out, leaders, n);
}
