/* vox_audio_load and vox_audio_resample.
 *
 * Test audio is written at run time with libsndfile into a temporary directory (WAV in five
 * encodings, FLAC, Ogg/Vorbis, Ogg/Opus, MP3), decoded back, and checked for length, content and
 * exact channel mixing. Resampling is checked against numbers from python-soxr, which
 * mistral-common uses. Malformed files come from tests/fixtures/bad_audio (see
 * make_bad_audio.py there) or are made here (truncated FLAC, a sparse 10-hour WAV). */
#define _DEFAULT_SOURCE /* mkdtemp, ftruncate */
#include <errno.h>
#include <math.h>
#include <sndfile.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audio/audio.h"
#include "harness.h"

static const double k_pi = 3.14159265358979323846;

/* ---- helpers --------------------------------------------------------------------------------- */

static char g_dir[256];
static char g_files[64][320];
static int g_n_files;

/* A path in the temporary directory, remembered for the clean-up. */
static const char *tmp_path(const char *name) {
    VOX_ASSERT(g_n_files < 64);
    char *p = g_files[g_n_files++];
    snprintf(p, sizeof g_files[0], "%s/%s", g_dir, name);
    return p;
}

static void cleanup(void) {
    for (int i = 0; i < g_n_files; i++) remove(g_files[i]);
    rmdir(g_dir);
}

static const char *bad_path(const char *name) {
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/bad_audio/%s", VOX_FIXTURES, name);
    return p;
}

/* amp * sin(2 pi f i / rate) */
static float *tone(double f, double rate, size_t n, double amp) {
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = (float)(amp * sin(2.0 * k_pi * f * (double)i / rate));
    return x;
}

/* A deterministic broadband signal, exactly representable in float32; the python numbers below
 * were computed from the same definition:
 *   (((i * 7919 + seed) % 2001) - 1000) / 1000  (numpy: float32 divided by float32(1000)) */
static float hash_sample(size_t i, unsigned seed, float div) {
    return (float)((long)((i * 7919u + seed) % 2001u) - 1000) / div;
}

static float *hash_signal(size_t n) {
    float *x = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; i < n; i++) x[i] = hash_sample(i, 0, 1000.0f);
    return x;
}

/* Writes interleaved float frames; returns 0 when libsndfile cannot write this format. */
static int write_audio(const char *path, int format, int rate, int channels, const float *x,
                       size_t frames) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    info.samplerate = rate;
    info.channels = channels;
    info.format = format;
    SNDFILE *s = sf_open(path, SFM_WRITE, &info);
    if (!s) return 0;
    sf_count_t w = sf_writef_float(s, x, (sf_count_t)frames);
    sf_close(s);
    return w == (sf_count_t)frames;
}

/* Least-squares fit of a sinusoid of frequency f over the middle half of x (16 kHz): returns
 * its amplitude; *residual gets the energy left over, relative to the energy of x. */
static double fit_tone(const float *x, size_t n, double f, double *residual) {
    const size_t a = n / 4, b = n - n / 4;
    double ss = 0, sc = 0, cc = 0, xs = 0, xc = 0, xx = 0;
    for (size_t i = a; i < b; i++) {
        const double s = sin(2.0 * k_pi * f * (double)i / VOX_SAMPLE_RATE);
        const double c = cos(2.0 * k_pi * f * (double)i / VOX_SAMPLE_RATE);
        ss += s * s, sc += s * c, cc += c * c;
        xs += x[i] * s, xc += x[i] * c, xx += (double)x[i] * x[i];
    }
    const double det = ss * cc - sc * sc;
    const double p = (xs * cc - xc * sc) / det, q = (xc * ss - xs * sc) / det;
    double res = 0;
    for (size_t i = a; i < b; i++) {
        const double s = sin(2.0 * k_pi * f * (double)i / VOX_SAMPLE_RATE);
        const double c = cos(2.0 * k_pi * f * (double)i / VOX_SAMPLE_RATE);
        const double e = x[i] - p * s - q * c;
        res += e * e;
    }
    *residual = xx > 0 ? res / xx : 1.0;
    return sqrt(p * p + q * q);
}

/* Loads path expecting failure with the given status and a message naming the file. */
static void expect_error(const char *path, double max_seconds, vox_status want,
                         const char *want_text) {
    vox_audio a;
    vox_error err = {0};
    vox_status st = vox_audio_load(path, max_seconds, &a, &err);
    CHECK_MSG(st == want, "%s: status %d (%s), want %d; message: %s", path, st,
              vox_status_name(st), want, err.msg);
    CHECK_MSG(strstr(err.msg, path) != NULL, "message does not name the file: %s", err.msg);
    if (want_text) CHECK_MSG(strstr(err.msg, want_text) != NULL, "message: %s", err.msg);
    CHECK(a.samples == NULL && a.n_samples == 0);
    printf("  rejected as expected: %s\n", err.msg);
}

/* ---- decoding -------------------------------------------------------------------------------- */

/* WAV in each encoding: 1 s of a 440 Hz tone at 16 kHz comes back intact. */
static void test_wav_encodings(void) {
    struct {
        const char *name;
        int subtype;
        double tol;
    } encs[] = {
        {"pcm16.wav", SF_FORMAT_PCM_16, 1.0 / 16384}, {"pcm24.wav", SF_FORMAT_PCM_24, 1e-6},
        {"pcm32.wav", SF_FORMAT_PCM_32, 1e-7},        {"float.wav", SF_FORMAT_FLOAT, 0.0},
        {"u8.wav", SF_FORMAT_PCM_U8, 1.0 / 64},
    };
    float *x = tone(440, VOX_SAMPLE_RATE, 16000, 0.5);
    for (size_t e = 0; e < sizeof encs / sizeof encs[0]; e++) {
        const char *path = tmp_path(encs[e].name);
        CHECK(write_audio(path, SF_FORMAT_WAV | encs[e].subtype, VOX_SAMPLE_RATE, 1, x, 16000));
        vox_audio a;
        vox_error err = {0};
        vox_status st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK, "%s", err.msg);
        if (st) continue;
        CHECK(a.n_samples == 16000 && a.source_rate == 16000 && a.source_channels == 1);
        double md = 0;
        for (size_t i = 0; i < a.n_samples; i++) md = fmax(md, fabs(a.samples[i] - x[i]));
        CHECK_MSG(md <= encs[e].tol, "%s: max |decoded - written| = %g", encs[e].name, md);
        vox_audio_free(&a);
    }
    free(x);
}

/* libsndfile's integer-to-float scaling (python soundfile reads through the same code):
 * PCM16 v -> v / 2^15, PCM24 v -> v / 2^23, PCM32 v -> float(v) / 2^31, u8 v -> (v - 128) / 2^7.
 * Integers are written with sf_writef_int (full 32-bit scale; 24 and 16 bits keep the top). */
