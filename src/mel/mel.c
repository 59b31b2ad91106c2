/* The log-mel front end on the CPU: transformers' WhisperFeatureExtractor(feature_size=128) as
 * VoxtralProcessor calls it, computed in double precision.
 *
 * What transformers does (feature_extraction_whisper.py, audio_utils.py, processing_voxtral.py,
 * transformers 5.x):
 * - VoxtralProcessor's audio kwargs are padding=True, pad_to_multiple_of=480000, truncation=False,
 *   max_source_positions=3000. So one audio of n samples is zero-padded at the end to
 *   L = ceil(n / 480000) * 480000 (n = 480000 stays one chunk; 480001 becomes two), and the
 *   feature extractor runs ONCE over the whole padded signal: one STFT, one global maximum.
 *   Only then are the (128, L/160) features reshaped to (128, n_chunks, 3000) and transposed to
 *   (n_chunks, 128, 3000). Consequences: frames at an inner chunk border see the real samples of
 *   the neighbouring chunk (reflect padding happens only at the two ends of the whole signal),
 *   and the "max - 8" floor uses the loudest bin of the whole audio, not of each chunk.
 * - _torch_extract_fbank_features: torch.stft(n_fft=400, hop=160, window=hann_window(400)
 *   (periodic), center=True, pad_mode="reflect", onesided) in float32; power |X|^2; drop the last
 *   frame (T = L / 160); mel = filters^T @ power with the filterbank cast to float32;
 *   log10(max(mel, 1e-10)); max(x, max(x) - 8); (x + 4) / 4.
 * - mel_filter_bank(num_frequency_bins=201, num_mel_filters=128, min_frequency=0,
 *   max_frequency=8000, sampling_rate=16000, norm="slaney", mel_scale="slaney"): triangles between
 *   130 points equally spaced on the Slaney mel scale, evaluated at the bin frequencies
 *   linspace(0, 8000, 201) = 40 k Hz, each scaled by 2 / (upper edge - lower edge) Hz. Computed in
 *   float64 by numpy, used as float32.
 *
 * Here everything after the float32 filterbank is double: the result is at least as accurate as
 * the float32 reference, so the golden test's tolerance is the reference's own rounding error.
 *
 * The DFT: each 400-sample frame needs 201 bins. We compute it as a product with a precomputed
 * cos/sin basis in double instead of calling an FFT library: FFTW is GPL-licensed (every binary
 * linking it would be GPL), and the product is short, exact to double rounding, needs no new
 * dependency, and is the formulation a GPU GEMM uses. Two symmetries of the basis
 * cut the work by four; with y the windowed frame, C(k,n) = cos(2 pi k n / 400) and
 * S(k,n) = sin(2 pi k n / 400):
 * - real input: y_n and y_{400-n} meet the same cos and opposite sin, so with e_n = y_n + y_{400-n}
 *   and o_n = y_n - y_{400-n} (n = 1..199), and e_200 = y_200, o_200 = 0,
 *     Re X_k = y_0 + sum_{n=1..200} e_n C(k,n),   Im X_k = -sum_{n=1..199} o_n S(k,n);
 * - bins k and 200 - k: C(200-k,n) = (-1)^n C(k,n) and S(200-k,n) = -(-1)^n S(k,n), so with the
 *   sums split over even n (EC, ES) and odd n (OC, OS), for k = 0..100:
 *     Re X_k = y_0 + EC_k + OC_k,   Re X_{200-k} = y_0 + EC_k - OC_k,
 *     |Im X_k| = |ES_k + OS_k|,     |Im X_{200-k}| = |ES_k - OS_k|.
 * That is four products of (frames x 100) by (100 x 101): 40,400 multiply-adds per frame instead
 * of 160,800. Frames go in blocks of 8 through a register-blocked product, and the blocks are
 * spread over threads with OpenMP when it is enabled. tests/unit/test_mel.c checks the result
 * against a direct, unfolded DFT. */
