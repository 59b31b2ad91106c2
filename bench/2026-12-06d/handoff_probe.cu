// What one hand-off between blocks costs, through L2 (the persistent decode kernel's counters) and
// through distributed shared memory inside a thread-block cluster, with and without a weights-like
// stream beside it (bench/NOTES-2026-12-06d.md section 4: the batch-1 step is ~151 hand-offs of
// ~3.5 us each on an H100; is a cluster's hand-off short enough to build a layer around?).
//
// One block an SM (the dynamic shared memory leaves room for one), two warps:
//  - warp 1, the stream (when on): bulk copies of 24 KB pages from a 2 GiB buffer into a ring of
//    kSlots pages, at most 2 in flight (pdecode.cu's cap), evict-first, until warp 0 is done;
//  - warp 0 measures kRounds hand-offs after kWarm unmeasured ones. A hand-off, by mode:
//      grid        every block adds 1 to the round's counter in global memory (release, gpu
//                  scope) and lane 0 polls it (acquire) until every block has: pdecode.cu's
//                  signal_counter / wait_counter;
//      grid+data   the same, each block first writing its 16-byte slot of the round, and after the
//                  wait the warp loads every block's slot (a staging's L2 round trip);
//      group       the same counters, but among the 8 blocks of a cluster only (what a cluster's
//                  hand-off would cost through L2);
//      cluster     each block adds 1 to every block's counter of the cluster in their shared
//                  memory (red.release.cluster on the mapa'd address) and polls its own
//                  (ld.acquire.cluster) until the cluster's 8 blocks have;
//      cluster+data  the same, each block first writing its 16-byte slot into every block's
//                  shared memory, and after the wait reading the 8 slots from its own;
//      vec         grid, each block first writing its share of a 6 KB vector (a bf16 row of
//                  3072, 16-byte granules dealt round robin) and after the wait loading all of
//                  it: a boundary of the decode kernel at one row, output rows out, staged input in
//                  (added 2026-12-06e);
//      reduce      grid, each block first adding a whole 3072-float partial vector into the
//                  round's accumulator (red.global.add.v4.f32, 768 vector reds a block onto the
//                  same 768 addresses), and after the wait loading the 12 KB sum: the boundary of
//                  a down projection split over K (every block the down product of its own
//                  gate|up slice, so no hand-off between gate|up and down), 2026-12-06e;
//      reduce64    the same with the partial as 3072 64-bit fixed-point integers
//                  (red.global.add.u64, no vector form: 96 adds a lane), whose sum does not depend
//                  on the order of the adds (a deterministic split-K), and the 24 KB sum loaded.
// Prediction for vec and reduce (2026-12-06e, H100 or H200, stream on): vec ~4.5-6 us (grid+data's
// 6.1 us loads 16 B of every block; vec loads 6 KB in one round trip); reduce = vec + ~1-3 us (132
// reds queue at each address's L2 slice). Fusing gate|up and down pays where reduce < 2 x vec.
// Prediction for reduce64 (2026-12-06e, after vec 5.3 and reduce 7.7 us on an H100): ~9-11 us
// (4x the adds of reduce, twice the bytes loaded); a deterministic split-K pays where < 2 x vec.
// Block 0's warp 0 reports the mean us a hand-off (globaltimer), and every block checks the data
// it read (the sum of the writers' round-tagged values): a wrong sum is a failed run.
//
// Prediction (H100): grid ~1-1.5 us with the stream off and ~2.5-3.5 with it on (pdecode's
// boundaries, ~3.5 us a hand-off with a staging); group within 20% of grid (a hand-off is latency,
// not the count of blocks); cluster ~0.3-0.6 us, on or off (shared memory across the cluster does
// not queue behind the L2's traffic). If cluster with the stream on is under a third of grid, a
// layout that keeps most hand-offs inside clusters is worth designing.
//
// The counters, the stream's bulk copies, its page size and cap are pdecode.cu's own (included
// below): ld_acquire, red_release_add, bulk_copy, evict_first_policy, kPageBytes, kCounterStride,
// kInflightPages, and common.cuh's mbarriers.
//
// Build:  nvcc -arch=sm_90a -O3 -I kernels -I include -o build/tests/handoff_probe bench/2026-12-06d/handoff_probe.cu
// Run:    ./handoff_probe        (one line a mode and stream setting; exit 1 on a failed check)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pdecode.cu" // the kernel's hand-off and copy primitives (above)