static void test_integer_scaling(void) {
    const int32_t vals[] = {INT32_MIN, -(1 << 30), -(123 << 24), -256, 0, 256, 77 << 24,
                            INT32_MAX - 255, 1 << 30};
    const int n = sizeof vals / sizeof vals[0];
    struct {
        const char *name;
        int subtype, bits;
    } encs[] = {{"int16.wav", SF_FORMAT_PCM_16, 16},
                {"int24.wav", SF_FORMAT_PCM_24, 24},
                {"int32.wav", SF_FORMAT_PCM_32, 32},
                {"int8u.wav", SF_FORMAT_PCM_U8, 8}};
    for (int e = 0; e < 4; e++) {
        const char *path = tmp_path(encs[e].name);
        SF_INFO info = {.samplerate = VOX_SAMPLE_RATE, .channels = 1,
                        .format = SF_FORMAT_WAV | encs[e].subtype};
        SNDFILE *s = sf_open(path, SFM_WRITE, &info);
        CHECK(s != NULL);
        if (!s) continue;
        CHECK(sf_writef_int(s, vals, n) == n);
        sf_close(s);
        vox_audio a;
        vox_error err = {0};
        vox_status st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && a.n_samples == (size_t)n, "%s", err.msg);
        if (st) continue;
        for (int i = 0; i < n; i++) {
            const int shift = 32 - encs[e].bits;
            const int32_t v = vals[i] >> shift; /* the stored integer (u8: offset by 128) */
            const float want = (float)v * (float)(1.0 / (double)(1u << (encs[e].bits - 1)));
            CHECK_MSG(a.samples[i] == want, "%s[%d]: %.9g, want %.9g", encs[e].name, i,
                      a.samples[i], want);
        }
        vox_audio_free(&a);
    }
}

