/* The audio front end against transformers: for each features tensor of
 * tests/fixtures/tiny/reference/features.safetensors (written by scripts/make_reference.py:
 * mistral-common's loading recipe, then WhisperFeatureExtractor as VoxtralProcessor calls it),
 * decode the fixture audio of the same stem with vox_audio_load, compute vox_mel_compute, and
 * compare every element.
 *
 * Tensors: NAME, F32 [n_chunks, 128, 3000], and where present NAME.samples, F32 [n], the 16 kHz
 * mono samples the features were computed from. Several fixture files may share a stem (speech.flac,
 * speech.mp3, ...): the reference is made from one of them, the lossless one; we take the first of
 * .wav, .flac, .ogg, .opus, .mp3 that exists, and the samples check confirms the choice.
 *
 * Tolerances:
 * - samples: 1e-6 absolute. python soundfile and libsndfile decode identically and our soxr
 *   calls repeat python-soxr's exactly (bit-identical here); the slack is for a libsoxr built
 *   with other SIMD code.
 * - features: 2e-4 absolute per element, and a mean absolute difference of at most 1e-6.
 *   We compute in double; the reference runs torch.stft in float32, whose error on a bin is
 *   about 1e-7 of its frame's norm. A feature is log10(power) / 4, so it moves by about
 *   0.22 * |dX| / |X|: for a bin 60 to 70 dB below its frame's strongest one (the floor sits
 *   80 dB below the loudest bin of the audio) that is 2e-5 to 1e-4. Measured on the fixtures:
 *   at most 6e-5, mean at most 2.1e-7, 0.1% of the elements above 1e-5. A systematic mistake
 *   (window, padding, filterbank, floor) moves many elements by far more, and the mean check
 *   catches small systematic shifts that stay under the per-element bound. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio/audio.h"
#include "format/safetensors.h"
#include "harness.h"
#include "mel/mel.h"

#define SAMPLES_ATOL 1e-6
#define FEATURE_ATOL 2e-4
#define FEATURE_MEAN_ATOL 1e-6

/* The fixture audio file for a tensor stem: the first extension in order of preference. */
static int find_audio(const char *dir, const char *stem, char *path, size_t size) {
    static const char *exts[] = {".wav", ".flac", ".ogg", ".opus", ".mp3"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
        snprintf(path, size, "%s/%s%s", dir, stem, exts[i]);
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) return 1;
    }
    return 0;
}

static void compare_case(const vox_safetensors *st, const vox_st_tensor *ref, const char *dir) {
    char path[1024];
    if (!find_audio(dir, ref->name, path, sizeof path)) {
        CHECK_MSG(0, "reference tensor '%s' has no audio file %s/%s.*", ref->name, dir, ref->name);
        return;
    }
    CHECK_MSG(ref->dtype == VOX_DTYPE_F32 && ref->ndim == 3 && ref->shape[1] == VOX_MEL_BINS &&
                  ref->shape[2] == VOX_CHUNK_FRAMES,
              "%s: reference features are not F32 [n, 128, 3000]", ref->name);
    if (ref->dtype != VOX_DTYPE_F32 || ref->ndim != 3) return;

    vox_audio a;
    vox_error err = {0};
    vox_status s = vox_audio_load(path, 0, &a, &err);
    CHECK_MSG(s == VOX_OK, "%s", err.msg);
    if (s) return;

    char name[512];
    snprintf(name, sizeof name, "%s.samples", ref->name);
    const vox_st_tensor *rs = vox_st_find(st, name);
    double sample_diff = -1;
    if (rs) {
        CHECK_MSG(rs->dtype == VOX_DTYPE_F32 && rs->n_elements == a.n_samples,
                  "%s: %zu samples at 16 kHz, reference %zu", path, a.n_samples, rs->n_elements);
        if (rs->dtype == VOX_DTYPE_F32 && rs->n_elements == a.n_samples) {
            const float *r = rs->data;
            sample_diff = 0;
            for (size_t i = 0; i < a.n_samples; i++)
                sample_diff = fmax(sample_diff, fabs((double)a.samples[i] - r[i]));
            CHECK_MSG(sample_diff <= SAMPLES_ATOL, "%s: max |samples - reference| = %g", path,
                      sample_diff);
        }
    }

    float *feat = NULL;
    size_t n_chunks = 0;
    s = vox_mel_compute(a.samples, a.n_samples, &feat, &n_chunks, &err);
    CHECK_MSG(s == VOX_OK, "%s: %s", path, err.msg);
    CHECK_MSG((int64_t)n_chunks == ref->shape[0], "%s: %zu chunks, reference %lld", path, n_chunks,
              (long long)ref->shape[0]);
    if (!s && (int64_t)n_chunks == ref->shape[0]) {
        const float *r = ref->data;
        const size_t n = ref->n_elements;
        double md = 0, sum = 0;
        size_t worst = 0, over = 0;
        for (size_t i = 0; i < n; i++) {
            const double d = fabs((double)feat[i] - r[i]);
            sum += d;
            over += d > FEATURE_ATOL;
            if (d > md) md = d, worst = i;
        }
        const size_t per_chunk = (size_t)VOX_MEL_BINS * VOX_CHUNK_FRAMES;
        CHECK_MSG(over == 0,
                  "%s: %zu features off by more than %g; worst %g at chunk %zu bin %zu frame %zu "
                  "(ours %.7g, reference %.7g)", path, over, FEATURE_ATOL, md, worst / per_chunk,
                  worst % per_chunk / VOX_CHUNK_FRAMES, worst % VOX_CHUNK_FRAMES, feat[worst],
                  r[worst]);
        CHECK_MSG(sum / n <= FEATURE_MEAN_ATOL, "%s: mean |features - reference| = %g", path,
                  sum / n);
        printf("  %-14s %zu chunk(s): features max |d| %.3g, mean %.3g", strrchr(path, '/') + 1,
               n_chunks, md, sum / n);
        if (sample_diff >= 0) printf("; samples max |d| %.3g", sample_diff);
        printf("\n");
    }
    free(feat);
    vox_audio_free(&a);
}

int main(void) {
    const char *dir = VOX_FIXTURES "/tiny/audio";
    const char *ref_path = VOX_FIXTURES "/tiny/reference/features.safetensors";
    struct stat sb;
    if (stat(ref_path, &sb) != 0)
        TEST_SKIP("%s not found: scripts/make_reference.py writes it", ref_path);

    vox_safetensors *st = NULL;
    vox_error err = {0};
    if (vox_st_open(ref_path, &st, &err) != VOX_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int cases = 0;
    for (size_t i = 0; i < vox_st_count(st); i++) {
        const vox_st_tensor *t = vox_st_at(st, i);
        if (strchr(t->name, '.')) continue; /* NAME.samples go with NAME */
        compare_case(st, t, dir);
        cases++;
    }
    CHECK_MSG(cases > 0, "%s holds no features tensor", ref_path);
    vox_st_close(st);
    return test_finish("test_features");
}
