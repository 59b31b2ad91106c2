// Hopper (sm_90a) wgmma helpers: the warpgroup-wide tensor-core instructions that read their
// operands from shared memory by descriptor, and what goes with them. Only for code compiled for
// sm_90a (attention_sm90.cu): elsewhere the assembler refuses these instructions.
//   vk_mbar_wait_warp    vk_mbar_wait, then the warp converged again for an .aligned wgmma
//   vk_fence_proxy_async generic-proxy shared-memory writes ordered before async-proxy reads
//   vk_wgmma_fence / _commit / _wait<N>, vk_wgmma_pin   the wgmma group protocol
//   vk_desc_sw128, vk_desc_k_major   shared-memory matrix descriptors, 128-byte swizzle
#ifndef VOX_KERNELS_WGMMA_CUH
#define VOX_KERNELS_WGMMA_CUH

#include "common.cuh"

// vk_mbar_wait (common.cuh), then the warp together again: lanes leave the wait loop apart, and
// the .aligned wgmma that follows needs them together (every lane of the warp calls it).
static __device__ __forceinline__ void vk_mbar_wait_warp(uint32_t bar, uint32_t parity) {
    vk_mbar_wait(bar, parity);
    __syncwarp();
}
// Orders shared-memory writes seen through the generic proxy (plain stores, cp.async) before the
// async proxy's reads and writes (wgmma operands, tensor copies).
static __device__ __forceinline__ void vk_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

static __device__ __forceinline__ void vk_wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void vk_wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> static __device__ __forceinline__ void vk_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// The compiler sees a wgmma asm as done when it returns; these pin the registers it writes to
// the program point after the matching wait, so no use moves above the wait.
static __device__ __forceinline__ void vk_wgmma_pin(float (&x)[4]) {
    asm volatile("" : "+f"(x[0]), "+f"(x[1]), "+f"(x[2]), "+f"(x[3])::"memory");
}
template <int N> static __device__ __forceinline__ void vk_wgmma_pin(float (&x)[N][4]) {
#pragma unroll
    for (int i = 0; i < N; i++) vk_wgmma_pin(x[i]);
}

// Shared-memory matrix descriptor, 128B swizzle, tile 1024-byte aligned (base offset 0).
static __device__ __forceinline__ uint64_t vk_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | (uint64_t)((lbo >> 4) & 0x3FFFu) << 16 |
           (uint64_t)((sbo >> 4) & 0x3FFFu) << 32 | 1ull << 62;
}
// A K-major operand: the leading offset is unused with a swizzle (a k-step of 32 bytes stays
// inside the 128-byte row; CUTLASS sets 1); 8-row groups 1024 bytes apart.
static __device__ __forceinline__ uint64_t vk_desc_k_major(uint32_t addr) { return vk_desc_sw128(addr, 16, 1024); }

#endif