#include "mel/mel.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_FFT VOX_MEL_N_FFT
#define N_BINS (VOX_MEL_N_FFT / 2 + 1) /* 201 */
#define N_HALF 101                     /* bins k = 0..100; bin 200 - k comes with bin k */
#define N_HALF_PAD 104                 /* rounded up to the product's 4-bin tiles */
#define N_TERMS 100                    /* even n = 2..200, or odd n = 1..199 */
#define FRAME_BLOCK 8                  /* frames per block of the product */

static const double k_pi = 3.14159265358979323846;

/* ---- the Slaney filterbank ------------------------------------------------------------------ */

static double hz_to_mel(double hz) {
    /* linear below 1 kHz (3 mel per 200 Hz), logarithmic above: 27 mel per factor 6.4 */
    if (hz >= 1000.0) return 15.0 + log(hz / 1000.0) * (27.0 / log(6.4));
    return 3.0 * hz / 200.0;
}

static double mel_to_hz(double mel) {
    if (mel >= 15.0) return 1000.0 * exp((log(6.4) / 27.0) * (mel - 15.0));
    return 200.0 * mel / 3.0;
}

static float g_filters[VOX_MEL_BINS * N_BINS];
/* Nonzero range [lo, hi) of each filter over the 201 bins. */
static int g_lo[VOX_MEL_BINS], g_hi[VOX_MEL_BINS];
static double g_window[N_FFT];
/* The four bases, tiled for the product: basis[t][j][i] is the value for bin k = 4 t + i and the
 * j-th term (n = 2 j + 2 for the even sums, n = 2 j + 1 for the odd ones); bins 101..103 are 0. */
enum { B_EC, B_OC, B_ES, B_OS, N_BASES };
static double g_basis[N_BASES][N_HALF_PAD / 4][N_TERMS][4];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_tables(void) {
    /* numpy: mel_freqs = linspace(mel(0), mel(8000), 130); linspace computes
     * start + i * step with step = (stop - start) / 129 (and sets the last point to stop). */
    const int n_pts = VOX_MEL_BINS + 2;
    const double mel_lo = hz_to_mel(0.0), mel_hi = hz_to_mel(8000.0);
    const double step = (mel_hi - mel_lo) / (n_pts - 1);
    double f[VOX_MEL_BINS + 2];
    for (int i = 0; i < n_pts; i++) {
        double m = i == n_pts - 1 ? mel_hi : mel_lo + i * step;
        f[i] = mel_to_hz(m);
    }
    for (int m = 0; m < VOX_MEL_BINS; m++) {
        const double enorm = 2.0 / (f[m + 2] - f[m]);
        g_lo[m] = N_BINS;
        g_hi[m] = 0;
        for (int k = 0; k < N_BINS; k++) {
            const double hz = 40.0 * k; /* linspace(0, 8000, 201) */
            const double down = (hz - f[m]) / (f[m + 1] - f[m]);
            const double up = (f[m + 2] - hz) / (f[m + 2] - f[m + 1]);
            double w = down < up ? down : up;
            if (w < 0) w = 0;
            g_filters[m * N_BINS + k] = (float)(w * enorm);
            if (g_filters[m * N_BINS + k] != 0.0f) {
                if (k < g_lo[m]) g_lo[m] = k;
                g_hi[m] = k + 1;
            }
        }
        if (g_hi[m] == 0) g_lo[m] = 0;
    }
    /* cos and sin of 2 pi m / 400 for m = 0..399, indexed by (k n) mod 400 so that every basis
     * value is that of its exact angle; the quarter turns are set exactly. */
    double c[N_FFT], sn[N_FFT];
    for (int m = 0; m < N_FFT; m++) {
        g_window[m] = 0.5 - 0.5 * cos(2.0 * k_pi * m / N_FFT); /* periodic Hann */
        c[m] = cos(2.0 * k_pi * m / N_FFT);
        sn[m] = sin(2.0 * k_pi * m / N_FFT);
    }
    for (int q = 0; q < 4; q++) {
        c[q * N_FFT / 4] = q == 0 ? 1.0 : q == 2 ? -1.0 : 0.0;
        sn[q * N_FFT / 4] = q == 1 ? 1.0 : q == 3 ? -1.0 : 0.0;
    }
    for (int k = 0; k < N_HALF; k++)
        for (int j = 0; j < N_TERMS; j++) {
            const int ne = 2 * j + 2, no = 2 * j + 1;
            double *b[N_BASES];
            for (int t = 0; t < N_BASES; t++) b[t] = &g_basis[t][k / 4][j][k % 4];
            *b[B_EC] = c[(k * ne) % N_FFT];
            *b[B_OC] = c[(k * no) % N_FFT];
            *b[B_ES] = sn[(k * ne) % N_FFT];
            *b[B_OS] = sn[(k * no) % N_FFT];
        }
}

