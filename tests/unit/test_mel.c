/* vox_mel_compute and vox_mel_filters against values computed independently: numbers from
 * transformers' mel_filter_bank, and a direct, unfolded double-precision DFT written here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "mel/mel.h"

static const double k_pi = 3.14159265358979323846;
#define SAMPLE_RATE 16000.0

/* ---- an independent Slaney filterbank -------------------------------------------------------- */

static double slaney_mel_to_hz(double mel) {
    return mel < 15.0 ? mel * 200.0 / 3.0 : 1000.0 * pow(6.4, (mel - 15.0) / 27.0);
}

/* The 130 edge frequencies of the 128 triangles: equally spaced on the Slaney scale, 0..8 kHz. */
static void slaney_edges(double edges[VOX_MEL_BINS + 2]) {
    const double mel_max = 15.0 + 27.0 * log(8000.0 / 1000.0) / log(6.4);
    for (int i = 0; i < VOX_MEL_BINS + 2; i++)
        edges[i] = slaney_mel_to_hz(mel_max * i / (VOX_MEL_BINS + 1));
}

/* w[m][k] for bin frequency 40 k Hz: a triangle over edges m, m+1, m+2 with area-normalised
 * height 2 / (edge m+2 - edge m). */
static void slaney_filters(double w[VOX_MEL_BINS][201]) {
    double e[VOX_MEL_BINS + 2];
    slaney_edges(e);
    for (int m = 0; m < VOX_MEL_BINS; m++)
        for (int k = 0; k < 201; k++) {
            const double f = 40.0 * k;
            double v = 0;
            if (f > e[m] && f <= e[m + 1]) v = (f - e[m]) / (e[m + 1] - e[m]);
            if (f > e[m + 1] && f < e[m + 2]) v = (e[m + 2] - f) / (e[m + 2] - e[m + 1]);
            w[m][k] = v * 2.0 / (e[m + 2] - e[m]);
        }
}

static void test_filterbank(void) {
    const float *fb = vox_mel_filters();
    CHECK(fb != NULL);
    if (!fb) return;

    /* 1. Reference values from transformers 5.17, printed with
     *   fb = mel_filter_bank(num_frequency_bins=201, num_mel_filters=128, min_frequency=0.0,
     *          max_frequency=8000.0, sampling_rate=16000, norm="slaney", mel_scale="slaney")
     *   fb = fb.T.astype(np.float32); for each row m: its nonzero bins and '%.9g' values;
     *   and fb.astype(np.float64).sum() */
    static const struct {
        int m, lo, n;
        float v[9];
    } rows[] = {
        {0, 1, 1, {0.0123739867f}},
        {1, 1, 1, {0.0303925648f}},
        {5, 3, 2, {0.00564459199f, 0.0067293942f}},
        {17, 10, 2, {0.00455979025f, 0.00781419594f}},
        {40, 24, 1, {0.0403763652f}},
        {64, 42, 2, {0.00674968259f, 0.0180915184f}},
        {90, 79, 3, {0.00618401915f, 0.0129347323f, 0.00629778765f}},
        {127, 191, 9, {0.000475695095f, 0.00161717169f, 0.00275864848f, 0.00390012492f,
                       0.0050416016f, 0.00445712078f, 0.00334284059f, 0.00222856039f,
                       0.0011142802f}},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        const float *w = fb + rows[r].m * 201;
        for (int k = 0; k < 201; k++) {
            const int i = k - rows[r].lo;
            if (i >= 0 && i < rows[r].n)
                CHECK_CLOSE(w[k], rows[r].v[i], 0, 1e-6);
            else
                CHECK_MSG(w[k] == 0.0f, "filter %d bin %d: %g, want 0", rows[r].m, k, w[k]);
        }
    }
    double sum = 0;
    for (int i = 0; i < VOX_MEL_BINS * 201; i++) sum += fb[i];
    CHECK_CLOSE(sum, 3.1909855198109653, 0, 1e-6);

    /* 2. The independent implementation above, every element. */
    static double w[VOX_MEL_BINS][201];
    slaney_filters(w);
    int nonempty = 0;
    double md = 0;
    for (int m = 0; m < VOX_MEL_BINS; m++) {
        float mx = 0;
        for (int k = 0; k < 201; k++) {
            md = fmax(md, fabs(fb[m * 201 + k] - w[m][k]) / fmax(w[m][k], 1e-3));
            mx = fmaxf(mx, fb[m * 201 + k]);
        }
        nonempty += mx > 0;
    }
    /* float32 rounding of the library's values; the formulas differ in form (pow vs exp) */
    CHECK_MSG(md <= 1e-6, "max relative difference to the independent filterbank: %g", md);
    CHECK(nonempty == VOX_MEL_BINS); /* 128 mels on 201 bins: no filter misses every bin */

    /* 3. Slaney normalisation gives each triangle unit area in Hz: the 40 Hz sampling of a wide
     * triangle (the top filters span many bins) sums to about 1/40. */
    for (int m = 100; m < VOX_MEL_BINS; m++) {
        double area = 0;
        for (int k = 0; k < 201; k++) area += 40.0 * fb[m * 201 + k];
        CHECK_MSG(fabs(area - 1.0) < 0.02, "filter %d: area %g", m, area);
    }
}

