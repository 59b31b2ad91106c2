// Hopper (sm_90a) wgmma helpers: the warpgroup-wide tensor-core instructions that read their
// operands from shared memory by descriptor, and what goes with them. Only for code compiled for
// sm_90a (attention_sm90.cu): elsewhere the assembler refuses these instructions.
//   vk_mbar_wait_warp    vk_mbar_wait, then the warp converged again for an .aligned wgmma
//   vk_fence_proxy_async generic-proxy shared-memory writes ordered before async-proxy reads
//   vk_wgmma_fence / _commit / _wait<N>, vk_wgmma_pin   the wgmma group protocol
//   vk_desc_sw128, vk_desc_k_major   shared-memory matrix descriptors, 128-byte swizzle
//   vk_sw128_off                    a 16-byte piece's place in such a tile
//   vk_wgmma_m64n128k16_ss          d (+)= A B^T, 64 x 128 x 16, bf16 operands from shared memory
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
// Byte offset of the 16-byte piece c of row r in a tile of `rows` rows stored in that layout:
// panels of 64 bf16 columns one after the other, each `rows` rows of 128 bytes, piece c % 8 of a
// row at c % 8 ^ r % 8 (tiles and panels 1024-byte aligned).
static __device__ __forceinline__ uint32_t vk_sw128_off(int r, int c, int rows) {
    return (uint32_t)(c >> 3) * rows * 128u + (uint32_t)r * 128u + ((uint32_t)((c & 7) ^ (r & 7)) << 4);
}
// A K-major operand: the leading offset is unused with a swizzle (a k-step of 32 bytes stays
// inside the 128-byte row; CUTLASS sets 1); 8-row groups 1024 bytes apart.
static __device__ __forceinline__ uint64_t vk_desc_k_major(uint32_t addr) { return vk_desc_sw128(addr, 16, 1024); }

// d = A B^T (scale_d 0: overwrite) or d += A B^T (1): 64 x 128 x 16, fp32 accumulators, bf16 A
// and B both from shared memory by descriptor, both K-major (attention_sm90.cu's S = Q K^T).
static __device__ __forceinline__ void vk_wgmma_m64n128k16_ss(float (&s)[16][4], uint64_t da,
                                                              uint64_t db, int scale_d) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n"
        "}\n"
        : "+f"(s[0][0]), "+f"(s[0][1]), "+f"(s[0][2]), "+f"(s[0][3]), "+f"(s[1][0]),
          "+f"(s[1][1]), "+f"(s[1][2]), "+f"(s[1][3]), "+f"(s[2][0]), "+f"(s[2][1]),
          "+f"(s[2][2]), "+f"(s[2][3]), "+f"(s[3][0]), "+f"(s[3][1]), "+f"(s[3][2]),
          "+f"(s[3][3]), "+f"(s[4][0]), "+f"(s[4][1]), "+f"(s[4][2]), "+f"(s[4][3]),
          "+f"(s[5][0]), "+f"(s[5][1]), "+f"(s[5][2]), "+f"(s[5][3]), "+f"(s[6][0]),
          "+f"(s[6][1]), "+f"(s[6][2]), "+f"(s[6][3]), "+f"(s[7][0]), "+f"(s[7][1]),
          "+f"(s[7][2]), "+f"(s[7][3]), "+f"(s[8][0]), "+f"(s[8][1]), "+f"(s[8][2]),
          "+f"(s[8][3]), "+f"(s[9][0]), "+f"(s[9][1]), "+f"(s[9][2]), "+f"(s[9][3]),
          "+f"(s[10][0]), "+f"(s[10][1]), "+f"(s[10][2]), "+f"(s[10][3]), "+f"(s[11][0]),
          "+f"(s[11][1]), "+f"(s[11][2]), "+f"(s[11][3]), "+f"(s[12][0]), "+f"(s[12][1]),
          "+f"(s[12][2]), "+f"(s[12][3]), "+f"(s[13][0]), "+f"(s[13][1]), "+f"(s[13][2]),
          "+f"(s[13][3]), "+f"(s[14][0]), "+f"(s[14][1]), "+f"(s[14][2]), "+f"(s[14][3]),
          "+f"(s[15][0]), "+f"(s[15][1]), "+f"(s[15][2]), "+f"(s[15][3])
        : "l"(da), "l"(db), "r"(scale_d)
        : "memory");
#endif
}

#endif
