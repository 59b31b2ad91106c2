/* Element types of stored and computed tensors, and the bf16 <-> f32 conversions. */
#ifndef VOX_COMMON_DTYPE_H
#define VOX_COMMON_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The dtypes safetensors knows. The model uses F32, BF16 and F16, and F8_E4M3 with row scales
 * for the text decoder's linear layers (common/fp8.h); the rest are parsed so that a file is
 * validated in full, then rejected by the model loader with a clear message. */
typedef enum {
    VOX_DTYPE_BOOL,
    VOX_DTYPE_U8,
    VOX_DTYPE_I8,
    VOX_DTYPE_F8_E4M3,
    VOX_DTYPE_F8_E5M2,
    VOX_DTYPE_I16,
    VOX_DTYPE_U16,
    VOX_DTYPE_F16,
    VOX_DTYPE_BF16,
    VOX_DTYPE_I32,
    VOX_DTYPE_U32,
    VOX_DTYPE_F32,
    VOX_DTYPE_I64,
    VOX_DTYPE_U64,
    VOX_DTYPE_F64,
    VOX_DTYPE_COUNT
} vox_dtype;

/* Bytes per element; the safetensors spelling ("BF16"); parse back (returns 0 on unknown). */
size_t vox_dtype_size(vox_dtype t);
const char *vox_dtype_name(vox_dtype t);
int vox_dtype_from_name(const char *name, vox_dtype *out);

static inline float vox_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round to nearest even, as torch's .to(torch.bfloat16) does; NaN stays NaN. */
static inline uint16_t vox_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float vox_f16_to_f32(uint16_t h);
uint16_t vox_f32_to_f16(float f);

/* Converts n elements of a float type (F32, BF16, F16, F8_E4M3) to f32. Returns 0 for other
 * types. */
int vox_to_f32(float *dst, const void *src, vox_dtype t, size_t n);

#ifdef __cplusplus
}
#endif
#endif
