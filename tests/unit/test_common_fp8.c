/* common/fp8.c: the E4M3 encoder and decoder and the per-row quantization of the FP8 scheme.
 *  - every one of the 256 codes decodes to the value its bit fields give (written out again
 *    here in double), and every non-NaN code encodes back to itself;
 *  - between each pair of neighbouring codes: the midpoint rounds to the even code, a value a
 *    little either side of it to the nearer code (so ties go to even, not away from zero);
 *  - zeros keep their sign, values past 448 saturate, NaN stays NaN;
 *  - a row: s = max|x| / 448 (1 for a zero row), codes of clamp(x / s), the row's maximum maps
 *    to +-448. torch's own codes for these cases are checked by tests/golden/test_fp8_golden.c
 *    against the fixture. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/dtype.h"
#include "common/fp8.h"
#include "harness.h"

/* The value of a code from its fields, independently of fp8.c. */
static double code_value(unsigned c) {
    int e = (c >> 3) & 15, m = c & 7;
    double v = e == 0 ? ldexp(m, -9) : ldexp(1.0 + m / 8.0, e - 7);
    return (c & 0x80) ? -v : v;
}

static void test_codes(void) {
    for (unsigned c = 0; c < 256; c++) {
        float f = vox_e4m3_to_f32((uint8_t)c);
        if ((c & 0x7f) == 0x7f) {
            CHECK_MSG(isnan(f), "code 0x%02x decodes to %g, not NaN", c, f);
            continue;
        }
        CHECK_MSG((double)f == code_value(c) && !!signbit(f) == !!(c & 0x80),
                  "code 0x%02x decodes to %.9g, expected %.9g", c, f, code_value(c));
        CHECK_MSG(vox_f32_to_e4m3(f) == c, "code 0x%02x: %.9g encodes to 0x%02x", c, f,
                  vox_f32_to_e4m3(f));
    }
    CHECK(vox_e4m3_to_f32(0x7e) == 448.0f && vox_e4m3_to_f32(0x01) == 0.001953125f);
    CHECK(vox_e4m3_to_f32(0x08) == 0.015625f); /* the smallest normal, 2^-6 */
}

/* Ties to even between every pair of neighbours a < b (positive codes, then mirrored). */
static void test_rounding(void) {
    int ties = 0;
    for (unsigned c = 0; c < 0x7e; c++) {
        double a = code_value(c), b = code_value(c + 1), mid = (a + b) / 2;
        unsigned even = (c & 1) ? c + 1 : c;
        for (int sgn = 0; sgn < 2; sgn++) {
            double s = sgn ? -1.0 : 1.0;
            unsigned sb = sgn ? 0x80 : 0;
            float fm = (float)(s * mid); /* exact: 5 significant bits at most */
            CHECK_MSG((double)fm == s * mid, "midpoint %.9g not exact in float", s * mid);
            CHECK_MSG(vox_f32_to_e4m3(fm) == (sb | even), "tie %.9g -> 0x%02x, expected 0x%02x",
                      fm, vox_f32_to_e4m3(fm), sb | even);
            float below = nextafterf(fm, 0.0f), above = nextafterf(fm, s * INFINITY);
            CHECK_MSG(vox_f32_to_e4m3(below) == (sb | c), "%.9g -> 0x%02x, expected 0x%02x",
                      below, vox_f32_to_e4m3(below), sb | c);
            CHECK_MSG(vox_f32_to_e4m3(above) == (sb | (c + 1)), "%.9g -> 0x%02x, expected 0x%02x",
                      above, vox_f32_to_e4m3(above), sb | (c + 1));
            ties++;
        }
    }
    printf("%d ties to even checked, with their neighbours\n", ties);
    CHECK(vox_f32_to_e4m3(1.0625f) == 0x38);  /* 1 + 1/16: to 1.0 (mantissa 000) */
    CHECK(vox_f32_to_e4m3(1.1875f) == 0x3a);  /* to 1.25 (mantissa 010) */
    CHECK(vox_f32_to_e4m3(0.0009765625f) == 0x00); /* half the smallest subnormal: to 0 */
    CHECK(vox_f32_to_e4m3(-0.0009765625f) == 0x80);
    CHECK(vox_f32_to_e4m3(0.0029296875f) == 0x02);  /* 1.5 * 2^-9: to 2 * 2^-9 */
    CHECK(vox_f32_to_e4m3(0.0f) == 0x00 && vox_f32_to_e4m3(-0.0f) == 0x80);
    CHECK(vox_f32_to_e4m3(1e-30f) == 0x00 && vox_f32_to_e4m3(-1e-30f) == 0x80);
    CHECK(vox_f32_to_e4m3(464.0f) == 0x7e);  /* the tie with 480 (not a value): to 448 */
    CHECK(vox_f32_to_e4m3(1e6f) == 0x7e && vox_f32_to_e4m3(-INFINITY) == 0xfe); /* saturates */
    CHECK((vox_f32_to_e4m3(NAN) & 0x7f) == 0x7f);
}

static void test_rows(void) {
    float zero[5] = {0, -0.0f, 0, 0, 0};
    uint8_t q[8];
    CHECK(vox_fp8_quantize_row(zero, 5, q) == 1.0f);
    for (int i = 0; i < 5; i++) CHECK((q[i] & 0x7f) == 0);

    float x[6] = {-3.5f, 1.0f, 0.25f, 7.0f, -0.001f, 2.0f};
    float s = vox_fp8_quantize_row(x, 6, q);
    CHECK(s == 7.0f / 448.0f);
    CHECK(q[3] == 0x7e && q[0] == vox_f32_to_e4m3(-3.5f / s));
    for (int i = 0; i < 6; i++) {
        float v = x[i] / s;
        v = v > 448.0f ? 448.0f : v < -448.0f ? -448.0f : v;
        CHECK(q[i] == vox_f32_to_e4m3(v));
        /* dequantized within half a step (1/16 relative) of the input, or a subnormal step */
        CHECK(fabsf(vox_e4m3_to_f32(q[i]) * s - x[i]) <= fabsf(x[i]) / 16 + s * 0.0009765625f);
    }
    /* the row maximum maps to 448 even when max / (max / 448) rounds above it in float */
    for (int i = 0; i < 1000; i++) {
        float m = 1.0f + (float)i * 0.01234567f, r[2] = {m, -m};
        float sm = vox_fp8_quantize_row(r, 2, q);
        CHECK_MSG(q[0] == 0x7e && q[1] == 0xfe, "max %.9g (scale %.9g) -> 0x%02x", m, sm, q[0]);
    }
    /* vox_to_f32 decodes codes */
    uint8_t codes[3] = {0x38, 0x7e, 0x81};
    float f[3];
    CHECK(vox_to_f32(f, codes, VOX_DTYPE_F8_E4M3, 3) && f[0] == 1.0f && f[1] == 448.0f &&
          f[2] == -0.001953125f);
}

int main(void) {
    test_codes();
    test_rounding();
    test_rows();
    return test_finish("common_fp8");
}
