/* FP8 E4M3 encoding and the per-row quantization of common/fp8.h, in plain integer and float32
 * arithmetic (no dependence on the floating-point rounding mode). */
#include "common/fp8.h"

#include <math.h>
#include <string.h>

float vox_e4m3_to_f32(uint8_t code) {
    uint32_t e = (code >> 3) & 0xf, m = code & 7;
    float v;
    if (e == 15 && m == 7) {
        v = NAN;
    } else if (e == 0) {
        v = (float)m * 0.001953125f; /* m * 2^-9, exact */
    } else {
        uint32_t u = ((e + 120) << 23) | (m << 20); /* (1 + m/8) * 2^(e - 7) */
        memcpy(&v, &u, sizeof v);
    }
    return (code & 0x80) ? -v : v; /* 0x80 is -0 */
}

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
