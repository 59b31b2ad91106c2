/* The log-mel front end (voxtral-spec.md section 1), on the CPU.
 *
 * 16 kHz mono samples, zero-padded at the end to a multiple of 30 s (480,000 samples), then one
 * STFT over the whole padded signal (n_fft 400, hop 160, periodic Hann, centered with reflect
 * padding, power spectrum, last frame dropped), a 128 x 201 Slaney mel filterbank (0..8 kHz),
 * log10 clamped at 1e-10, floored at (global max - 8), then (x + 4) / 4. */
#ifndef VOX_MEL_MEL_H
#define VOX_MEL_MEL_H

#include <stddef.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_MEL_BINS 128
#define VOX_MEL_N_FFT 400
#define VOX_MEL_HOP 160
#define VOX_CHUNK_SAMPLES 480000
#define VOX_CHUNK_FRAMES 3000

/* Number of 30 s chunks that n_samples occupies after padding (n_samples > 0). */
size_t vox_mel_chunk_count(size_t n_samples);

/* features: malloc'ed float[n_chunks][128][3000] (chunk-major, then mel bin, then frame).
 * Errors: n_samples == 0 (VOX_ERR_INVALID_ARG), allocation failure. */
vox_status vox_mel_compute(const float *samples, size_t n_samples, float **features,
                           size_t *n_chunks, vox_error *err);

/* The 128 x 201 filterbank, row-major (bin-major), for tests and the GPU path. */
const float *vox_mel_filters(void);

#ifdef __cplusplus
}
#endif
#endif