/* FLAC, Ogg/Vorbis, Ogg/Opus, MP3: length and tone after a lossy round trip. */
static void test_compressed(void) {
    struct {
        const char *name;
        int format, rate;
        double max_residual; /* lossless: quantisation only */
    } fmts[] = {
        {"tone.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1e-8},
        {"tone.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1e-3},
        {"tone.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 1e-3},
        {"tone16k.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1e-3},
        {"tone44k.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100, 1e-3},
    };
    for (size_t e = 0; e < sizeof fmts / sizeof fmts[0]; e++) {
        const int rate = fmts[e].rate;
        const size_t frames = (size_t)rate * 2; /* 2 s */
        float *x = tone(440, rate, frames, 0.5);
        const char *path = tmp_path(fmts[e].name);
        const char *load = path;
        if (!write_audio(path, fmts[e].format, rate, 1, x, frames)) {
            /* a libsndfile built without an encoder: decode the committed fixture instead */
            CHECK_MSG(fmts[e].format >> 16 == SF_FORMAT_MPEG >> 16, "cannot write %s: %s",
                      fmts[e].name, sf_strerror(NULL));
            printf("  note: this libsndfile cannot write %s; decoding speech.mp3 only\n",
                   fmts[e].name);
            free(x);
            char fixture[512];
            snprintf(fixture, sizeof fixture, "%s/tiny/audio/speech.mp3", VOX_FIXTURES);
            vox_audio a;
            vox_error err = {0};
            CHECK_MSG(vox_audio_load(fixture, 0, &a, &err) == VOX_OK, "%s", err.msg);
            CHECK(a.source_rate == 24000 && fabs(a.n_samples / 16000.0 - 2.208) < 0.05);
            vox_audio_free(&a);
            continue;
        }
        free(x);
        vox_audio a;
        vox_error err = {0};
        vox_status st = vox_audio_load(load, 0, &a, &err);
        CHECK_MSG(st == VOX_OK, "%s", err.msg);
        if (st) continue;
        CHECK(a.source_rate == rate && a.source_channels == 1);
        /* encoder delay and padding are removed by the decoders here (gapless): allow 10 ms */
        CHECK_MSG(fabs((double)a.n_samples - 32000.0) <= 160, "%s: %zu samples, want 32000",
                  fmts[e].name, a.n_samples);
        double residual;
        const double amp = fit_tone(a.samples, a.n_samples, 440, &residual);
        CHECK_MSG(fabs(amp - 0.5) < 0.02 && residual < fmts[e].max_residual,
                  "%s: tone amplitude %g (want 0.5), residual %g", fmts[e].name, amp, residual);
        /* the tone's own frequency: a neighbour 20 Hz away fits much worse */
        double res_off;
        fit_tone(a.samples, a.n_samples, 460, &res_off);
        CHECK(res_off > 0.5);
        vox_audio_free(&a);
    }
}

/* Channels are averaged like numpy's mean(axis=1) over float32 frames. */
static void test_channel_mix(void) {
    /* stereo and 3 channels, all different: the float32 sum in channel order, divided in double */
    for (int ch = 2; ch <= 3; ch++) {
        const size_t frames = 8000;
        float *x = malloc(frames * ch * sizeof(float));
        for (size_t i = 0; i < frames; i++) {
            x[i * ch] = (float)(0.3 * sin(2.0 * k_pi * 440.0 * i / VOX_SAMPLE_RATE));
            x[i * ch + 1] = hash_sample(i, 5, 1000.0f);
            if (ch == 3) x[i * ch + 2] = hash_sample(i, 11, 3000.0f);
        }
        const char *path = tmp_path(ch == 2 ? "stereo.wav" : "three.wav");
        CHECK(write_audio(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, VOX_SAMPLE_RATE, ch, x, frames));
        vox_audio a;
        vox_error err = {0};
        CHECK_MSG(vox_audio_load(path, 0, &a, &err) == VOX_OK, "%s", err.msg);
        CHECK(a.n_samples == frames && a.source_channels == ch);
        size_t bad = 0;
        for (size_t i = 0; a.samples && i < frames; i++) {
            float s = x[i * ch] + x[i * ch + 1];
            if (ch == 3) s += x[i * ch + 2];
            bad += a.samples[i] != (float)((double)s / ch);
        }
        CHECK_MSG(bad == 0, "%d channels: %zu samples differ from the exact mean", ch, bad);
        vox_audio_free(&a);
        free(x);
    }
    /* 10 channels: numpy sums 8 or more values pairwise (8 partial sums), which rounds
     * differently from a plain loop. Frames 0 and 2 of this signal are such cases; the expected
     * means are numpy's, computed with
     *   v = ((((np.arange(40, dtype=np.uint64) * 7919 + 1) % 2001).astype(np.int64) - 1000)
     *        .astype(np.float32) / np.float32(997)).reshape(4, 10);  v.mean(axis=1) */
    float x[40];
    for (size_t i = 0; i < 40; i++) x[i] = hash_sample(i, 1, 997.0f);
    const char *path = tmp_path("ten.wav");
    CHECK(write_audio(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, VOX_SAMPLE_RATE, 10, x, 4));
    vox_audio a;
    vox_error err = {0};
    CHECK_MSG(vox_audio_load(path, 0, &a, &err) == VOX_OK, "%s", err.msg);
    if (a.samples) {
        CHECK(a.n_samples == 4);
        CHECK_MSG(a.samples[0] == 0x1.aec206p-2f, "%a", a.samples[0]);
        CHECK_MSG(a.samples[2] == 0x1.ed68e6p-4f, "%a", a.samples[2]);
    }
    vox_audio_free(&a);
}

/* ---- resampling ------------------------------------------------------------------------------ */

/* vox_audio_resample against python-soxr 1.1.0 (libsoxr 0.1.3), on hash_signal(n):
 *   y = soxr.resample(x, rate, 16000, quality="HQ")
 * with len(y) and y at the listed indices. Our libsoxr gave bit-identical output; the tolerance
 * leaves room for a libsoxr built with other SIMD code. */
static void test_resample_vs_python(void) {
    static const struct {
        int rate;
        size_t n_in, n_out;
        size_t idx[5];
        float val[5];
    } cases[] = {
        {44100, 44100, 16000, {0, 1, 5333, 8000, 15999},
         {-0.0120340064f, 0.80664438f, 0.181200117f, -0.394457519f, 0.570362568f}},
        {44100, 66157, 24003, {0, 1, 8001, 12001, 24002},
         {-0.0120340064f, 0.80664438f, -0.43477729f, 0.949349403f, 0.407156348f}},
        {44100, 300007, 108846, {0, 1, 36282, 54423, 108845},
         {-0.0120340064f, 0.80664438f, -0.154512316f, -0.681941867f, -0.662435293f}},
        {8000, 8000, 16000, {0, 1, 5333, 8000, 15999},
         {-0.936007738f, -0.161174208f, 0.438605547f, -0.783563495f, -0.304333657f}},
        {8000, 12345, 24690, {0, 1, 8230, 12345, 24689},
         {-0.936007738f, -0.161174208f, -0.571762681f, 0.666159093f, 0.147877812f}},
        {8000, 3, 6, {0, 1, 2, 3, 5},
         {-0.95282197f, -0.225801557f, 0.869233012f, 1.31696939f, 0.218040153f}},
        {22050, 100, 73, {0, 1, 2, 3, 4},
         {-0.507485867f, 0.87842387f, 0.787997246f, 0.622579932f, 0.560784936f}},
        {44100, 2, 1, {0, 0, 0, 0, 0},
         {-0.0801828653f, -0.0801828653f, -0.0801828653f, -0.0801828653f, -0.0801828653f}},
        {48000, 1, 0, {0}, {0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float *x = hash_signal(cases[c].n_in), *y = NULL;
        size_t n_out = 0;
        vox_error err = {0};
        vox_status st = vox_audio_resample(x, cases[c].n_in, cases[c].rate, VOX_SAMPLE_RATE, &y,
                                           &n_out, &err);
        CHECK_MSG(st == VOX_OK, "%s", err.msg);
        CHECK_MSG(n_out == cases[c].n_out, "%d Hz x %zu: %zu samples, python-soxr gives %zu",
                  cases[c].rate, cases[c].n_in, n_out, cases[c].n_out);
        for (int k = 0; k < 5 && n_out == cases[c].n_out && n_out > 0; k++)
            CHECK_CLOSE(y[cases[c].idx[k]], cases[c].val[k], 1e-6, 0);
        free(x);
        free(y);
    }
}

/* Tones keep their amplitude and frequency through 44.1 kHz -> 16 kHz and 8 kHz -> 16 kHz, and
 * the loader (which streams the file through the resampler) equals the one-shot call. */
static void test_resample_files(void) {
    struct {
        const char *name;
        int rate;
        double f;
    } cases[] = {{"tone44k.wav", 44100, 1000}, {"tone8k.wav", 8000, 440}};
    for (int c = 0; c < 2; c++) {
        const size_t frames = (size_t)cases[c].rate * 2;
        float *x = tone(cases[c].f, cases[c].rate, frames, 0.5);
        const char *path = tmp_path(cases[c].name);
        CHECK(write_audio(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, cases[c].rate, 1, x, frames));
        free(x);
        vox_audio a;
        vox_error err = {0};
        CHECK_MSG(vox_audio_load(path, 0, &a, &err) == VOX_OK, "%s", err.msg);
        CHECK(a.n_samples == 32000 && a.source_rate == cases[c].rate);
        double residual;
        const double amp = fit_tone(a.samples, a.n_samples, cases[c].f, &residual);
        CHECK_MSG(fabs(amp - 0.5) < 1e-3 && residual < 1e-6, "%s: amplitude %g residual %g",
                  cases[c].name, amp, residual);
        vox_audio_free(&a);
    }
    /* longer than the resampler's input pieces (132,300 samples at 44.1 kHz) */
    const size_t n = 300007;
    float *x = hash_signal(n), *y = NULL;
    const char *path = tmp_path("hash44k.wav");
    CHECK(write_audio(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 44100, 1, x, n));
    size_t n_out = 0;
    vox_error err = {0};
    CHECK(vox_audio_resample(x, n, 44100, VOX_SAMPLE_RATE, &y, &n_out, &err) == VOX_OK);
    vox_audio a;
    CHECK_MSG(vox_audio_load(path, 0, &a, &err) == VOX_OK, "%s", err.msg);
    CHECK(a.n_samples == n_out && n_out == 108846);
    if (a.samples && y && a.n_samples == n_out)
        CHECK(memcmp(a.samples, y, n_out * sizeof(float)) == 0);
    vox_audio_free(&a);
    free(x);
    free(y);

    /* A few frames at a high rate: shorter than soxr's first output sample, which gave nothing
     * (the file was refused as "too short"); one sample, the mean of the frames, as a 16 kHz file
     * of one frame is that frame. Two frames at 96 kHz is the longest such input there. */
    struct {
        int rate;
        size_t frames;
    } tiny[] = {{44100, 1}, {48000, 1}, {96000, 2}, {192000, 4}};
    for (size_t c = 0; c < sizeof tiny / sizeof *tiny; c++) {
        float v[4] = {0.25f, 0.5f, -0.125f, 0.375f};
        char name[64];
        snprintf(name, sizeof name, "tiny%d.wav", tiny[c].rate);
        const char *tiny_path = tmp_path(name);
        CHECK(write_audio(tiny_path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, tiny[c].rate, 1, v,
                          tiny[c].frames));
        double mean = 0;
        for (size_t i = 0; i < tiny[c].frames; i++) mean += v[i];
        mean /= (double)tiny[c].frames;
        CHECK_MSG(vox_audio_load(tiny_path, 0, &a, &err) == VOX_OK, "%s", err.msg);
        CHECK_MSG(a.n_samples == 1 && a.samples && a.samples[0] == (float)mean,
                  "%zu frames at %d Hz: %zu samples", tiny[c].frames, tiny[c].rate, a.n_samples);
        vox_audio_free(&a);
    }
}

/* ---- bad input ------------------------------------------------------------------------------- */

static void test_bad_files(void) {
    expect_error(bad_path("does_not_exist.wav"), 0, VOX_ERR_IO, "cannot open");
    expect_error(bad_path("empty.wav"), 0, VOX_ERR_FORMAT, "empty");
    expect_error(bad_path("text.wav"), 0, VOX_ERR_FORMAT, "not a supported audio file");
    expect_error(bad_path("zero_frames.wav"), 0, VOX_ERR_FORMAT, "0 frames");
    expect_error(bad_path("nan.wav"), 0, VOX_ERR_FORMAT, "NaN");
    expect_error(bad_path("inf.wav"), 0, VOX_ERR_FORMAT, "infinite");
    expect_error(bad_path("garbage.flac"), 0, VOX_ERR_FORMAT, NULL);
    /* libsndfile's own words for it ("Internal error : SF_INFO struct incomplete.") read as a
     * fault of this program */
    expect_error(bad_path("zero_rate.wav"), 0, VOX_ERR_FORMAT,
                 "invalid header: a sample rate, channel count or length out of range");
    /* an Ogg file libsndfile cannot decode says which codec it holds, not libsndfile's
     * "Unspecified internal error." */
    expect_error(bad_path("speex.ogg"), 0, VOX_ERR_FORMAT,
                 "an Ogg file of Speex, with no Vorbis or Opus audio");
    expect_error(g_dir, 0, VOX_ERR_IO, "directory");

    /* The header promises 16000 frames, 4000 are there: those are decoded, intact. */
    vox_audio a;
    vox_error err = {0};
    vox_status st = vox_audio_load(bad_path("truncated.wav"), 0, &a, &err);
    CHECK_MSG(st == VOX_OK && a.n_samples == 4000, "truncated.wav: %s", err.msg);
    CHECK_MSG(strstr(a.warning, "truncated: decoded 0.25 s of the 1.00 s its header announces"),
              "truncated.wav: warning '%s'", a.warning);
    if (!st) {
        double residual;
        const double amp = fit_tone(a.samples, a.n_samples, 440, &residual);
        CHECK_MSG(fabs(amp - 12000.0 / 32768) < 1e-4 && residual < 1e-6, "amp %g res %g", amp,
                  residual);
    }
    vox_audio_free(&a);

    /* A FLAC cut at 60%: the decoder loses sync; what comes before is decoded, with a warning
     * that says how much of the announced length that is. */
    const size_t frames = 48000;
    float *x = tone(440, VOX_SAMPLE_RATE, frames, 0.5);
    for (size_t i = 0; i < frames; i++) x[i] += 0.25f * hash_sample(i, 3, 1000.0f);
    const char *flac = tmp_path("cut.flac");
    CHECK(write_audio(flac, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, VOX_SAMPLE_RATE, 1, x, frames));
    free(x);
    struct stat sb;
    CHECK(stat(flac, &sb) == 0 && truncate(flac, sb.st_size * 6 / 10) == 0);
    st = vox_audio_load(flac, 0, &a, &err);
    CHECK_MSG(st == VOX_OK, "cut.flac: %s", err.msg);
    if (!st) {
        CHECK_MSG(a.n_samples > frames / 4 && a.n_samples < frames, "cut.flac: %zu of %zu samples",
                  a.n_samples, frames);
        CHECK_MSG(strstr(a.warning, "truncated or damaged: decoded ") &&
                      strstr(a.warning, "of the 3.00 s its header announces"),
                  "cut.flac: warning '%s'", a.warning);
    }
    vox_audio_free(&a);
    /* AIFF, AIFF-C, AU and W64 cut at half: warned as a WAV is (their data sizes are in other
     * lines of libsndfile's log, W64's only in the whole file's size); whole ones: no warning */
    static const struct {
        const char *name;
        int format;
    } containers[] = {{"cut.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16},
                      {"cut.aifc", SF_FORMAT_AIFF | SF_FORMAT_PCM_24},
                      {"cut.au", SF_FORMAT_AU | SF_FORMAT_PCM_16},
                      {"cut.w64", SF_FORMAT_W64 | SF_FORMAT_PCM_16}};
    x = tone(440, VOX_SAMPLE_RATE, frames, 0.5);
    for (size_t c = 0; c < sizeof containers / sizeof *containers; c++) {
        const char *path = tmp_path(containers[c].name);
        CHECK(write_audio(path, containers[c].format, VOX_SAMPLE_RATE, 1, x, frames));
        st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && a.warning[0] == 0, "%s whole: '%s' %s", containers[c].name,
                  st ? "" : a.warning, err.msg);
        if (!st) vox_audio_free(&a);
        CHECK(stat(path, &sb) == 0 && truncate(path, sb.st_size / 2) == 0);
        st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && strstr(a.warning, "truncated: decoded 1.50 s") &&
                      strstr(a.warning, "of the 3.00 s"),
                  "%s cut at half: status %d (%s), warning '%s'", containers[c].name, (int)st,
                  err.msg, st ? "" : a.warning);
        if (!st) vox_audio_free(&a);
    }
    free(x);
    /* stereo float: a NaN is reported at its frame; finite samples whose mix overflows float
     * are refused as such, not as an "infinite" sample of the file */
    float st_x[2 * 64];
    for (size_t i = 0; i < 2 * 64; i++) st_x[i] = 0.1f;
    st_x[2 * 5 + 1] = NAN;
    const char *st_nan = tmp_path("stereo_nan.wav");
    CHECK(write_audio(st_nan, SF_FORMAT_WAV | SF_FORMAT_FLOAT, VOX_SAMPLE_RATE, 2, st_x, 64));
    expect_error(st_nan, 0, VOX_ERR_FORMAT, "sample at frame 5 is NaN");
    st_x[2 * 5 + 1] = 0.1f;
    st_x[2 * 7] = st_x[2 * 7 + 1] = 3e38f;
    const char *st_ovf = tmp_path("stereo_overflow.wav");
    CHECK(write_audio(st_ovf, SF_FORMAT_WAV | SF_FORMAT_FLOAT, VOX_SAMPLE_RATE, 2, st_x, 64));
    expect_error(st_ovf, 0, VOX_ERR_FORMAT, "mixing the channels overflowed");
    /* a whole file: no warning */
    st = vox_audio_load(bad_path("../tiny/audio/speech.flac"), 0, &a, &err);
    CHECK_MSG(st == VOX_OK && a.warning[0] == 0, "speech.flac: '%s' %s", a.warning, err.msg);
    vox_audio_free(&a);

    /* Length limit: 3 s against limits of 1 s (refused) and 3 s (accepted). */
    x = tone(440, VOX_SAMPLE_RATE, 48000, 0.5);
    const char *three = tmp_path("three_seconds.wav");
    CHECK(write_audio(three, SF_FORMAT_WAV | SF_FORMAT_PCM_16, VOX_SAMPLE_RATE, 1, x, 48000));
    free(x);
    expect_error(three, 1.0, VOX_ERR_TOO_LONG, "split");
    CHECK(vox_audio_load(three, 3.0, &a, &err) == VOX_OK && a.n_samples == 48000);
    vox_audio_free(&a);
    st = vox_audio_load(three, -1.0, &a, &err);
    CHECK(st == VOX_ERR_INVALID_ARG);
}

/* ---- MPEG audio: libmpg123 on a quiet handle of our own (src/audio/mpeg.c) -------------------- */

/* stderr into a file (capture_begin) and back (capture_end: what was written meanwhile,
 * malloc'ed). */
static int capture_begin(void) {
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(tmp_path("stderr.txt"), "w");
    VOX_ASSERT(saved >= 0 && f);
    dup2(fileno(f), 2);
    fclose(f);
    return saved;
}

static char *capture_end(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    const char *cap = g_files[--g_n_files]; /* capture_begin's, and its name is free again */
    size_t len = 0;
    char *text = test_read_file(cap, &len);
    remove(cap);
    return text;
}

/* vox_audio_load (data NULL) or vox_audio_load_memory; returns what it wrote to stderr. */
static char *load_capturing_stderr(const char *path, const char *data, size_t size, vox_audio *a,
                                   vox_status *st, vox_error *err) {
    int saved = capture_begin();
    *st = data ? vox_audio_load_memory(data, size, path, 0, a, err) : vox_audio_load(path, 0, a, err);
    return capture_end(saved);
}

/* The samples libsndfile decodes from path, mixed to mono and resampled to 16 kHz the way
 * vox_audio_load does (python soundfile, the reference, reads MP3 through libsndfile); NULL when
 * this libsndfile cannot read MPEG audio. */
static float *sndfile_reference(const char *path, size_t *n) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *s = sf_open(path, SFM_READ, &info);
    if (!s) return NULL;
    VOX_ASSERT(info.channels == 1);
    /* as soundfile.read does before reading (the reference): for MP3 that is mpg123_seek(0),
     * which changes the floats of MPEG-2/2.5 Layer III streams (src/audio/mpeg.c) */
    if (info.seekable) CHECK(sf_seek(s, 0, SEEK_SET) == 0);
    size_t cap = 1 << 16, frames = 0;
    float *x = malloc(cap * sizeof(float));
    sf_count_t got;
    while ((got = sf_readf_float(s, x + frames, (sf_count_t)(cap - frames))) > 0) {
        frames += (size_t)got;
        if (frames == cap) x = realloc(x, (cap *= 2) * sizeof(float));
    }
    sf_close(s);
    float *y = NULL;
    vox_error err = {0};
    if (info.samplerate == VOX_SAMPLE_RATE) {
        y = x;
        *n = frames;
        return y;
    }
    CHECK(vox_audio_resample(x, frames, info.samplerate, VOX_SAMPLE_RATE, &y, n, &err) == VOX_OK);
    free(x);
    return y;
}

/* An MP3 decodes to the samples libsndfile gives, from a file and from memory, and libmpg123
 * prints nothing. A damaged one (64 bytes zeroed in the middle: a frame header lost) decodes
 * past the damage with a warning that says where sync was lost and how much was skipped;
 * libmpg123's own "Note: Illegal Audio-MPEG-Header ..." lines never reach stderr. */
static void test_mpeg(void) {
    char speech[512];
    snprintf(speech, sizeof speech, "%s/tiny/audio/speech.mp3", VOX_FIXTURES);
    const char *mono16 = tmp_path("tone16k_mono.mp3");
    float *x = tone(440, VOX_SAMPLE_RATE, 3 * VOX_SAMPLE_RATE, 0.5);
    bool wrote = write_audio(mono16, SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, VOX_SAMPLE_RATE,
                             1, x, 3 * VOX_SAMPLE_RATE);
    free(x);
    const char *files[] = {speech, wrote ? mono16 : NULL};
    for (int f = 0; f < 2 && files[f]; f++) {
        size_t len = 0;
        char *bytes = test_read_file(files[f], &len);
        CHECK(bytes != NULL);
        if (!bytes) continue;
        for (int damaged = 0; damaged < 2; damaged++) {
            if (damaged) memset(bytes + len / 2, 0, 64);
            const char *path = files[f];
            if (damaged) { /* the same damage on disk */
                path = tmp_path(f ? "tone_damaged.mp3" : "speech_damaged.mp3");
                FILE *o = fopen(path, "wb");
                CHECK(o && fwrite(bytes, 1, len, o) == len);
                if (o) fclose(o);
            }
            vox_audio a, m;
            vox_error err = {0};
            vox_status st, mst;
            char *said = load_capturing_stderr(path, NULL, 0, &a, &st, &err);
            CHECK_MSG(st == VOX_OK, "%s: %s", path, err.msg);
            char *said_mem = load_capturing_stderr(path, bytes, len, &m, &mst, &err);
            CHECK_MSG(mst == VOX_OK, "%s from memory: %s", path, err.msg);
            CHECK_MSG(said && !*said && said_mem && !*said_mem, "%s: stderr got '%s' '%s'", path,
                      said ? said : "?", said_mem ? said_mem : "?");
            free(said);
            free(said_mem);
            if (st || mst) continue;
            CHECK_MSG(m.n_samples == a.n_samples &&
                          memcmp(m.samples, a.samples, a.n_samples * sizeof(float)) == 0 &&
                          strcmp(m.warning, a.warning) == 0,
                      "%s: memory and file differ", path);
            if (damaged) {
                CHECK_MSG(strstr(a.warning, "damaged: the MPEG stream lost sync at byte ") &&
                              strstr(a.warning, "bytes skipped to find it again); decoded "),
                          "%s: warning '%s'", path, a.warning);
                printf("  %s: %s\n", path, a.warning);
            } else {
                CHECK_MSG(a.warning[0] == 0, "%s: warning '%s'", path, a.warning);
            }
            /* the same samples as libsndfile's decoder (skipped where it cannot read MPEG) */
            size_t n_ref = 0;
            int saved = capture_begin(); /* libsndfile's libmpg123 prints where sync is lost */
            float *ref = sndfile_reference(path, &n_ref);
            free(capture_end(saved));
            if (ref) {
                CHECK_MSG(n_ref == a.n_samples &&
                              memcmp(ref, a.samples, n_ref * sizeof(float)) == 0,
                          "%s: %zu samples differ from libsndfile's %zu", path, a.n_samples, n_ref);
            } else if (!damaged) {
                printf("  note: this libsndfile cannot read %s; not compared\n", path);
            }
            free(ref);
            vox_audio_free(&a);
            vox_audio_free(&m);
        }
        free(bytes);
    }
}

/* Headerless audio that libsndfile opens by its name's extension when it does not recognise the
 * contents (u-law .au/.snd, Dialogic VOX ADPCM .vox, GSM 6.10 .gsm; 8 kHz mono, .vox6 6 kHz), as
 * soundfile.read of a path does: it decodes to libsndfile's samples, from a file and from memory
 * under that name (it was refused as "Format not recognised"); the same bytes named .wav, or
 * behind an AU header that libsndfile rejects, are still not audio. */
static void test_raw_by_extension(void) {
    static const struct {
        const char *name;
        int format, rate;
    } cases[] = {{"raw.au", SF_FORMAT_RAW | SF_FORMAT_ULAW, 8000},
                 {"raw.VOX", SF_FORMAT_RAW | SF_FORMAT_VOX_ADPCM, 8000},
                 {"raw.vox6", SF_FORMAT_RAW | SF_FORMAT_VOX_ADPCM, 6000},
                 {"raw.gsm", SF_FORMAT_RAW | SF_FORMAT_GSM610, 8000}};
    const size_t frames = 8000;
    float *x = tone(440, 8000, frames, 0.5);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *path = tmp_path(cases[c].name);
        CHECK(write_audio(path, cases[c].format, cases[c].rate, 1, x, frames));
        vox_audio a, m;
        vox_error err = {0};
        vox_status st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && a.source_rate == cases[c].rate && a.source_channels == 1,
                  "%s: %s", path, err.msg);
        size_t len = 0, n_ref = 0;
        char *bytes = test_read_file(path, &len);
        CHECK(bytes != NULL);
        vox_status mst = bytes ? vox_audio_load_memory(bytes, len, path, 0, &m, &err) : VOX_ERR_IO;
        CHECK_MSG(mst == VOX_OK, "%s from memory: %s", path, err.msg);
        float *ref = sndfile_reference(path, &n_ref); /* sf_open: a path, so the fallback */
        CHECK(ref != NULL);
        if (!st && ref)
            CHECK_MSG(n_ref == a.n_samples && memcmp(ref, a.samples, n_ref * sizeof(float)) == 0,
                      "%s: %zu samples differ from libsndfile's %zu", path, a.n_samples, n_ref);
        if (!st && !mst)
            CHECK_MSG(m.n_samples == a.n_samples &&
                          memcmp(m.samples, a.samples, a.n_samples * sizeof(float)) == 0,
                      "%s: memory and file differ", path);
        if (c == 0 && bytes) {
            const char *as_wav = tmp_path("raw_ulaw.wav");
            FILE *o = fopen(as_wav, "wb");
            CHECK(o && fwrite(bytes, 1, len, o) == len);
            if (o) fclose(o);
            expect_error(as_wav, 0, VOX_ERR_FORMAT, "not a supported audio file");
            /* an AU header that libsndfile recognises and rejects (encoding 999): the name is
             * not consulted, the file is refused as the reference refuses it */
            static const unsigned char au[24] = {'.', 's', 'n', 'd', 0, 0, 0, 24, 0xff, 0xff,
                                                 0xff, 0xff, 0, 0, 0x03, 0xe7, 0, 0, 0x1f, 0x40,
                                                 0, 0, 0, 1};
            const char *bad_au = tmp_path("bad_encoding.au");
            o = fopen(bad_au, "wb");
            CHECK(o && fwrite(au, 1, sizeof au, o) == sizeof au && fwrite(bytes, 1, len, o) == len);
            if (o) fclose(o);
            expect_error(bad_au, 0, VOX_ERR_FORMAT, "not a supported audio file");
        }
        free(ref);
        free(bytes);
        if (!st) vox_audio_free(&a);
        if (!mst) vox_audio_free(&m);
    }
    free(x);
}

/* A 10-hour WAV (sparse: no disk used) is refused after decoding just past the limit. */
static void test_long_file_stops_early(void) {
    const char *path = tmp_path("ten_hours.wav");
    const uint32_t rate = VOX_SAMPLE_RATE, data = 10u * 3600u * rate * 2u; /* 1.15 GB */
    unsigned char h[44];
    memcpy(h, "RIFF", 4);
    const uint32_t riff = 36 + data;
    const uint32_t fields[] = {16, 1 | (1u << 16), rate, rate * 2, 2 | (16u << 16)};
    for (int i = 0; i < 4; i++) h[4 + i] = (unsigned char)(riff >> (8 * i));
    memcpy(h + 8, "WAVEfmt ", 8);
    for (int f = 0; f < 5; f++)
        for (int i = 0; i < 4; i++) h[16 + 4 * f + i] = (unsigned char)(fields[f] >> (8 * i));
    memcpy(h + 36, "data", 4);
    for (int i = 0; i < 4; i++) h[40 + i] = (unsigned char)(data >> (8 * i));
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(h, 1, sizeof h, f) == sizeof h);
    fclose(f);
    CHECK(truncate(path, (off_t)sizeof h + data) == 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_error(path, 2.0, VOX_ERR_TOO_LONG, "limit");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double secs = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
    CHECK_MSG(secs < 1.0, "rejecting took %.2f s: the file was decoded past the limit", secs);
}

/* 16-bit PCM is read as libsndfile's shorts and scaled by 2^-15 in audio.c: every sample must be
 * the float sf_readf_float gives for it, in each container that takes that path (WAV, WAVEX,
 * W64, RF64, AIFF: big-endian, FLAC), over the whole int16 range, mono (read straight in) and
 * stereo (mixed down from the same floats). Blocks of 65536 / channels frames make the 100003
 * frames span several reads. */
static void test_pcm16_as_libsndfile_floats(void) {
    const int formats[] = {SF_FORMAT_WAV, SF_FORMAT_WAVEX, SF_FORMAT_W64,
                           SF_FORMAT_RF64, SF_FORMAT_AIFF, SF_FORMAT_FLAC};
    const char *names[] = {"wav", "wavex", "w64", "rf64", "aiff", "flac"};
    const size_t frames = 100003;
    short *v = malloc(frames * 2 * sizeof *v);
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < frames * 2; i++) {
        h ^= h >> 33, h *= 0xFF51AFD7ED558CCDull, h ^= h >> 29;
        v[i] = i < 4 ? (short[]){-32768, 32767, 0, -1}[i] : (short)(h >> 48);
    }
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
        for (int channels = 1; channels <= 2; channels++) {
            char name[32];
            snprintf(name, sizeof name, "pcm16_%d.%s", channels, names[f]);
            const char *path = tmp_path(name);
            SF_INFO info = {.samplerate = VOX_SAMPLE_RATE, .channels = channels,
                            .format = formats[f] | SF_FORMAT_PCM_16};
            SNDFILE *w = sf_open(path, SFM_WRITE, &info);
            CHECK_MSG(w != NULL, "%s: %s", name, sf_strerror(NULL));
            if (!w) continue;
            CHECK(sf_writef_short(w, v, (sf_count_t)frames) == (sf_count_t)frames);
            sf_close(w);
            memset(&info, 0, sizeof info);
            SNDFILE *r = sf_open(path, SFM_READ, &info);
            CHECK(r != NULL);
            if (!r) continue;
            float *ref = malloc(frames * (size_t)channels * sizeof *ref);
            CHECK(sf_readf_float(r, ref, (sf_count_t)frames) == (sf_count_t)frames);
            sf_close(r);
            vox_audio a;
            vox_error err = {0};
            vox_status st = vox_audio_load(path, 0, &a, &err);
            CHECK_MSG(st == VOX_OK && a.n_samples == frames, "%s: %s", name, err.msg);
            size_t bad = 0, first = 0;
            for (size_t i = 0; !st && i < frames; i++) {
                const float want = channels == 1
                                       ? ref[i]
                                       : (float)((double)(ref[2 * i] + ref[2 * i + 1]) / 2.0);
                if (a.samples[i] != want && bad++ == 0) first = i;
            }
            CHECK_MSG(bad == 0, "%s: %zu of %zu samples differ from sf_readf_float's (first at %zu)",
                      name, bad, frames, first);
            if (!st) vox_audio_free(&a);
            free(ref);
        }
    free(v);
}

/* vox_audio_load_reusing gives what vox_audio_load gives, bit for bit, whatever buffer it is
 * handed: none, too small (grown), its exact length, larger (kept as it is: the same pages), on
 * the three paths (16 kHz mono read straight in, stereo mixed, 44.1 kHz resampled); a file that
 * fails frees it (the ASan build would report the leak). */
static void test_reusing(void) {
    struct {
        const char *name;
        int rate, channels;
    } files[] = {{"reuse_mono.wav", 16000, 1}, {"reuse_stereo.wav", 16000, 2},
                 {"reuse_44k.wav", 44100, 1}};
    const size_t frames = 40000;
    float *x = hash_signal(frames * 2);
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        const char *path = tmp_path(files[f].name);
        CHECK(write_audio(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, files[f].rate, files[f].channels,
                          x, frames));
        vox_audio want;
        vox_error err = {0};
        CHECK_MSG(vox_audio_load(path, 0, &want, &err) == VOX_OK, "%s", err.msg);
        const size_t caps[] = {0, 1000, want.n_samples, want.n_samples + 12345};
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            float *buf = caps[c] ? malloc(caps[c] * sizeof *buf) : NULL;
            vox_audio got;
            CHECK_MSG(vox_audio_load_reusing(path, 0, buf, caps[c], NULL, NULL, &got, &err) == VOX_OK, "%s",
                      err.msg);
            CHECK_MSG(got.n_samples == want.n_samples && got.capacity >= got.n_samples &&
                          memcmp(got.samples, want.samples, want.n_samples * sizeof(float)) == 0,
                      "%s, buffer of %zu: not what vox_audio_load decodes", files[f].name, caps[c]);
            if (files[f].rate == VOX_SAMPLE_RATE && caps[c] > want.n_samples)
                CHECK_MSG(got.samples == buf && got.capacity == caps[c],
                          "%s: a large enough buffer was not used as it is", files[f].name);
            vox_audio_free(&got);
        }
        vox_audio_free(&want);
    }
    free(x);
    float *buf = malloc(4096 * sizeof *buf);
    vox_audio a;
    vox_error err = {0};
    CHECK(vox_audio_load_reusing(bad_path("missing.wav"), 0, buf, 4096, NULL, NULL, &a, &err) == VOX_ERR_IO);
    CHECK(a.samples == NULL);
}

