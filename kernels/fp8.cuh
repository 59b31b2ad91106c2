// FP8 (E4M3) device helpers shared by the FP8 kernels (fp8.cu, fp8_matvec.cu through
// matvec.cuh): the scheme of common/fp8.h on the device, bit for bit the host's.
//   vk_e4m3           the code of a float: round to nearest even, finite values past 448
//                     saturate (cvt.rn.satfinite; emulated below sm_89, same results)
//   vk_e4m3_value     the value of a code (exact in fp16, so through half)
//   vk_fp8_scale      the scheme's row scale from a row's max |x|
//   vk_fp8_quantize   the code of clamp(x / s, -448, 448), the division IEEE-rounded
//   vk_dot16_e4m3     16 codes (one 16-byte word) times 16 floats, fp32 products and sums
//   vk_mma_e4m3_16832 d += a * b on the FP8 tensor cores (sm_89+), mma.sync m16n8k32
#ifndef VOX_KERNELS_FP8_CUH
#define VOX_KERNELS_FP8_CUH

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#define VK_E4M3_MAX 448.0f

static __device__ __forceinline__ uint8_t vk_e4m3(float v) {
    return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

static __device__ __forceinline__ float vk_e4m3_value(uint8_t code) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, __NV_E4M3)));
}

// s = max|x| / 448 (1 for an all-zero row), as vox_fp8_row_scale.
static __device__ __forceinline__ float vk_fp8_scale(float amax) {
    return amax > 0.0f ? __fdiv_rn(amax, VK_E4M3_MAX) : 1.0f;
}

static __device__ __forceinline__ uint8_t vk_fp8_quantize(float x, float s) {
    const float v = __fdiv_rn(x, s);
    return vk_e4m3(fminf(fmaxf(v, -VK_E4M3_MAX), VK_E4M3_MAX));
}

static __device__ __forceinline__ float vk_dot16_e4m3(uint4 w, const float x[16]) {
    const __nv_fp8x2_storage_t *p = (const __nv_fp8x2_storage_t *)&w;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float2 f = __half22float2(__half2(__nv_cvt_fp8x2_to_halfraw2(p[i], __NV_E4M3)));
        s = fmaf(f.x, x[2 * i], s);
        s = fmaf(f.y, x[2 * i + 1], s);
    }
    return s;
}

// d += a (16x32, row) * b (32x8, col), E4M3 codes in, fp32 out. Fragment layout (g = lane/4,
// t = lane%4), each register 4 codes of consecutive k: a0 (row g, k 4t..4t+3), a1 (row g+8, same
// k), a2 (row g, k 16+4t..), a3 (row g+8, k 16+4t..); b0 (k 4t..4t+3, n g), b1 (k 16+4t.., n g);
// d0,d1 (g, 2t..2t+1), d2,d3 (g+8, 2t..2t+1). The products are exact; Hopper's FP8 tensor cores
// keep fewer mantissa bits than fp32 in the sum they add to d (about 13, as SageAttention2
// measured on Ada and Hopper), so a caller that wants fp32 sums over a long k starts d from zero
// for each instruction and adds the results itself. Traps below sm_89 (no FP8 mma).
static __device__ __forceinline__ void vk_mma_e4m3_16832(float (&d)[4], const uint32_t (&a)[4],
                                                         uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)d, (void)a, (void)b0, (void)b1;
    __trap();
#endif
}

#endif
