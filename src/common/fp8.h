/* FP8 E4M3 ("e4m3fn": no infinities, one NaN pattern, finite max 448) and the per-row scheme
 * the text decoder's FP8 weights and activations use (issue 10, "FP8-dynamic" as vLLM and
 * llm-compressor define it):
 *   s = max|x_row| / 448 in float32 (s = 1 for an all-zero row),
 *   q = round-to-nearest-even(clamp(x / s, -448, 448)) as E4M3,
 *   a product row . row is accumulated in float32 from the decoded codes, then times s_x * s_w.
 *
 * Code layout: sign bit, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 holds the
 * subnormals m * 2^-9; 0x7f / 0xff are NaN. Every code is exact in float32 and in bfloat16. */
#ifndef VOX_COMMON_FP8_H
#define VOX_COMMON_FP8_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_E4M3_MAX 448.0f

/* The value of a code (NaN for 0x7f and 0xff; 0x80 is -0). */
float vox_e4m3_to_f32(uint8_t code);
/* The nearest code, ties to even (torch's .to(torch.float8_e4m3fn) for |f| <= 464). Finite
 * values past 448 saturate to +-448 (torch gives NaN past 464; the scheme clamps first, so
 * both agree on everything the scheme encodes); NaN gives a NaN code. The sign of a value
 * that rounds to zero is kept (-0 is 0x80), as torch does. */
uint8_t vox_f32_to_e4m3(float f);

/* The scheme's scale of a row: max|x_i| / 448, or 1 when every x_i is zero. */
float vox_fp8_row_scale(const float *x, size_t n);
/* Quantizes one row by the scheme: codes q[0 .. n) and the returned scale s. */
float vox_fp8_quantize_row(const float *x, size_t n, uint8_t *q);

#ifdef __cplusplus
}
#endif
#endif