/* MPEG audio behind junk or padding (zero bytes, text, zeros after an ID3v2 tag), which libsndfile
 * does not recognise from a descriptor: the same samples as the plain file, from a file and from
 * memory, without a warning (its size-based length would count the junk); random bytes of the
 * same size are still not audio. */
static void test_mpeg_after_junk(void) {
    char speech[512];
    snprintf(speech, sizeof speech, "%s/tiny/audio/speech.mp3", VOX_FIXTURES);
    size_t len = 0;
    char *mp3 = test_read_file(speech, &len);
    CHECK(mp3 != NULL);
    if (!mp3) return;
    vox_audio want;
    vox_error err = {0};
    CHECK_MSG(vox_audio_load(speech, 0, &want, &err) == VOX_OK, "%s", err.msg);
    static const unsigned char id3[10] = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 20}; /* 20-byte tag */
    struct {
        const char *name;
        size_t n;
        const unsigned char *head; /* NULL: n zero bytes */
    } cases[] = {{"zeros500.mp3", 500, NULL}, {"junk8.bin", 8, (const unsigned char *)"JUNKJUNK"},
                 {"id3pad.mp3", 330, id3}, {"zeros30k.mp3", 30000, NULL}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n = cases[c].n + len;
        unsigned char *bytes = calloc(n, 1);
        if (cases[c].head) memcpy(bytes, cases[c].head, cases[c].head == id3 ? 10 : cases[c].n);
        memcpy(bytes + cases[c].n, mp3, len);
        const char *path = tmp_path(cases[c].name);
        FILE *o = fopen(path, "wb");
        CHECK(o && fwrite(bytes, 1, n, o) == n);
        if (o) fclose(o);
        for (int mem = 0; mem < 2; mem++) {
            vox_audio a;
            vox_status st = mem ? vox_audio_load_memory(bytes, n, path, 0, &a, &err)
                                : vox_audio_load(path, 0, &a, &err);
            CHECK_MSG(st == VOX_OK && a.n_samples == want.n_samples && !a.warning[0] &&
                          memcmp(a.samples, want.samples, want.n_samples * sizeof(float)) == 0,
                      "%s%s: status %d (%s), %zu samples against %zu, warning '%s'", cases[c].name,
                      mem ? " from memory" : "", (int)st, err.msg, st ? 0 : a.n_samples,
                      want.n_samples, st ? "" : a.warning);
            if (st == VOX_OK) vox_audio_free(&a);
        }
        for (size_t i = 0; i < n; i++) bytes[i] = (unsigned char)(i * 2654435761u >> 13);
        vox_audio a;
        CHECK_MSG(vox_audio_load_memory(bytes, n, "noise", 0, &a, &err) == VOX_ERR_FORMAT,
                  "noise of %zu bytes was decoded", n);
        free(bytes);
    }
    vox_audio_free(&want);
    free(mp3);
}

