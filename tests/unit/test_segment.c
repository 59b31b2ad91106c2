/* vox_segment_find on signals whose silences are known: synthetic voiced "speech" (a 150 Hz
 * pulse train with harmonics under a syllable envelope) with placed pauses, and the fixture
 * long.wav against its pauses.json (espeak-ng sentences joined by digital silence). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "segment/segment.h"

#define RATE 16000.0
static const double k_pi = 3.14159265358979323846;

/* ---- synthetic signals ----------------------------------------------------------------------- */

static uint32_t rng = 12345;
static double uniform(void) { /* in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / (double)(1u << 23) - 1.0;
}

/* Speech-like sound in [t0, t1): harmonics of 160 Hz (a period of 100 samples) under a 4 Hz
 * syllable envelope that never falls below 30 % (no silence inside), peak amplitude amp. */
static void speech(float *x, double t0, double t1, double amp) {
    static float wave[100], env[4000];
    if (env[0] == 0) {
        for (int i = 0; i < 100; i++)
            for (int h = 1; h <= 8; h++) wave[i] += (float)(0.4 * sin(2 * k_pi * h * i / 100 + h) / h);
        for (int i = 0; i < 4000; i++) env[i] = (float)(0.65 + 0.35 * sin(2 * k_pi * i / 4000));
    }
    for (size_t i = (size_t)(t0 * RATE); i < (size_t)(t1 * RATE); i++)
        x[i] = (float)amp * env[i % 4000] * wave[i % 100];
}

static void noise(float *x, size_t n, double amp) {
    for (size_t i = 0; i < n; i++) x[i] += (float)(amp * uniform());
}

static vox_segment *find(const float *x, size_t n, const vox_segment_params *p, size_t *ns) {
    vox_segment *s = NULL;
    vox_error err = {0};
    vox_status st = vox_segment_find(x, n, RATE, p, &s, ns, &err);
    CHECK_MSG(st == VOX_OK, "%s", err.msg);
    return s;
}

/* What every result must satisfy: ordered, no overlap, speech inside its audio, audio <= max. */
static void check_invariants(const vox_segment *s, size_t ns, size_t n, const vox_segment_params *p) {
    for (size_t i = 0; i < ns; i++) {
        CHECK_MSG(s[i].audio_start <= s[i].start && s[i].start < s[i].end &&
                      s[i].end <= s[i].audio_end && s[i].audio_end <= n,
                  "segment %zu: audio %zu..%zu speech %zu..%zu n %zu", i, s[i].audio_start,
                  s[i].audio_end, s[i].start, s[i].end, n);
        CHECK_MSG(s[i].audio_end - s[i].audio_start <= (size_t)(p->max_s * RATE),
                  "segment %zu: %.3f s of audio", i, (s[i].audio_end - s[i].audio_start) / RATE);
        if (i > 0) {
            CHECK_MSG(s[i - 1].end <= s[i].start && s[i - 1].audio_end <= s[i].audio_start,
                      "segments %zu and %zu overlap", i - 1, i);
            CHECK(s[i - 1].forced_end == s[i].forced_start);
        }
    }
}

static void test_known_pauses(void) {
    /* speech 0.5-3, pause 0.6 (cut), speech 3.6-6, pause 0.3 (not cut), speech 6.3-9,
     * pause 2 (cut), speech 11-12, then 1 s of silence; noise 50 dB under the speech */
    const double t_end = 13.0;
    size_t n = (size_t)(t_end * RATE);
    float *x = calloc(n, sizeof *x);
    speech(x, 0.5, 3.0, 0.3);
    speech(x, 3.6, 6.0, 0.3);
    speech(x, 6.3, 9.0, 0.3);
    speech(x, 11.0, 12.0, 0.3);
    noise(x, n, 0.3 * pow(10, -50 / 20.0));
    vox_segment_params p = vox_segment_default_params();
    size_t ns = 0;
    vox_segment *s = find(x, n, &p, &ns);
    check_invariants(s, ns, n, &p);
    const double want[3][2] = {{0.5, 3.0}, {3.6, 9.0}, {11.0, 12.0}};
    CHECK_MSG(ns == 3, "%zu segments", ns);
    for (size_t i = 0; i < ns && i < 3; i++) {
        CHECK_CLOSE(s[i].start / RATE, want[i][0], 0.03, 0);
        CHECK_CLOSE(s[i].end / RATE, want[i][1], 0.03, 0);
        CHECK(!s[i].forced_start && !s[i].forced_end);
    }
    if (ns == 3) {
        /* padding: 0.25 s into long silences, at most half of the 0.6 s one */
        CHECK_CLOSE(s[0].audio_start / RATE, s[0].start / RATE - 0.25, 1e-3, 0);
        CHECK_CLOSE(s[0].audio_end / RATE, s[0].end / RATE + 0.25, 1e-3, 0);
        CHECK(s[0].audio_end - s[0].end <= (s[1].start - s[0].end) / 2 + 1);
        CHECK_CLOSE(s[2].audio_end / RATE, s[2].end / RATE + 0.25, 1e-3, 0);
    }
    free(s);

    /* the same with min_silence 0.2 s: the 0.3 s pause is cut too */
    p.min_silence_s = 0.2;
    s = find(x, n, &p, &ns);
    CHECK_MSG(ns == 4, "min_silence 0.2: %zu segments", ns);
    if (ns == 4) CHECK_CLOSE(s[1].end / RATE, 6.0, 0.03, 0);
    free(s);

    /* louder overall: the threshold follows the loud level, the times do not change */
    for (size_t i = 0; i < n; i++) x[i] *= 3.0f;
    p = vox_segment_default_params();
    s = find(x, n, &p, &ns);
    CHECK_MSG(ns == 3, "x3: %zu segments", ns);
    if (ns == 3) CHECK_CLOSE(s[1].start / RATE, 3.6, 0.03, 0);
    free(s);
    free(x);
}

static void test_tiny_speech(void) {
    /* a 0.1 s blip 0.7 s after speech joins it; one 5 s away stays on its own; a 3 ms
     * full-scale click does not raise the threshold above the quiet speech */
    size_t n = (size_t)(14 * RATE);
    float *x = calloc(n, sizeof *x);
    speech(x, 1.0, 4.0, 0.1);
    speech(x, 4.7, 4.8, 0.1);
    speech(x, 10.0, 10.1, 0.1);
    for (size_t i = (size_t)(2 * RATE); i < (size_t)(2.003 * RATE); i++) x[i] = 1.0f;
    vox_segment_params p = vox_segment_default_params();
    size_t ns = 0;
    vox_segment *s = find(x, n, &p, &ns);
    check_invariants(s, ns, n, &p);
    CHECK_MSG(ns == 2, "%zu segments", ns);
    if (ns == 2) {
        CHECK_CLOSE(s[0].start / RATE, 1.0, 0.03, 0);
        CHECK_CLOSE(s[0].end / RATE, 4.8, 0.03, 0);
        CHECK_CLOSE(s[1].start / RATE, 10.0, 0.03, 0);
        CHECK_CLOSE(s[1].end / RATE, 10.1, 0.03, 0);
    }
    free(s);
    free(x);
}

static void test_silence_and_edges(void) {
    vox_segment_params p = vox_segment_default_params();
    size_t ns = 7;
    vox_segment *s = find(NULL, 0, &p, &ns);
    CHECK(ns == 0 && s == NULL);
    size_t n = (size_t)(5 * RATE);
    float *x = calloc(n, sizeof *x);
    s = find(x, n, &p, &ns);
    CHECK_MSG(ns == 0, "all zeros: %zu segments", ns);
    free(s);
    noise(x, n, 5e-5); /* below -80 dBFS */
    s = find(x, n, &p, &ns);
    CHECK_MSG(ns == 0, "noise at -86 dBFS: %zu segments", ns);
    free(s);
    /* sound from the first to the last sample: one segment, the whole signal */
    memset(x, 0, n * sizeof *x);
    speech(x, 0, 5.0, 0.2);
    s = find(x, n, &p, &ns);
    CHECK_MSG(ns == 1 && s[0].start == 0 && s[0].end == n && s[0].audio_start == 0 &&
                  s[0].audio_end == n, "whole signal: %zu segments", ns);
    free(s);
    /* shorter than a frame */
    s = find(x, 100, &p, &ns);
    CHECK_MSG(ns == 1 && s[0].end == 100, "100 samples: %zu segments", ns);
    free(s);

    vox_error err = {0};
    p.max_s = 0.4;
    CHECK(vox_segment_find(x, n, RATE, &p, &s, &ns, &err) == VOX_ERR_INVALID_ARG);
    p = vox_segment_default_params();
    p.hop_s = 0;
    CHECK(vox_segment_find(x, n, RATE, &p, &s, &ns, &err) == VOX_ERR_INVALID_ARG);
    p = vox_segment_default_params();
    CHECK(vox_segment_find(x, n, 0, &p, &s, &ns, &err) == VOX_ERR_INVALID_ARG);
    free(x);
}

static void test_forced_cuts(void) {
    /* 80 s of sound without a pause; quieter dips (-20 dB, 0.15 s) at 22 s, 43 s and 65 s: the
     * 30 s limit cuts in the dips */
    const double dips[] = {22.0, 43.0, 65.0};
    size_t n = (size_t)(80 * RATE);
    float *x = calloc(n, sizeof *x);
    speech(x, 0, 80, 0.3);
    for (int d = 0; d < 3; d++)
        for (size_t i = (size_t)((dips[d] - 0.075) * RATE); i < (size_t)((dips[d] + 0.075) * RATE); i++)
            x[i] *= 0.1f;
    vox_segment_params p = vox_segment_default_params();
    size_t ns = 0;
    vox_segment *s = find(x, n, &p, &ns);
    check_invariants(s, ns, n, &p);
    CHECK_MSG(ns == 4, "%zu segments", ns);
    for (size_t i = 0; i + 1 < ns && i < 3; i++) {
        CHECK(s[i].forced_end && s[i + 1].forced_start && s[i].end == s[i + 1].start);
        CHECK(s[i].audio_end == s[i + 1].audio_start);
        CHECK_CLOSE(s[i].end / RATE, dips[i], 0.08, 0);
    }
    if (ns == 4) CHECK(s[0].start == 0 && s[3].end == n && !s[0].forced_start && !s[3].forced_end);
    free(s);
    free(x);
}

/* Random pauses and levels: the invariants, and every pause >= 0.6 s between speech >= 0.4 s
 * is a boundary. */
static void test_random(void) {
    for (int trial = 0; trial < 20; trial++) {
        size_t n = (size_t)(120 * RATE);
        float *x = calloc(n, sizeof *x);
        double t = 0.2 + 2 * (uniform() + 1), pauses[64][2], lens[65];
        int np = 0;
        while (t < 115 && np < 64) {
            double len = 0.2 + 20 * (uniform() + 1) * (uniform() + 1) / 4; /* 0.2..20.2 s */
            if (t + len > 118) len = 118 - t;
            speech(x, t, t + len, 0.05 + 0.2 * (uniform() + 1));
            lens[np] = len;
            t += len;
            double gap = 0.05 + 1.5 * (uniform() + 1);
            pauses[np][0] = t;
            pauses[np][1] = t + gap;
            np++;
            t += gap;
        }
        noise(x, n, 1e-4 * (uniform() + 1));
        vox_segment_params p = vox_segment_default_params();
        size_t ns = 0;
        vox_segment *s = find(x, n, &p, &ns);
        check_invariants(s, ns, n, &p);
        for (int k = 0; k + 1 < np; k++) {
            /* short speech next to a pause may join across it (segment.h, 4.) */
            if (pauses[k][1] - pauses[k][0] < 0.6 || lens[k] < 0.4 || lens[k + 1] < 0.4) continue;
            int found = 0;
            for (size_t i = 0; i + 1 < ns; i++)
                found |= fabs(s[i].end / RATE - pauses[k][0]) < 0.05 &&
                         fabs(s[i + 1].start / RATE - pauses[k][1]) < 0.05;
            CHECK_MSG(found, "trial %d: pause %.2f..%.2f not a boundary", trial, pauses[k][0],
                      pauses[k][1]);

        }
        free(s);
        free(x);
    }
}

/* ---- the fixture ------------------------------------------------------------------------------ */

/* A 16-bit PCM mono WAV: the samples of its data chunk, as float / 32768. */
static float *read_wav16(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char h[12], c[8];
    float *x = NULL;
    if (fread(h, 1, 12, f) == 12 && !memcmp(h, "RIFF", 4) && !memcmp(h + 8, "WAVE", 4)) {
        while (fread(c, 1, 8, f) == 8) {
            uint32_t len = c[4] | c[5] << 8 | c[6] << 16 | (uint32_t)c[7] << 24;
            if (memcmp(c, "data", 4) != 0) {
                fseek(f, (long)(len + (len & 1)), SEEK_CUR);
                continue;
            }
            *n = len / 2;
            x = malloc(*n * sizeof *x);
            for (size_t i = 0; x && i < *n; i++) {
                unsigned char b[2];
                if (fread(b, 1, 2, f) != 2) break;
                x[i] = (int16_t)(b[0] | b[1] << 8) / 32768.0f;
            }
            break;
        }
    }
    fclose(f);
    return x;
}

/* The "start"/"end" seconds of each entry of pauses.json's array `key`. */
static int read_spans(const char *json, const char *key, double spans[][2], int max) {
    const char *p = strstr(json, key), *stop;
    if (!p) return 0;
    stop = strchr(p, ']');
    int k = 0;
    while (k < max && (p = strstr(p, "\"start\":")) && p < stop) {
        const char *e = strstr(p, "\"end\":");
        if (!e || e > stop) break;
        spans[k][0] = atof(p + 8);
        spans[k][1] = atof(e + 6);
        k++;
        p = e;
    }
    return k;
}

static void test_fixture(void) {
    const char *wav = VOX_FIXTURES "/tiny/audio/long.wav", *js = VOX_FIXTURES "/tiny/audio/pauses.json";
    size_t n = 0;
    float *x = read_wav16(wav, &n);
    FILE *f = fopen(js, "rb");
    if (!x || !f) {
        printf("(no %s: fixture part skipped)\n", x ? js : wav);
        free(x);
        if (f) fclose(f);
        return;
    }
    char json[16384];
    size_t len = fread(json, 1, sizeof json - 1, f);
    fclose(f);
    json[len] = 0;
    double speech_spans[16][2];
    int nsp = read_spans(json, "\"speech\"", speech_spans, 16);
    CHECK(nsp == 9);

    vox_segment_params p = vox_segment_default_params();
    size_t ns = 0;
    vox_segment *s = find(x, n, &p, &ns);
    check_invariants(s, ns, n, &p);
    CHECK_MSG(ns == (size_t)nsp, "%zu segments, %d sentences", ns, nsp);
    double worst = 0;
    for (size_t i = 0; i < ns && i < (size_t)nsp; i++) {
        double ds = fabs(s[i].start / RATE - speech_spans[i][0]);
        double de = fabs(s[i].end / RATE - speech_spans[i][1]);
        CHECK_MSG(ds <= 0.2 && de <= 0.2, "segment %zu: %.3f..%.3f, sentence %.3f..%.3f", i,
                  s[i].start / RATE, s[i].end / RATE, speech_spans[i][0], speech_spans[i][1]);
        worst = fmax(worst, fmax(ds, de));
    }
    printf("long.wav: %zu segments, largest error against pauses.json %.3f s\n", ns, worst);
    free(s);
    free(x);
}

int main(void) {
    test_known_pauses();
    test_tiny_speech();
    test_silence_and_edges();
    test_forced_cuts();
    test_random();
    test_fixture();
    return test_finish("test_segment");
}
