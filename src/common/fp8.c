/* FP8 E4M3 encoding and the per-row quantization of common/fp8.h, in plain integer and float32
 * arithmetic (no dependence on the floating-point rounding mode). */
#include "common/fp8.h"

#include <math.h>
#include <string.h>

/* Every code's value, as a constant table (the CPU reference decodes a weight row per use):
 * exponent field 0 holds m * 2^-9, the others (8 + m) * 2^(e - 10); 0x7f and 0xff are NaN. */
#define E4M3_ABS(c) \
    ((c) >> 3 == 0 ? (float)((c) & 7) / 512.0f : (float)(8 + ((c) & 7)) * (float)(1u << ((c) >> 3)) / 1024.0f)
#define E4M3(c) (((c) & 0x7f) == 0x7f ? NAN : ((c) & 0x80 ? -1.0f : 1.0f) * E4M3_ABS((c) & 0x7f))
#define E4M3_4(c) E4M3(c), E4M3((c) + 1), E4M3((c) + 2), E4M3((c) + 3)
#define E4M3_16(c) E4M3_4(c), E4M3_4((c) + 4), E4M3_4((c) + 8), E4M3_4((c) + 12)
#define E4M3_64(c) E4M3_16(c), E4M3_16((c) + 16), E4M3_16((c) + 32), E4M3_16((c) + 48)
static const float e4m3_values[256] = {E4M3_64(0), E4M3_64(64), E4M3_64(128), E4M3_64(192)};

float vox_e4m3_to_f32(uint8_t code) { return e4m3_values[code]; }

uint8_t vox_f32_to_e4m3(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80);
    float a = fabsf(f);
    if (isnan(f)) return sign | 0x7f;
    if (a > VOX_E4M3_MAX) return sign | 0x7e; /* (448, 464] rounds to 448 anyway */
    if (a < 0.015625f) {                      /* below 2^-6: subnormals, multiples of 2^-9 */
        float t = a * 512.0f;                 /* exact: a power-of-two scaling */
        uint32_t m = (uint32_t)t;             /* floor, t < 8 */
        float frac = t - (float)m;            /* exact */
        if (frac > 0.5f || (frac == 0.5f && (m & 1))) m++;
        return sign | (uint8_t)m; /* m = 8 is 2^-6, the smallest normal: its code is 8 */
    }
    uint32_t ua;
    memcpy(&ua, &a, sizeof ua);
    uint32_t e = (ua >> 23) - 127 + 7, mant = ua & 0x7fffff;
    uint32_t code = (e << 3) | (mant >> 20), rest = mant & 0xfffff;
    if (rest > 0x80000 || (rest == 0x80000 && (code & 1))) code++; /* a carry bumps the exponent */
    return sign | (uint8_t)code;
}

float vox_fp8_row_scale(const float *x, size_t n) {
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    return amax > 0.0f ? amax / VOX_E4M3_MAX : 1.0f;
}

float vox_fp8_quantize_row(const float *x, size_t n, uint8_t *q) {
    float s = vox_fp8_row_scale(x, n);
    for (size_t i = 0; i < n; i++) {
        float v = x[i] / s;
        v = v > VOX_E4M3_MAX ? VOX_E4M3_MAX : v < -VOX_E4M3_MAX ? -VOX_E4M3_MAX : v;
        q[i] = vox_f32_to_e4m3(v);
    }
    return s;
}