/* ---- a direct reference of the whole front end ----------------------------------------------- */

/* Features the plain way, for a signal that is zero outside a few regions (frames of zeros are
 * skipped: their power is 0): explicit zero padding to a multiple of 30 s, an explicit reflect-
 * padded copy, a 201 x 400 DFT with full angles (no folding, no table lookup), the independent
 * filterbank, log10, the global floor, the scale. Output layout as vox_mel_compute's. */
static float *reference_features(const float *x, size_t n, size_t *n_chunks) {
    const size_t chunks = (n + VOX_CHUNK_SAMPLES - 1) / VOX_CHUNK_SAMPLES;
    const size_t len = chunks * VOX_CHUNK_SAMPLES, frames = len / VOX_MEL_HOP;
    double *p = calloc(len + 400, sizeof(double));
    for (size_t i = 0; i < n; i++) p[200 + i] = x[i];
    for (size_t j = 1; j <= 200; j++) {
        p[200 - j] = p[200 + j];                     /* x[j] */
        p[200 + len - 1 + j] = p[200 + len - 1 - j]; /* x[len-1-j] */
    }
    static double cs[201][400], sn[201][400], w[VOX_MEL_BINS][201];
    double win[400];
    for (int k = 0; k < 201; k++)
        for (int i = 0; i < 400; i++) {
            cs[k][i] = cos(2.0 * k_pi * k * i / 400.0);
            sn[k][i] = sin(2.0 * k_pi * k * i / 400.0);
        }
    for (int i = 0; i < 400; i++) win[i] = 0.5 * (1.0 - cos(2.0 * k_pi * i / 400.0));
    slaney_filters(w);
    /* the filterbank is used in float32, as transformers casts it */
    for (int m = 0; m < VOX_MEL_BINS; m++)
        for (int k = 0; k < 201; k++) w[m][k] = (float)w[m][k];

    double *lg = malloc(frames * VOX_MEL_BINS * sizeof(double)); /* [frame][mel] */
    double mx = -INFINITY;
    for (size_t t = 0; t < frames; t++) {
        const double *fr = p + t * VOX_MEL_HOP;
        int zero = 1;
        for (int i = 0; i < 400 && zero; i++) zero = fr[i] == 0.0;
        double power[201] = {0};
        for (int k = 0; k < 201 && !zero; k++) {
            double re = 0, im = 0;
            for (int i = 0; i < 400; i++) {
                re += fr[i] * win[i] * cs[k][i];
                im -= fr[i] * win[i] * sn[k][i];
            }
            power[k] = re * re + im * im;
        }
        for (int m = 0; m < VOX_MEL_BINS; m++) {
            double s = 0;
            for (int k = 0; k < 201; k++) s += w[m][k] * power[k];
            const double v = log10(fmax(s, 1e-10));
            lg[t * VOX_MEL_BINS + m] = v;
            mx = fmax(mx, v);
        }
    }
    float *out = malloc(frames * VOX_MEL_BINS * sizeof(float));
    for (size_t t = 0; t < frames; t++)
        for (int m = 0; m < VOX_MEL_BINS; m++) {
            const double v = (fmax(lg[t * VOX_MEL_BINS + m], mx - 8.0) + 4.0) / 4.0;
            out[(t / 3000) * VOX_MEL_BINS * 3000 + (size_t)m * 3000 + t % 3000] = (float)v;
        }
    free(p);
    free(lg);
    *n_chunks = chunks;
    return out;
}