static bool stop_after_200ms(void *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const struct timespec *t0 = start;
    return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000 >= 200;
}

/* A FIFO: its audio decodes as the file's does, also in formats libsndfile must seek (FLAC); a
 * FIFO whose writer never comes is a wait that the stop function ends (it hung in open before). */
static void test_fifo(void) {
    const char *fifo = tmp_path("audio.fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    static const char *const names[] = {"speech.flac", "short.wav"};
    for (size_t i = 0; i < 2; i++) {
        char file[512];
        snprintf(file, sizeof file, "%s/tiny/audio/%s", VOX_FIXTURES, names[i]);
        vox_audio want, got;
        vox_error err = {0};
        CHECK_MSG(vox_audio_load(file, 0, &want, &err) == VOX_OK, "%s", err.msg);
        pid_t writer = fork();
        if (writer == 0) { /* the writer: the file's bytes into the FIFO, after a pause */
            usleep(100000);
            FILE *in = fopen(file, "rb"), *out = fopen(fifo, "wb");
            char b[4096];
            size_t n;
            while (in && out && (n = fread(b, 1, sizeof b, in)) > 0) fwrite(b, 1, n, out);
            if (out) fclose(out);
            _exit(0);
        }
        vox_status st = vox_audio_load(fifo, 0, &got, &err);
        waitpid(writer, NULL, 0);
        CHECK_MSG(st == VOX_OK && got.n_samples == want.n_samples &&
                      memcmp(got.samples, want.samples, want.n_samples * sizeof(float)) == 0,
                  "%s through a FIFO: status %d (%s), %zu samples against %zu", names[i], (int)st,
                  err.msg, got.n_samples, want.n_samples);
        if (st == VOX_OK) vox_audio_free(&got);
        vox_audio_free(&want);
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    vox_audio a;
    vox_error err = {0};
    vox_status st = vox_audio_load_reusing(fifo, 0, NULL, 0, stop_after_200ms, &t0, &a, &err);
    CHECK_MSG(st == VOX_ERR_INTERRUPTED && strstr(err.msg, fifo) && a.samples == NULL,
              "a FIFO without a writer: status %d (%s)", (int)st, err.msg);
}

/* Ogg Vorbis and Opus cut short: libsndfile decodes what is there but cannot tell (no length in a
 * header); the file's end says it (no end-of-stream page, or a page cut off), in a warning.
 * Whole files, and a whole file with bytes after its last page, get none. */
static void test_ogg_cut_short(void) {
    static const struct {
        const char *name;
        int format;
    } codecs[] = {{"cut.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS}, {"cut.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS}};
    const size_t frames = 3 * VOX_SAMPLE_RATE;
    float *x = tone(440, VOX_SAMPLE_RATE, frames, 0.5);
    for (size_t i = 0; i < frames; i++) x[i] += 0.25f * hash_sample(i, 5, 1000.0f);
    vox_audio a;
    vox_error err;
    for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
        const char *path = tmp_path(codecs[c].name);
        CHECK(write_audio(path, codecs[c].format, VOX_SAMPLE_RATE, 1, x, frames));
        vox_status st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && a.warning[0] == 0, "%s whole: '%s' %s", codecs[c].name,
                  st ? "" : a.warning, err.msg);
        const size_t whole = st ? 0 : a.n_samples;
        if (!st) vox_audio_free(&a);
        /* the file's bytes: where its last page (the end-of-stream one) starts */
        FILE *f = fopen(path, "rb");
        unsigned char *bytes = malloc(1 << 20);
        size_t size = f && bytes ? fread(bytes, 1, 1 << 20, f) : 0;
        if (f) fclose(f);
        size_t last = 0;
        for (size_t i = 0; i + 4 <= size; i++)
            if (memcmp(bytes + i, "OggS", 4) == 0) last = i;
        CHECK_MSG(size > 0 && last > 0 && (bytes[last + 5] & 0x04), "%s: no end-of-stream page found",
                  codecs[c].name);
        /* bytes after the last page: still whole */
        f = fopen(path, "ab");
        CHECK(f && fwrite("\0\0\0\0junk", 1, 8, f) == 8);
        if (f) fclose(f);
        st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && a.warning[0] == 0, "%s + junk: '%s' %s", codecs[c].name,
                  st ? "" : a.warning, err.msg);
        if (!st) vox_audio_free(&a);
        /* cut between pages: the end-of-stream page is missing */
        CHECK(truncate(path, (off_t)last) == 0);
        st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && a.n_samples > 0 && a.n_samples < whole &&
                      strstr(a.warning, "truncated: the Ogg stream ends without its end-of-stream page; decoded "),
                  "%s cut between pages: status %d (%s), warning '%s'", codecs[c].name, (int)st,
                  err.msg, st ? "" : a.warning);
        if (!st) vox_audio_free(&a);
        /* cut inside the page before: what the pages before it hold is decoded */
        CHECK(truncate(path, (off_t)last - 10) == 0);
        st = vox_audio_load(path, 0, &a, &err);
        CHECK_MSG(st == VOX_OK && strstr(a.warning, "truncated: the file ends part way through an Ogg page"),
                  "%s cut inside a page: status %d (%s), warning '%s'", codecs[c].name, (int)st,
                  err.msg, st ? "" : a.warning);
        if (!st) vox_audio_free(&a);
        free(bytes);
    }
    free(x);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/vox_test_audio_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "cannot create a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    test_wav_encodings();
    test_integer_scaling();
    test_pcm16_as_libsndfile_floats();
    test_compressed();
    test_channel_mix();
    test_resample_vs_python();
    test_resample_files();
    test_bad_files();
    test_long_file_stops_early();
    test_mpeg();
    test_raw_by_extension();
    test_reusing();
    test_fifo();
    test_mpeg_after_junk();
    test_ogg_cut_short();
    cleanup();
    return test_finish("test_audio");
}
