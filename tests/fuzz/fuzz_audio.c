/* Fuzzes audio decoding from memory (vox_audio_load_memory: libsndfile virtual I/O, every format
 * libsndfile detects; libmpg123 for MPEG audio) through the mono mix, the resampling to 16 kHz
 * and the log-mel features.
 * An input is either refused with a message that names it, or gives finite 16 kHz samples and
 * finite features inside the range the log-mel recipe allows; the same bytes read from a file
 * with vox_audio_load give the same result. Inputs are limited to 40 s of audio (at most two
 * chunks of features), so that an execution stays short. One input in four is named as the
 * headerless formats libsndfile takes by their extension (.au, .vox, .gsm: audio.c's
 * raw_by_extension), chosen by its last byte; a file of such a name is opened by libsndfile's own
 * open of the path and bytes in memory as that raw format, which may decide otherwise (a header
 * libsndfile recognises and rejects), so there each load is checked on its own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "fuzz.h"
#include "mel/mel.h"

#define NAME "fuzz-input"
#define MAX_SECONDS 40.0

/* The input's name: no extension, or (one input in four) a headerless format's. */
static const char *input_extension(const uint8_t *data, size_t size) {
    static const char *const raw[] = {".au", ".vox", ".gsm", ".vox6"};
    const uint8_t last = size ? data[size - 1] : 0;
    return last % 4 == 0 ? raw[(last / 4) % 4] : "";
}

/* A load's result on its own: refused with a message that names the input, or finite samples. */
static void check_load(vox_status s, const vox_audio *a, const vox_error *err, const char *name) {
    if (s != VOX_OK) {
        FUZZ_CHECK(a->samples == NULL && a->n_samples == 0, "a failed load returned samples");
        FUZZ_CHECK(s == VOX_ERR_FORMAT || s == VOX_ERR_TOO_LONG, "status %d: %s", (int)s, err->msg);
        FUZZ_CHECK(strncmp(err->msg, name, strlen(name)) == 0 && strncmp(err->msg + strlen(name), ": ", 2) == 0,
                   "the message does not start with the name %s: %s", name, err->msg);
        return;
    }
    FUZZ_CHECK(a->n_samples > 0 && a->n_samples <= (size_t)(MAX_SECONDS * VOX_SAMPLE_RATE) + 1,
               "%zu samples", a->n_samples);
    FUZZ_CHECK(a->source_rate > 0 && a->source_channels > 0, "%d Hz, %d channels", a->source_rate,
               a->source_channels);
    for (size_t i = 0; i < a->n_samples; i++)
        FUZZ_CHECK(isfinite(a->samples[i]), "sample %zu is %g", i, a->samples[i]);
}

static void check_features(const vox_audio *a) {
    float *feat = NULL;
    size_t n_chunks = 0;
    vox_error err = {0};
    vox_status s = vox_mel_compute(a->samples, a->n_samples, &feat, &n_chunks, &err);
    FUZZ_CHECK(s == VOX_OK, "mel: %s", err.msg);
    FUZZ_CHECK(n_chunks == vox_mel_chunk_count(a->n_samples) && n_chunks >= 1 && n_chunks <= 2,
               "%zu chunks for %zu samples", n_chunks, a->n_samples);
    size_t n = n_chunks * VOX_MEL_BINS * VOX_CHUNK_FRAMES;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(isfinite(feat[i]), "feature %zu is %g", i, feat[i]);
        lo = fminf(lo, feat[i]);
        hi = fmaxf(hi, feat[i]);
    }
    /* log10 clamped at 1e-10, floored at max - 8, then (x + 4) / 4 */
    FUZZ_CHECK(lo >= -1.5f - 1e-4f && hi - lo <= 2.0f + 1e-4f, "features span [%g, %g]", lo, hi);
    free(feat);
}

/* The features cost about 0.2 s an input under the sanitizers, the decoding a millisecond: the
 * fuzzer computes them for one input in 16, chosen by its bytes so that a crash there reproduces;
 * the replay (ctest) computes them for every input. */
static int with_features(const uint8_t *data, size_t size) {
#ifdef VOX_FUZZ_LIBFUZZER
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
    return h % 16 == 0;
#else
    (void)data, (void)size;
    return 1;
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    vox_audio a, b;
    vox_error err = {0}, err_b = {0};
    const char *ext = input_extension(data, size);
    char name[64], file[64];
    snprintf(name, sizeof name, "%s%s", NAME, ext);
    snprintf(file, sizeof file, "input%s", *ext ? ext : ".audio");
    vox_status s = vox_audio_load_memory(data, size, name, MAX_SECONDS, &a, &err);
    const char *path = fuzz_write_file(file, data, size);
    vox_status s_b = vox_audio_load(path, MAX_SECONDS, &b, &err_b);
    check_load(s, &a, &err, name);
    check_load(s_b, &b, &err_b, path);
    if (!*ext) { /* memory and file the same */
        FUZZ_CHECK(s == s_b, "from memory: %s; from a file: %s", s ? err.msg : "ok",
                   s_b ? err_b.msg : "ok");
        if (s == VOX_OK && s_b == VOX_OK)
            FUZZ_CHECK(a.n_samples == b.n_samples &&
                           memcmp(a.samples, b.samples, a.n_samples * sizeof(float)) == 0 &&
                           a.source_rate == b.source_rate && a.source_channels == b.source_channels,
                       "memory and file decoding differ");
    }
    if (s == VOX_OK && with_features(data, size)) check_features(&a);
    if (s == VOX_OK) vox_audio_free(&a);
    if (s_b == VOX_OK) vox_audio_free(&b);
    return 0;
}