static uint32_t g_rng = 12345;
static float noise(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((g_rng >> 8) / 16777216.0 - 0.5);
}

/* A signal of n samples that is nonzero only in [a0, a1) and [b0, b1): tones, noise and a
 * decaying envelope, so that features span the 80 dB range and hit the floor. */
static float *test_signal(size_t n, size_t a0, size_t a1, size_t b0, size_t b1) {
    float *x = calloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) {
        if (!((i >= a0 && i < a1) || (i >= b0 && i < b1))) continue;
        const double t = (double)i / SAMPLE_RATE;
        const double env = exp(-3.0 * fmod(t, 1.0));
        x[i] = (float)(env * (0.4 * sin(2 * k_pi * 523.25 * t) + 0.2 * sin(2 * k_pi * 3100 * t)) +
                       0.01 * noise());
    }
    return x;
}

static void compare_with_reference(const char *what, const float *x, size_t n) {
    float *feat = NULL;
    size_t n_chunks = 0, ref_chunks = 0;
    vox_error err = {0};
    CHECK_MSG(vox_mel_compute(x, n, &feat, &n_chunks, &err) == VOX_OK, "%s", err.msg);
    float *ref = reference_features(x, n, &ref_chunks);
    CHECK(n_chunks == ref_chunks);
    if (feat && n_chunks == ref_chunks) {
        /* ours stores log10 as float before the floor and scale: about 2.5e-7 of rounding */
        double md = 0;
        size_t worst = 0, at_floor = 0;
        const size_t total = n_chunks * VOX_MEL_BINS * VOX_CHUNK_FRAMES;
        float floor_v = INFINITY;
        for (size_t i = 0; i < total; i++) floor_v = fminf(floor_v, ref[i]);
        for (size_t i = 0; i < total; i++) {
            const double d = fabs((double)feat[i] - ref[i]);
            if (d > md) md = d, worst = i;
            at_floor += ref[i] == floor_v;
        }
        CHECK_MSG(md <= 1e-6, "%s: max |ours - direct| = %g at %zu", what, md, worst);
        printf("  %s: %zu chunks, max |ours - direct DFT| = %.3g, %zu values at the floor\n", what,
               n_chunks, md, at_floor);
    }
    free(feat);
    free(ref);
}

static void test_against_direct_dft(void) {
    /* one full chunk of signal at both ends: reflect padding of real samples at both ends */
    size_t n = VOX_CHUNK_SAMPLES;
    float *x = test_signal(n, 0, 20000, n - 20000, n);
    compare_with_reference("480000 samples", x, n);
    free(x);
    /* two chunks: frames across the inner border see the next chunk's samples; zero padding */
    n = VOX_CHUNK_SAMPLES + 12345;
    x = test_signal(n, 0, 5000, VOX_CHUNK_SAMPLES - 10000, n);
    compare_with_reference("492345 samples", x, n);
    free(x);
}

/* ---- properties ------------------------------------------------------------------------------ */

/* A pure tone on a DFT bin lands in the mel bin whose triangle is centred nearest to it. */
static void test_tone_bin(void) {
    const double freqs[] = {440, 1000, 2520, 3333, 7000};
    double e[VOX_MEL_BINS + 2];
    slaney_edges(e);
    for (size_t f = 0; f < sizeof freqs / sizeof freqs[0]; f++) {
        int want = 0;
        for (int m = 1; m < VOX_MEL_BINS; m++)
            if (fabs(e[m + 1] - freqs[f]) < fabs(e[want + 1] - freqs[f])) want = m;
        const size_t n = 16000; /* 1 s */
        float *x = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(0.5 * sin(2 * k_pi * freqs[f] * i / SAMPLE_RATE));
        float *feat = NULL;
        size_t n_chunks = 0;
        vox_error err = {0};
        CHECK(vox_mel_compute(x, n, &feat, &n_chunks, &err) == VOX_OK && n_chunks == 1);
        for (int t = 10; feat && t < 90; t += 10) {
            int best = 0;
            for (int m = 1; m < VOX_MEL_BINS; m++)
                if (feat[m * 3000 + t] > feat[best * 3000 + t]) best = m;
            CHECK_MSG(best == want, "%g Hz, frame %d: loudest mel bin %d, want %d", freqs[f], t,
                      best, want);
            /* the loudest bin is the global maximum: (max + 4) / 4 there, floor far below */
            CHECK(feat[best * 3000 + t] > feat[(best + 40) % VOX_MEL_BINS * 3000 + t] + 0.5f);
        }
        /* after the tone, silence sits at the floor: 8 below the maximum before scaling, so
         * 2 below the largest feature after it */
        float fmax_ = -INFINITY;
        for (size_t i = 0; feat && i < VOX_MEL_BINS * 3000; i++) fmax_ = fmaxf(fmax_, feat[i]);
        for (int m = 0; feat && m < VOX_MEL_BINS; m += 9)
            CHECK_CLOSE(feat[m * 3000 + 2000], fmax_ - 2.0, 1e-6, 0);
        free(feat);
        free(x);
    }
}

