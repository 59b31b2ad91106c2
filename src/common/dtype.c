#include "common/dtype.h"
#include "common/fp8.h"

#include <math.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[VOX_DTYPE_COUNT] = {
    [VOX_DTYPE_BOOL] = {"BOOL", 1},    [VOX_DTYPE_U8] = {"U8", 1},
    [VOX_DTYPE_I8] = {"I8", 1},        [VOX_DTYPE_F8_E4M3] = {"F8_E4M3", 1},
    [VOX_DTYPE_F8_E5M2] = {"F8_E5M2", 1}, [VOX_DTYPE_I16] = {"I16", 2},
    [VOX_DTYPE_U16] = {"U16", 2},      [VOX_DTYPE_F16] = {"F16", 2},
    [VOX_DTYPE_BF16] = {"BF16", 2},    [VOX_DTYPE_I32] = {"I32", 4},
    [VOX_DTYPE_U32] = {"U32", 4},      [VOX_DTYPE_F32] = {"F32", 4},
    [VOX_DTYPE_I64] = {"I64", 8},      [VOX_DTYPE_U64] = {"U64", 8},
    [VOX_DTYPE_F64] = {"F64", 8},
};

size_t vox_dtype_size(vox_dtype t) { return (unsigned)t < VOX_DTYPE_COUNT ? dtype_info[t].size : 0; }

const char *vox_dtype_name(vox_dtype t) {
    return (unsigned)t < VOX_DTYPE_COUNT ? dtype_info[t].name : "?";
}

int vox_dtype_from_name(const char *name, vox_dtype *out) {
    for (int i = 0; i < VOX_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_info[i].name) == 0) {
            *out = (vox_dtype)i;
            return 1;
        }
    }
    return 0;
}

float vox_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float f;
    if (exp == 0) {
        f = ldexpf((float)man, -24); /* zero or subnormal */
        return sign ? -f : f;
    }
    uint32_t u = exp == 31 ? (sign | 0x7f800000u | (man << 13))
                           : (sign | ((exp + 112) << 23) | (man << 13));
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t vox_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f)) return sign | 0x7e00;
    if (a >= 65520.0f) return sign | 0x7c00; /* rounds to infinity */
    if (a < 6.103515625e-05f) {              /* subnormal: multiples of 2^-24 */
        return sign | (uint16_t)lrintf(a * 16777216.0f);
    }
    uint32_t ua;
    memcpy(&ua, &a, sizeof ua);
    uint32_t exp = (ua >> 23) - 112, man = ua & 0x7fffff;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff; /* round to nearest even */
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

int vox_to_f32(float *dst, const void *src, vox_dtype t, size_t n) {
    switch (t) {
    case VOX_DTYPE_F32: memcpy(dst, src, n * sizeof(float)); return 1;
    case VOX_DTYPE_BF16: {
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = vox_bf16_to_f32(s[i]);
        return 1;
    }
    case VOX_DTYPE_F16: {
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = vox_f16_to_f32(s[i]);
        return 1;
    }
    case VOX_DTYPE_F8_E4M3: { /* the codes' values; their row scales are applied by the caller */
        const uint8_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = vox_e4m3_to_f32(s[i]);
        return 1;
    }
    default: return 0;
    }
}