namespace {

constexpr int kSlots = 5; // 120 KB: one block an SM
constexpr int kCluster = 8;
constexpr int kWarm = 16, kRounds = 400;
constexpr int kMaxGrid = 256;

enum Mode { GRID, GRID_DATA, GROUP, CLUSTER, CLUSTER_DATA, VEC, REDUCE, REDUCE64, N_MODES };
const char *kModeNames[N_MODES] = {"grid", "grid+data", "group", "cluster", "cluster+data", "vec", "reduce", "reduce64"};
constexpr int kVecGranules = 3072 * 2 / 16;    // VEC: a bf16 row of 3072 in 16-byte granules
constexpr int kReduceGranules = 3072 * 4 / 16; // REDUCE: a float row of 3072 in float4s
constexpr int kReduce64Words = 3072;           // REDUCE64: 64-bit integers

struct Args {
    const unsigned char *weights;
    size_t weight_bytes;
    unsigned *counters;   // (kWarm + kRounds) x kCounterStride, zeroed; GROUP: a set per cluster
    uint4 *slots;         // GRID_DATA: (kWarm + kRounds) x grid
    uint4 *vecs;          // VEC, REDUCE: (kWarm + kRounds) x kReduceGranules, zeroed
    unsigned long long *vec64; // REDUCE64: (kWarm + kRounds) x kReduce64Words, zeroed
    float *result_us;     // block 0's us a hand-off
    int *bad;             // blocks whose data sum was wrong
    int mode, stream;
};

__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t mapa(uint32_t addr, uint32_t rank) {
    uint32_t out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
    return out;
}
__device__ __forceinline__ void red_release_cluster(uint32_t addr, unsigned v) {
    asm volatile("red.release.cluster.shared::cluster.add.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire_cluster(uint32_t addr) {
    unsigned v;
    asm volatile("ld.acquire.cluster.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
__device__ __forceinline__ void st_cluster_v4(uint32_t addr, uint4 v) {
    asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ void red_add_v4(float4 *a, float4 v) {
    asm volatile("red.relaxed.gpu.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(a), "f"(v.x), "f"(v.y), "f"(v.z),
                 "f"(v.w)
                 : "memory");
}

// The warp's part of a grid-wide hand-off (what it wrote before is published): lane 0 adds 1 to
// the round's counter c (release) and polls it (acquire) until all G blocks have, as pdecode.cu's
// signal_counter / wait_counter.
__device__ __forceinline__ void grid_handoff(unsigned *c, int G, int lane) {
    __syncwarp();
    if (lane == 0) {
        red_release_add(c, 1u);
        while (ld_acquire(c) < (unsigned)G) __nanosleep(32);
    }
    __syncwarp();
}

// The round's value block b writes: tagged with the round, so a stale slot sums wrong.
__device__ __forceinline__ uint4 slot_value(int round, int b) {
    return make_uint4((unsigned)round, (unsigned)b, (unsigned)(round * 7 + b), 1u);
}

__global__ void __launch_bounds__(64, 1) probe(const Args a) {
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ __align__(8) uint64_t full[kSlots];
    __shared__ unsigned cl_counter;               // CLUSTER modes: hand-offs seen so far
    __shared__ __align__(16) uint4 cl_slots[2][kCluster]; // CLUSTER_DATA: the round's slots (2 rounds' worth)
    __shared__ volatile int stop;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, G = gridDim.x;
    const bool in_cluster = a.mode == CLUSTER || a.mode == CLUSTER_DATA;
    if (threadIdx.x == 0) {
        for (int i = 0; i < kSlots; i++) vk_mbar_init(vk_smem_u32(&full[i]), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        cl_counter = 0, stop = 0;
    }
    __syncthreads();
    if (in_cluster) cluster_sync_all(); // every block's counter initialised before any remote add
    if (warp == 1) {
        if (a.stream && lane == 0) {
            size_t pages = a.weight_bytes / kPageBytes, next = (size_t)blockIdx.x * 977 % pages;
            const uint64_t policy = evict_first_policy();
            uint32_t i = 0;
            for (; !stop; i++) {
                const int slot = i % kSlots;
                if (i >= (uint32_t)kInflightPages) {
                    const uint32_t older = i - kInflightPages;
                    vk_mbar_wait(vk_smem_u32(&full[older % kSlots]), (older / kSlots) & 1);
                }
                vk_mbar_expect_tx(vk_smem_u32(&full[slot]), kPageBytes);
                bulk_copy(ring + (size_t)slot * kPageBytes, a.weights + next * kPageBytes, kPageBytes, &full[slot], policy);
                next = (next + 1) % pages;
            }
            for (uint32_t j = i > (uint32_t)kInflightPages ? i - kInflightPages : 0; j < i; j++) // the last copies land
                vk_mbar_wait(vk_smem_u32(&full[j % kSlots]), (j / kSlots) & 1);
        }
    } else {
        const uint32_t rank = in_cluster ? cluster_rank() : 0;
        long long t0 = 0;
        unsigned sum_bad = 0;
        for (int r = 0; r < kWarm + kRounds; r++) {
            if (r == kWarm) t0 = global_ns();
            if (a.mode == REDUCE64) {
                unsigned long long *v = a.vec64 + (size_t)r * kReduce64Words;
                for (int i = lane; i < kReduce64Words; i += 32)
                    asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(v + i),
                                 "l"((unsigned long long)(blockIdx.x + 1) << 20)
                                 : "memory");
                grid_handoff(a.counters + (size_t)r * kCounterStride, G, lane);
                constexpr int kPerLane = kReduce64Words / 32;
                unsigned long long got[kPerLane];
#pragma unroll
                for (int j = 0; j < kPerLane; j++) got[j] = __ldcg(&v[lane + j * 32]);
                const unsigned long long want = ((unsigned long long)G * (G + 1) / 2) << 20;
                bool wrong = false;
#pragma unroll
                for (int j = 0; j < kPerLane; j++) wrong |= got[j] != want;
                sum_bad |= __any_sync(0xffffffffu, wrong);
            } else if (a.mode == VEC || a.mode == REDUCE) {
                uint4 *v = a.vecs + (size_t)r * kReduceGranules;
                if (a.mode == VEC)
                    for (int i = blockIdx.x + lane * G; i < kVecGranules; i += 32 * G) v[i] = slot_value(r, i);
                else
                    for (int i = lane; i < kReduceGranules; i += 32) {
                        const float f = (float)(blockIdx.x + 1);
                        red_add_v4(reinterpret_cast<float4 *>(v + i), make_float4(f, f, f, f));
                    }
                grid_handoff(a.counters + (size_t)r * kCounterStride, G, lane);
                // the whole vector, every load in flight at once
                constexpr int kMaxPerLane = kReduceGranules / 32;
                const int n = a.mode == VEC ? kVecGranules : kReduceGranules;
                uint4 got[kMaxPerLane];
#pragma unroll
                for (int j = 0; j < kMaxPerLane; j++)
                    if (lane + j * 32 < n) got[j] = __ldcg(&v[lane + j * 32]);
                bool wrong = false;
                const float want = (float)G * (G + 1) / 2;
#pragma unroll
                for (int j = 0; j < kMaxPerLane; j++) {
                    const int i = lane + j * 32;
                    if (i >= n) break;
                    if (a.mode == VEC) {
                        const uint4 w = slot_value(r, i);
                        wrong |= got[j].x != w.x || got[j].y != w.y || got[j].z != w.z || got[j].w != w.w;
                    } else {
                        wrong |= __uint_as_float(got[j].x) != want || __uint_as_float(got[j].w) != want;
                    }
                }
                sum_bad |= __any_sync(0xffffffffu, wrong);
            } else if (a.mode == GRID || a.mode == GRID_DATA || a.mode == GROUP) {
                unsigned *c = a.counters + ((size_t)r * (a.mode == GROUP ? G / kCluster : 1) +
                                            (a.mode == GROUP ? blockIdx.x / kCluster : 0)) * kCounterStride;
                const unsigned target = a.mode == GROUP ? kCluster : (unsigned)G;
                if (a.mode == GRID_DATA && lane == 0) a.slots[(size_t)r * G + blockIdx.x] = slot_value(r, blockIdx.x);
                __syncwarp();
                if (lane == 0) {
                    red_release_add(c, 1u);
                    while (ld_acquire(c) < target) __nanosleep(32); // as pdecode.cu's wait_counter
                }
                __syncwarp();
                if (a.mode == GRID_DATA) { // every block's slot, one L2 round trip (lanes in parallel)
                    unsigned s = 0, want = 0;
                    for (int b = lane; b < G; b += 32) {
                        const uint4 v = __ldcg(&a.slots[(size_t)r * G + b]);
                        const uint4 w = slot_value(r, b);
                        s += v.x + v.y + v.z + v.w, want += w.x + w.y + w.z + w.w;
                    }
                    sum_bad |= __any_sync(0xffffffffu, s != want);
                }
            } else {
                if (a.mode == CLUSTER_DATA && lane < kCluster) // my slot into every block of the cluster
                    st_cluster_v4(mapa(vk_smem_u32(&cl_slots[r & 1][rank]), (uint32_t)lane), slot_value(r, rank));
                __syncwarp();
                if (lane < kCluster) red_release_cluster(mapa(vk_smem_u32(&cl_counter), (uint32_t)lane), 1u);
                if (lane == 0)
                    while (ld_acquire_cluster(vk_smem_u32(&cl_counter)) < (unsigned)((r + 1) * kCluster)) __nanosleep(32);
                __syncwarp();
                if (a.mode == CLUSTER_DATA) {
                    // Two rounds' slots alternate: a block can be at most one round ahead of
                    // another (round r + 1's counter needs every block's round r + 1 add).
                    unsigned s = 0, want = 0;
                    if (lane < kCluster) {
                        const uint4 v = cl_slots[r & 1][lane], w = slot_value(r, lane);
                        s = v.x + v.y + v.z + v.w, want = w.x + w.y + w.z + w.w;
                    }
                    sum_bad |= __any_sync(0xffffffffu, s != want);
                }
            }
        }
        const long long t1 = global_ns();
        if (lane == 0) {
            if (blockIdx.x == 0) *a.result_us = (float)((t1 - t0) * 1e-3 / kRounds);
            if (sum_bad) atomicAdd(a.bad, 1);
            stop = 1;
        }
    }
    __syncthreads();
    if (in_cluster) cluster_sync_all(); // no block leaves while another may still add to its counter
}

} // namespace

#define CHECK(x)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_) {                                                                                \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));          \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

int main() {
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int grid = sms / kCluster * kCluster; // the same grid for every mode: whole clusters, all resident
    if (grid > kMaxGrid) return fprintf(stderr, "too many SMs\n"), 2;
    const size_t weight_bytes = (size_t)2 << 30;
    unsigned char *weights;
    unsigned *counters;
    uint4 *slots, *vecs;
    unsigned long long *vec64;
    float *result;
    int *bad;
    CHECK(cudaMalloc(&weights, weight_bytes));
    CHECK(cudaMemset(weights, 1, weight_bytes));
    const size_t n_counters = (size_t)(kWarm + kRounds) * (grid / kCluster) * kCounterStride;
    CHECK(cudaMalloc(&counters, n_counters * sizeof(unsigned)));
    CHECK(cudaMalloc(&slots, (size_t)(kWarm + kRounds) * grid * sizeof(uint4)));
    const size_t vec_bytes = (size_t)(kWarm + kRounds) * kReduceGranules * sizeof(uint4);
    CHECK(cudaMalloc(&vecs, vec_bytes));
    const size_t vec64_bytes = (size_t)(kWarm + kRounds) * kReduce64Words * sizeof(unsigned long long);
    CHECK(cudaMalloc(&vec64, vec64_bytes));
    CHECK(cudaMalloc(&result, sizeof(float)));
    CHECK(cudaMalloc(&bad, sizeof(int)));
    const int smem = kSlots * kPageBytes;
    CHECK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    { // every block resident at once, or the grid-wide hand-offs never complete
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(grid), cfg.blockDim = dim3(64), cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = kCluster, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr, cfg.numAttrs = 1;
        int clusters = 0;
        CHECK(cudaOccupancyMaxActiveClusters(&clusters, probe, &cfg));
        if (clusters < 1) return fprintf(stderr, "no cluster of %d fits\n", kCluster), 2;
        if (clusters * kCluster < grid) grid = clusters * kCluster; // 15 on an H100: 120 blocks
    }
    printf("%s, %d SMs, grid %d, clusters of %d; us a hand-off (mean of %d after %d)\n", prop.name, sms,
           grid, kCluster, kRounds, kWarm);
    int failed = 0;
    for (int stream = 0; stream < 2; stream++) {
        for (int mode = 0; mode < N_MODES; mode++) {
            float us[3];
            for (int rep = 0; rep < 3; rep++) {
                CHECK(cudaMemset(counters, 0, n_counters * sizeof(unsigned)));
                CHECK(cudaMemset(slots, 0, (size_t)(kWarm + kRounds) * grid * sizeof(uint4)));
                CHECK(cudaMemset(vecs, 0, vec_bytes));
                CHECK(cudaMemset(vec64, 0, vec64_bytes));
                CHECK(cudaMemset(bad, 0, sizeof(int)));
                Args a = {weights, weight_bytes, counters, slots, vecs, vec64, result, bad, mode, stream};
                cudaLaunchConfig_t cfg = {};
                cfg.gridDim = dim3(grid), cfg.blockDim = dim3(64), cfg.dynamicSmemBytes = smem;
                cudaLaunchAttribute attr[1];
                attr[0].id = cudaLaunchAttributeClusterDimension;
                attr[0].val.clusterDim.x = kCluster, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
                cfg.attrs = attr, cfg.numAttrs = 1; // every mode launches as clusters (same placement)
                CHECK(cudaLaunchKernelEx(&cfg, probe, a));
                CHECK(cudaDeviceSynchronize());
                int b = 0;
                CHECK(cudaMemcpy(&us[rep], result, sizeof(float), cudaMemcpyDeviceToHost));
                CHECK(cudaMemcpy(&b, bad, sizeof(int), cudaMemcpyDeviceToHost));
                if (b) failed = 1, printf("  %s: %d blocks read wrong data\n", kModeNames[mode], b);
            }
            printf("%-13s stream %-3s | %.3f %.3f %.3f\n", kModeNames[mode], stream ? "on" : "off", us[0], us[1], us[2]);
        }
    }
    return failed;
}