const float *vox_mel_filters(void) {
    pthread_once(&g_once, init_tables);
    return g_filters;
}

/* ---- the spectrogram ------------------------------------------------------------------------- */

size_t vox_mel_chunk_count(size_t n_samples) {
    return n_samples == 0 ? 0 : (n_samples - 1) / VOX_CHUNK_SAMPLES + 1;
}

/* Sample j of the padded signal (x zero-padded to length L), reflected at both ends as
 * torch.stft(center=True, pad_mode="reflect") does (the edge sample is not repeated). */
static inline double padded_at(const float *x, size_t n, size_t len, long long j) {
    if (j < 0) j = -j;
    if (j >= (long long)len) j = 2 * ((long long)len - 1) - j;
    return (size_t)j < n ? (double)x[j] : 0.0;
}

/* acc[f][k] = sum_j a[f][j] * basis[k][j] for the FRAME_BLOCK frames of a block, k < 104: a
 * register-blocked product with 4 frames x 4 bins of accumulators. */
static void dft_product(const double a[FRAME_BLOCK][N_TERMS],
                        const double basis[N_HALF_PAD / 4][N_TERMS][4],
                        double acc[FRAME_BLOCK][N_HALF_PAD]) {
    for (int f0 = 0; f0 < FRAME_BLOCK; f0 += 4)
        for (int t = 0; t < N_HALF_PAD / 4; t++) {
            double s[4][4] = {{0}};
            for (int j = 0; j < N_TERMS; j++) {
                const double *b = basis[t][j];
                for (int f = 0; f < 4; f++) {
                    const double v = a[f0 + f][j];
                    for (int i = 0; i < 4; i++) s[f][i] += v * b[i];
                }
            }
            for (int f = 0; f < 4; f++)
                for (int i = 0; i < 4; i++) acc[f0 + f][4 * t + i] = s[f][i];
        }
}

/* log10 mel energies of frames [t0, t0 + nf) (nf <= FRAME_BLOCK), written to out[bin][frame]
 * of the final layout; returns their maximum. */