static void test_chunks(void) {
    CHECK(vox_mel_chunk_count(0) == 0);
    CHECK(vox_mel_chunk_count(1) == 1);
    CHECK(vox_mel_chunk_count(479999) == 1);
    CHECK(vox_mel_chunk_count(480000) == 1);
    CHECK(vox_mel_chunk_count(480001) == 2);
    CHECK(vox_mel_chunk_count(28800000) == 60); /* 30 min */
    const size_t lens[] = {1, 480000, 480001};
    const size_t want[] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        float *x = calloc(lens[i], sizeof(float));
        x[lens[i] - 1] = 0.5f; /* one click at the very end */
        float *feat = NULL;
        size_t n_chunks = 0;
        vox_error err = {0};
        CHECK_MSG(vox_mel_compute(x, lens[i], &feat, &n_chunks, &err) == VOX_OK, "%s", err.msg);
        CHECK_MSG(n_chunks == want[i], "%zu samples: %zu chunks, want %zu", lens[i], n_chunks,
                  want[i]);
        /* every value is finite and within the range the floor and scale allow */
        float lo = INFINITY, hi = -INFINITY;
        size_t bad = 0;
        for (size_t k = 0; feat && k < n_chunks * VOX_MEL_BINS * 3000; k++) {
            bad += !isfinite(feat[k]);
            lo = fminf(lo, feat[k]), hi = fmaxf(hi, feat[k]);
        }
        CHECK(bad == 0 && hi - lo <= 2.0f + 1e-6f);
        free(feat);
        free(x);
    }
}

/* All zeros: every log10 is log10(1e-10) = -10, which is also the maximum, so every feature is
 * (-10 + 4) / 4 = -1.5 exactly. */
static void test_silence(void) {
    float *x = calloc(1000, sizeof(float));
    float *feat = NULL;
    size_t n_chunks = 0;
    vox_error err = {0};
    CHECK(vox_mel_compute(x, 1000, &feat, &n_chunks, &err) == VOX_OK && n_chunks == 1);
    size_t bad = 0;
    for (size_t i = 0; feat && i < VOX_MEL_BINS * 3000; i++) bad += feat[i] != -1.5f;
    CHECK_MSG(bad == 0, "%zu features of silence are not -1.5", bad);
    free(feat);
    free(x);
}

static void test_errors(void) {
    float x[4] = {0};
    float *feat = (float *)1;
    size_t n_chunks = 7;
    vox_error err = {0};
    CHECK(vox_mel_compute(x, 0, &feat, &n_chunks, &err) == VOX_ERR_INVALID_ARG);
    CHECK(feat == NULL && n_chunks == 0 && strstr(err.msg, "empty") != NULL);
    CHECK(vox_mel_compute(NULL, 4, &feat, &n_chunks, &err) == VOX_ERR_INVALID_ARG);
}

/* Informational, in optimised builds: the time for 5 minutes of audio (10 chunks) on the threads
 * OpenMP gives. */
static void report_speed(void) {
#ifdef NDEBUG
    const size_t n = 300 * 16000;
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = 0.1f * noise();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    float *feat = NULL;
    size_t n_chunks = 0;
    vox_error err = {0};
    CHECK(vox_mel_compute(x, n, &feat, &n_chunks, &err) == VOX_OK && n_chunks == 10);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("  5 min of audio: %.3f s\n",
           (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec));
    free(feat);
    free(x);
#endif
}

int main(void) {
    test_filterbank();
    test_chunks();
    test_silence();
    test_errors();
    test_tone_bin();
    test_against_direct_dft();
    report_speed();
    return test_finish("test_mel");
}
