// FP8 (E4M3) device helpers shared by the FP8 kernels (fp8.cu, fp8_matvec.cu through
// matvec.cuh): the scheme of common/fp8.h on the device, bit for bit the host's.
//   vk_e4m3           the code of a float: round to nearest even, finite values past 448
//                     saturate (cvt.rn.satfinite; emulated below sm_89, same results)
//   vk_e4m3_value     the value of a code (exact in fp16, so through half)
//   vk_fp8_scale      the scheme's row scale from a row's max |x|
//   vk_fp8_quantize   the code of clamp(x / s, -448, 448), the division IEEE-rounded
//   vk_dot16_e4m3     16 codes (one 16-byte word) times 16 floats, fp32 products and sums
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

#endif