static double mel_block(const float *x, size_t n, size_t len, size_t t0, int nf, float *out) {
    /* the folded frames (see the top of the file), one array per basis */
    double in[N_BASES][FRAME_BLOCK][N_TERMS], y0[FRAME_BLOCK];
    double acc[N_BASES][FRAME_BLOCK][N_HALF_PAD];
    int nonzero = 0;
    for (int f = 0; f < FRAME_BLOCK; f++) {
        double y[N_FFT];
        const long long start = (long long)((t0 + f) * VOX_MEL_HOP) - N_FFT / 2;
        if (f >= nf) {
            memset(y, 0, sizeof y); /* the last block may be partial */
        } else if (start >= 0 && start + N_FFT <= (long long)n) {
            const float *p = x + start;
            for (int i = 0; i < N_FFT; i++) y[i] = (double)p[i] * g_window[i];
        } else {
            for (int i = 0; i < N_FFT; i++) y[i] = padded_at(x, n, len, start + i) * g_window[i];
        }
        for (int i = 0; i < N_FFT; i++) nonzero |= y[i] != 0.0;
        y0[f] = y[0];
        for (int j = 0; j < N_TERMS; j++) {
            const int ne = 2 * j + 2, no = 2 * j + 1;
            in[B_EC][f][j] = ne == N_FFT / 2 ? y[ne] : y[ne] + y[N_FFT - ne];
            in[B_ES][f][j] = ne == N_FFT / 2 ? 0.0 : y[ne] - y[N_FFT - ne];
            in[B_OC][f][j] = y[no] + y[N_FFT - no];
            in[B_OS][f][j] = y[no] - y[N_FFT - no];
        }
    }
    /* Blocks of silence, such as the zero padding that fills the last 30 s chunk (most of the
     * work for a short clip), have zero power: the products would only add zeros. */
    if (nonzero)
        for (int b = 0; b < N_BASES; b++) dft_product(in[b], g_basis[b], acc[b]);
    else
        memset(acc, 0, sizeof acc);

    const size_t chunk_frames = VOX_CHUNK_FRAMES;
    double mx = -HUGE_VAL;
    for (int f = 0; f < nf; f++) {
        double power[N_BINS];
        for (int k = 0; k < N_HALF; k++) {
            const double ec = acc[B_EC][f][k], oc = acc[B_OC][f][k];
            const double es = acc[B_ES][f][k], os = acc[B_OS][f][k];
            const double re_lo = y0[f] + ec + oc, im_lo = es + os;
            const double re_hi = y0[f] + ec - oc, im_hi = es - os;
            power[k] = re_lo * re_lo + im_lo * im_lo;
            power[N_FFT / 2 - k] = re_hi * re_hi + im_hi * im_hi;
        }
        const size_t t = t0 + f;
        float *dst = out + (t / chunk_frames) * VOX_MEL_BINS * chunk_frames + t % chunk_frames;
        for (int m = 0; m < VOX_MEL_BINS; m++) {
            const float *w = g_filters + m * N_BINS;
            double s = 0.0;
            for (int k = g_lo[m]; k < g_hi[m]; k++) s += (double)w[k] * power[k];
            const double v = log10(s > 1e-10 ? s : 1e-10);
            if (v > mx) mx = v;
            dst[(size_t)m * chunk_frames] = (float)v;
        }
    }
    return mx;
}

vox_status vox_mel_compute(const float *samples, size_t n_samples, float **features,
                           size_t *n_chunks, vox_error *err) {
    *features = NULL;
    *n_chunks = 0;
    if (n_samples == 0)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "mel: no samples (empty audio)");
    if (!samples) return vox_fail(err, VOX_ERR_INVALID_ARG, "mel: samples is NULL");
    pthread_once(&g_once, init_tables);

    const size_t chunks = vox_mel_chunk_count(n_samples);
    const size_t len = chunks * VOX_CHUNK_SAMPLES;
    const size_t n_frames = chunks * VOX_CHUNK_FRAMES; /* = len / hop: last frame dropped */
    if (chunks > SIZE_MAX / sizeof(float) / VOX_MEL_BINS / VOX_CHUNK_FRAMES)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "mel: %zu samples is too long", n_samples);
    float *out = malloc(chunks * VOX_MEL_BINS * VOX_CHUNK_FRAMES * sizeof(float));
    if (!out)
        return vox_fail(err, VOX_ERR_NOMEM, "mel: out of memory for %zu chunks of features",
                        chunks);

    const long long n_blocks = (long long)((n_frames + FRAME_BLOCK - 1) / FRAME_BLOCK);
    double mx = -HUGE_VAL;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(max : mx)
#endif
    for (long long b = 0; b < n_blocks; b++) {
        const size_t t0 = (size_t)b * FRAME_BLOCK;
        const int nf = n_frames - t0 < FRAME_BLOCK ? (int)(n_frames - t0) : FRAME_BLOCK;
        const double m = mel_block(samples, n_samples, len, t0, nf, out);
        if (m > mx) mx = m;
    }

    /* Floor at 8 (80 dB) below the loudest bin of the whole audio, then scale. */
    const double floor_v = mx - 8.0;
    const size_t total = chunks * VOX_MEL_BINS * VOX_CHUNK_FRAMES;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (size_t i = 0; i < total; i++) {
        double v = out[i];
        if (v < floor_v) v = floor_v;
        out[i] = (float)((v + 4.0) / 4.0);
    }
    *features = out;
    *n_chunks = chunks;
    return VOX_OK;
}
