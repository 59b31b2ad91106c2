/* Audio input: libsndfile decoding, mono mix, libsoxr resampling to 16 kHz.
 *
 * The reference is mistral-common's Audio.from_file + Audio.resample:
 *   soundfile read(dtype="float32")   libsndfile, integer PCM normalised by libsndfile itself
 *                                     (PCM16 / 2^15, PCM24 / 2^23, PCM32 / 2^31, u8 (x-128) / 2^7)
 *   audio_array.mean(axis=1)          float32 sum over the channels in numpy's pairwise order,
 *                                     divided in double, rounded to float32 (numpy 2 promotes
 *                                     float32 / intp to float64); numpy_sum() is bit-exact
 *   soxr.resample(x, sr, 16000, quality="HQ")
 * python-soxr's resample() of a mono float32 array (csoxr_split_ch in its soxr_ext.cpp) creates
 * one stream resampler with io spec (float32, float32), soxr_quality_spec(SOXR_HQ, 0) and no
 * runtime spec, feeds the input in pieces of max(1000, 48000 * in_rate / out_rate) samples,
 * flushes once, and keeps at most (size_t)(n_in * out_rate / in_rate + 1) output samples.
 * vox_resampler below does the same, piece for piece, so that the output length and every sample
 * match it (checked against python soxr on real audio: see tests/unit/test_audio.c).
 *
 * transformers' VoxtralProcessor.apply_transcription_request takes a detour when given a file
 * path (audio_utils.load_audio_as): it resamples all channels first, then averages them, then
 * re-encodes the 16 kHz audio in the file's own format (PCM16 for a WAV, lossy again for MP3 or
 * Ogg) before mistral-common decodes it once more. That re-encoding is lossy; we follow
 * mistral-common (and scripts/make_reference.py), which decodes once, mixes, then resamples. For
 * a 16 kHz mono PCM16 file both paths give the same samples.
 *
 * MPEG audio is decoded by libmpg123 directly, the rest by libsndfile (mpeg.c says why). The file
 * is read in blocks until the decoder gives no more: the frame count in the header is not
 * trusted (unknown or approximate for MP3 and Ogg, wrong in truncated files). Decoding, mixing and
 * resampling are streamed block by block, so memory holds only the 16 kHz output, and a file over
 * the length limit is rejected as soon as the limit is passed, without decoding the rest. */
#include "audio/audio.h"
#include "audio/source.h"
#include "common/read_all.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A growable float array. */
typedef struct {
    float *data;
    size_t n, cap;
} float_vec;

static int vec_reserve(float_vec *v, size_t extra) {
    if (extra > SIZE_MAX / sizeof(float) - v->n) return 0;
    size_t need = v->n + extra;
    if (need <= v->cap) return 1;
    size_t cap = v->cap ? v->cap : 65536;
    while (cap < need) cap = cap > SIZE_MAX / 2 / sizeof(float) ? need : cap * 2;
    float *p = realloc(v->data, cap * sizeof(float));
    if (!p) return 0;
    v->data = p;
    v->cap = cap;
    return 1;
}

/* ---- resampling, as python-soxr's soxr.resample() does it --------------------------------- */

typedef struct {
    soxr_t soxr;
    double in_rate, out_rate;
    size_t piece;   /* input samples per soxr_process call */
    float *pending; /* input not yet given to soxr (fewer than `piece` samples) */
    size_t n_pending;
    size_t n_in;    /* input samples given so far */
    float_vec out;
} vox_resampler;

static vox_status resampler_init(vox_resampler *r, double in_rate, double out_rate,
                                 vox_error *err) {
    memset(r, 0, sizeof *r);
    r->in_rate = in_rate;
    r->out_rate = out_rate;
    double piece = 48000.0 * in_rate / out_rate;
    r->piece = (size_t)(piece > 1000.0 ? piece : 1000.0);
    r->pending = malloc(r->piece * sizeof(float));
    if (!r->pending) return vox_fail(err, VOX_ERR_NOMEM, "resampler: out of memory");
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    r->soxr = soxr_create(in_rate, out_rate, 1, &e, &io, &q, NULL);
    if (e || !r->soxr) {
        free(r->pending);
        r->pending = NULL;
        return vox_fail(err, VOX_ERR_INTERNAL, "resampler %g Hz -> %g Hz: %s", in_rate, out_rate,
                        e ? e : "soxr_create failed");
    }
    return VOX_OK;
}

static void resampler_free(vox_resampler *r) {
    if (r->soxr) soxr_delete(r->soxr);
    free(r->pending);
    free(r->out.data);
    memset(r, 0, sizeof *r);
}

/* Gives n samples (n <= piece) to soxr, or flushes when in is NULL. */
static vox_status resampler_process(vox_resampler *r, const float *in, size_t n, size_t room,
                                    vox_error *err) {
    size_t odone = 0;
    soxr_error_t e = soxr_process(r->soxr, in, n, NULL, r->out.data + r->out.n, room, &odone);
    if (e) return vox_fail(err, VOX_ERR_INTERNAL, "resampler: %s", e);
    r->out.n += odone;
    return VOX_OK;
}

/* Output room for one piece: python-soxr gives soxr all of the rest of its buffer; what one
 * piece can produce is bounded by the piece's share of the output plus soxr's buffered delay. */
static size_t piece_room(const vox_resampler *r, size_t n) {
    return (size_t)((double)n * r->out_rate / r->in_rate + soxr_delay(r->soxr)) + 1024;
}

static vox_status resampler_push(vox_resampler *r, const float *in, size_t n, vox_error *err) {
    while (n > 0) {
        size_t take = r->piece - r->n_pending;
        if (take > n) take = n;
        memcpy(r->pending + r->n_pending, in, take * sizeof(float));
        r->n_pending += take;
        in += take;
        n -= take;
        if (r->n_pending == r->piece) {
            size_t room = piece_room(r, r->piece);
            if (!vec_reserve(&r->out, room))
                return vox_fail(err, VOX_ERR_NOMEM, "resampler: out of memory");
            vox_status st = resampler_process(r, r->pending, r->piece, room, err);
            if (st) return st;
            r->n_in += r->piece;
            r->n_pending = 0;
        }
    }
    return VOX_OK;
}

/* Processes the last partial piece, flushes, and trims to python-soxr's output length. */
static vox_status resampler_finish(vox_resampler *r, vox_error *err) {
    if (r->n_pending > 0) {
        size_t room = piece_room(r, r->n_pending);
        if (!vec_reserve(&r->out, room))
            return vox_fail(err, VOX_ERR_NOMEM, "resampler: out of memory");
        vox_status st = resampler_process(r, r->pending, r->n_pending, room, err);
        if (st) return st;
        r->n_in += r->n_pending;
        r->n_pending = 0;
    }
    /* python-soxr's whole output buffer: the same expression, in the same double arithmetic */
    size_t olen = (size_t)((double)r->n_in * r->out_rate / r->in_rate + 1);
    if (r->out.n < olen) {
        size_t room = olen - r->out.n;
        if (!vec_reserve(&r->out, room))
            return vox_fail(err, VOX_ERR_NOMEM, "resampler: out of memory");
        vox_status st = resampler_process(r, NULL, 0, room, err);
        if (st) return st;
    }
    if (r->out.n > olen) r->out.n = olen;
    return VOX_OK;
}

vox_status vox_audio_resample(const float *in, size_t n_in, double in_rate, double out_rate,
                              float **out, size_t *n_out, vox_error *err) {
    *out = NULL;
    *n_out = 0;
    if (!(in_rate > 0 && out_rate > 0 && isfinite(in_rate) && isfinite(out_rate)))
        return vox_fail(err, VOX_ERR_INVALID_ARG, "resample: bad sample rates %g -> %g", in_rate,
                        out_rate);
    vox_resampler r;
    vox_status st = resampler_init(&r, in_rate, out_rate, err);
    if (st) return st;
    st = resampler_push(&r, in, n_in, err);
    if (!st) st = resampler_finish(&r, err);
    if (!st) {
        /* a valid (if empty) allocation, so that callers can free it like any other */
        if (!r.out.data && !vec_reserve(&r.out, 1))
            st = vox_fail(err, VOX_ERR_NOMEM, "resample: out of memory");
    }
    if (!st) {
        *out = r.out.data;
        *n_out = r.out.n;
        r.out.data = NULL;
    }
    resampler_free(&r);
    return st;
}

/* ---- decoding -------------------------------------------------------------------------------- */

/* numpy's float32 sum of n values (pairwise_sum in its umath loops): sequential below 8 values,
 * 8 interleaved partial sums up to 128, halves (cut at a multiple of 8) above. Mono and stereo
 * need only the first case; the rest keeps files with many channels bit-exact too. */
static float numpy_sum(const float *a, size_t n) {
    if (n < 8) {
        float s = 0.0f;
        for (size_t i = 0; i < n; i++) s += a[i];
        return s;
    }
    if (n <= 128) {
        float r[8];
        size_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - n % 8; i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        float s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) s += a[i];
        return s;
    }
    size_t half = n / 2;
    half -= half % 8;
    return numpy_sum(a, half) + numpy_sum(a + half, n - half);
}

/* Whether all n samples are finite. A branch-free scan over the exponent bits (all ones: NaN or
 * infinity), which the compiler vectorises: an early-exit isfinite() loop took 0.5 ms of the
 * 0.8 ms that decoding a 30 s WAV cost (perf, 2026-12-02). */
static bool all_finite(const float *x, size_t n) {
    unsigned bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad == 0;
}

/* x: n values, `channels` interleaved a frame, the first of them frame first_frame. */
static vox_status check_finite(const char *path, const float *x, size_t n, size_t first_frame,
                               int channels, vox_error *err) {
    if (all_finite(x, n)) return VOX_OK;
    for (size_t i = 0; i < n; i++) /* the first one, for the message */
        if (!isfinite(x[i]))
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: sample at frame %zu is %s: the file is corrupt or holds "
                            "non-audio data", path, first_frame + i / (size_t)channels,
                            /* a float64 file's finite values past 3.4e38 read as infinite */
                            isnan(x[i]) ? "NaN" : "infinite (or past the float range)");
    return VOX_OK;
}

static vox_status too_long(const char *path, double max_seconds, vox_error *err) {
    char limit[64];
    if (max_seconds >= 60 && fmod(max_seconds, 60) == 0)
        snprintf(limit, sizeof limit, "%g min", max_seconds / 60);
    else
        snprintf(limit, sizeof limit, "%g s", max_seconds);
    return vox_fail(err, VOX_ERR_TOO_LONG,
                    "%s: audio is longer than %s, the limit for one request: split the file into "
                    "parts of at most %s and transcribe them separately", path, limit, limit);
}

/* Sample rates above this are damaged headers, not audio (recordings go up to 768 kHz). The
 * resampler's buffers grow with the rate: 2^31 Hz would ask for 26 GB. */
#define MAX_SOURCE_RATE 1000000

/* A missing limit (0) is the default; anything else must be a positive, finite number. */
static vox_status check_limit(const char *name, double *max_seconds, vox_error *err) {
    if (*max_seconds == 0) *max_seconds = VOX_MAX_AUDIO_SECONDS;
    if (!(*max_seconds > 0) || !isfinite(*max_seconds))
        return vox_fail(err, VOX_ERR_INVALID_ARG, "%s: bad length limit %g s", name, *max_seconds);
    return VOX_OK;
}

vox_status vox_audio_check_samples(const char *name, const float *x, size_t n, double max_seconds,
                                   vox_error *err) {
    vox_status st = check_limit(name, &max_seconds, err);
    if (st) return st;
    if ((double)n > max_seconds * VOX_SAMPLE_RATE) return too_long(name, max_seconds, err);
    return check_finite(name, x, n, 0, 1, err);
}

/* ---- libsndfile: every format but MPEG audio ------------------------------------------------- */

/* libsndfile virtual I/O over a buffer in memory (read only). */
typedef struct {
    const unsigned char *data;
    sf_count_t size, pos;
} mem_file;

static sf_count_t mem_get_filelen(void *user) { return ((mem_file *)user)->size; }

static sf_count_t mem_seek(sf_count_t offset, int whence, void *user) {
    mem_file *m = user;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size, pos;
    if ((whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) ||
        __builtin_add_overflow(base, offset, &pos) || pos < 0)
        return -1;
    m->pos = pos;
    return pos;
}

static sf_count_t mem_read(void *ptr, sf_count_t count, void *user) {
    mem_file *m = user;
    if (count <= 0 || m->pos >= m->size) return 0;
    sf_count_t n = m->size - m->pos < count ? m->size - m->pos : count;
    memcpy(ptr, m->data + m->pos, (size_t)n);
    m->pos += n;
    return n;
}

static sf_count_t mem_tell(void *user) { return ((mem_file *)user)->pos; }

typedef struct {
    SNDFILE *snd;
    mem_file mem;
    /* 16-bit PCM (the common WAV and FLAC): frames are read as libsndfile's shorts and scaled
     * here by 2^-15, the same floats sf_readf_float gives (v / 0x8000, exact in float), at a
     * quarter of its cost (its own conversion loop: 0.65 against 0.15 ms a 30 s file) */
    bool pcm16;
    short *shorts;
    size_t shorts_cap;
} sndfile_impl;

/* The formats whose 16-bit samples libsndfile reads as shorts and floats from the same integers
 * (pcm.c; flac.c scales by 2^-(bits-1) = 2^-15): test_audio checks each against sf_readf_float. */
static bool pcm16_fast(const SF_INFO *info) {
    const int major = info->format & SF_FORMAT_TYPEMASK;
    return (info->format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16 &&
           (major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX || major == SF_FORMAT_W64 ||
            major == SF_FORMAT_RF64 || major == SF_FORMAT_AIFF || major == SF_FORMAT_FLAC);
}

/* Up to n frames of 16-bit PCM as floats (sndfile_impl.pcm16); sf_readf_float where the scratch
 * buffer cannot grow. */
static sf_count_t read_pcm16(sndfile_impl *f, int channels, float *buf, size_t n) {
    const size_t values = n * (size_t)channels;
    if (values > f->shorts_cap) {
        short *grown = realloc(f->shorts, values * sizeof *grown);
        if (!grown) return sf_readf_float(f->snd, buf, (sf_count_t)n);
        f->shorts = grown;
        f->shorts_cap = values;
    }
    const sf_count_t got = sf_readf_short(f->snd, f->shorts, (sf_count_t)n);
    const size_t done = got > 0 ? (size_t)got * (size_t)channels : 0;
    for (size_t i = 0; i < done; i++) buf[i] = (float)f->shorts[i] * (1.0f / 32768.0f);
    return got;
}

static size_t sndfile_read(vox_audio_source *s, float *buf, size_t n) {
    sndfile_impl *f = s->impl;
    if (s->error[0]) return 0;
    sf_count_t got = f->pcm16 ? read_pcm16(f, s->channels, buf, n) : sf_readf_float(f->snd, buf, (sf_count_t)n);
    /* libsndfile clears the error at the start of each read: look after every one (the frames
     * a failing read still gave are kept: they decoded) */
    if (sf_error(f->snd) != SF_ERR_NO_ERROR) {
        int len = snprintf(s->error, sizeof s->error, "libsndfile: %s", sf_strerror(f->snd));
        while (len > 0 && (size_t)len < sizeof s->error &&
               (s->error[len - 1] == '.' || s->error[len - 1] == ' '))
            s->error[--len] = '\0';
    }
    return got > 0 ? (size_t)got : 0;
}

static void sndfile_close(vox_audio_source *s) {
    sndfile_impl *f = s->impl;
    if (!f) return;
    if (f->snd) sf_close(f->snd);
    free(f->shorts);
    free(f);
    s->impl = NULL;
}

/* The data sizes that writers to a pipe put in a WAV header they cannot go back and fix: no
 * length at all, not a promise. ffmpeg writes 0xFFFFFFFF (`ffmpeg -i talk.mp4 -f wav -`), sox
 * 0x7FFFF000, others INT32_MAX. */
static bool unknown_data_size(long long claimed) {
    return claimed == 0xFFFFFFFFLL || claimed == 0x7FFFF000LL || claimed == 0x7FFFFFFFLL;
}

/* What the header announces. A file cut short: libsndfile counts only the frames present, and
 * says in its log what the header claimed of the audio data, in bytes: "data : 32000 (should be
 * 8000)" (WAV), " SSND : ..." (AIFF, AIFF-C), "Data Size : ..." (AU). W64's data line never
 * says, so there the whole file's ("riff : N (should be M)") stands in; elsewhere the
 * container's size is not used, since writers get it wrong in files whose audio is whole. A
 * streamed WAV's placeholder size announces nothing: the frames present are all there is. */
static double sndfile_expected_frames(SNDFILE *snd, const SF_INFO *info) {
    double frames = info->frames > 0 && info->frames < SF_COUNT_MAX ? (double)info->frames : 0;
    char log[4096] = "";
    sf_command(snd, SFC_GET_LOG_INFO, log, sizeof log);
    const bool w64 = (info->format & SF_FORMAT_TYPEMASK) == SF_FORMAT_W64;
    char *save = NULL;
    for (char *line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char label[32];
        long long claimed = 0, present = 0;
        if (sscanf(line, " %31[^:]: %lld (should be %lld)", label, &claimed, &present) != 3)
            continue;
        for (size_t n = strlen(label); n > 0 && label[n - 1] == ' ';) label[--n] = 0;
        const bool data = strcmp(label, "data") == 0 || strcmp(label, "SSND") == 0 ||
                          strcmp(label, "Data Size") == 0 || (w64 && strcmp(label, "riff") == 0);
        if (!data) continue;
        if (claimed > present && present > 0 && !unknown_data_size(claimed))
            frames *= (double)claimed / (double)present;
        break;
    }
    return frames;
}

static vox_status mpeg_open(const vox_audio_input *in, const char *path, vox_audio_source *src,
                            vox_error *err) {
    char why[256] = "";
    vox_status st = vox_mpeg_open(in, src, why, sizeof why);
    if (st == VOX_ERR_NOMEM) return vox_fail(err, st, "%s: out of memory", path);
    if (st) return vox_fail(err, st, "%s: not a supported audio file (%s)", path, why);
    return VOX_OK;
}

/* Headerless audio that libsndfile opens by the file name's extension when it does not recognise
 * the contents (sndfile.c, format_from_extension): u-law (.au, .snd), Dialogic VOX ADPCM (.vox,
 * .vox8; .vox6 at 6 kHz) and GSM 6.10 (.gsm), mono, 8 kHz. soundfile.read (the reference) opens
 * a path, so it gets this; sf_open_fd and virtual I/O have no name, so it is redone here. Sets
 * the format, rate and channels in *info; false for other names. */
static bool raw_by_extension(const char *name, SF_INFO *info) {
    static const struct {
        const char *ext;
        int format, rate;
    } raw[] = {{"au", SF_FORMAT_RAW | SF_FORMAT_ULAW, 8000},
               {"snd", SF_FORMAT_RAW | SF_FORMAT_ULAW, 8000},
               {"vox", SF_FORMAT_RAW | SF_FORMAT_VOX_ADPCM, 8000},
               {"vox8", SF_FORMAT_RAW | SF_FORMAT_VOX_ADPCM, 8000},
               {"vox6", SF_FORMAT_RAW | SF_FORMAT_VOX_ADPCM, 6000},
               {"gsm", SF_FORMAT_RAW | SF_FORMAT_GSM610, 8000}};
    const char *base = strrchr(name, '/'); /* libsndfile looks at the name, not the folders */
    const char *dot = strrchr(base ? base + 1 : name, '.');
    if (!dot) return false;
    char ext[8];
    size_t n = 0;
    for (const char *c = dot + 1; *c; c++) {
        if (n + 1 == sizeof ext) return false;
        ext[n++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    }
    ext[n] = '\0';
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++) {
        if (strcmp(ext, raw[i].ext) != 0) continue;
        memset(info, 0, sizeof *info);
        info->format = raw[i].format;
        info->samplerate = raw[i].rate;
        info->channels = 1;
        return true;
    }
    return false;
}

/* Why libsndfile would not open a file, for the message. Its check of the header's values
 * (sample rate and channel count at least 1, no negative length: validate_sfinfo) fails as
 * "Internal error : SF_INFO struct incomplete.", which reads as a fault of this program; it is
 * said as what it is. */
static void sndfile_open_reason(char *why, size_t n) {
    const char *e = sf_strerror(NULL);
    if (strstr(e, "SF_INFO struct incomplete"))
        snprintf(why, n, "libsndfile: invalid header: a sample rate, channel count or length out "
                 "of range");
    else
        snprintf(why, n, "libsndfile: %s", e);
}

/* libsndfile on the input: a descriptor of its own, or virtual I/O over the bytes in memory. */
static SNDFILE *sndfile_open_input(const vox_audio_input *in, sndfile_impl *f, SF_INFO *info,
                                   int *dup_errno) {
    *dup_errno = 0;
    if (in->fd >= 0) {
        /* on a copy that libsndfile owns (and closes, also when the open fails): when it does
         * not recognise the file, libsndfile 1.2 closes the descriptor it was given even with
         * close_desc false, so the caller's own close after that could close a file that another
         * reader thread had just opened under the same number */
        const int own = dup(in->fd);
        if (own < 0) {
            *dup_errno = errno;
            return NULL;
        }
        return sf_open_fd(own, SFM_READ, info, SF_TRUE);
    }
    static SF_VIRTUAL_IO io = {mem_get_filelen, mem_seek, mem_read, NULL, mem_tell};
    f->mem = (mem_file){in->data, (sf_count_t)in->size, 0};
    return sf_open_virtual(&io, SFM_READ, info, &f->mem);
}

/* Opens the input with libsndfile. MPEG audio it recognises where vox_mpeg_sniff did not (after
 * junk, or by a .mp3 name) is handed to libmpg123 before a frame is decoded; only damage within
 * the first frames of such a file could still make libsndfile's libmpg123 print. */
static vox_status sndfile_open(const vox_audio_input *in, const char *path, vox_audio_source *src,
                               vox_error *err) {
    memset(src, 0, sizeof *src);
    sndfile_impl *f = calloc(1, sizeof *f);
    if (!f) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    SF_INFO info;
    memset(&info, 0, sizeof info);
    int dup_errno = 0;
    f->snd = sndfile_open_input(in, f, &info, &dup_errno);
    char why[256] = "";
    if (!f->snd && !dup_errno) {
        sndfile_open_reason(why, sizeof why);
        char ogg[sizeof why];
        vox_ogg_describe_unsupported(in, ogg, sizeof ogg);
        if (ogg[0]) memcpy(why, ogg, sizeof why);
        if (sf_error(NULL) == SF_ERR_UNRECOGNISED_FORMAT && raw_by_extension(path, &info)) {
            /* A file: libsndfile's own open of the path decides as the reference's does (the
             * name only when no format is recognised by content: an AU header it rejects is
             * not read as headerless u-law). Bytes in memory have no path: taken as that raw
             * format. */
            if (in->fd >= 0) {
                memset(&info, 0, sizeof info);
                f->snd = sf_open(path, SFM_READ, &info);
                /* u-law would be read on from where libsndfile's look at the header stopped
                 * (12 bytes in); soundfile.read seeks a seekable file to frame 0 first */
                if (f->snd && info.seekable && sf_seek(f->snd, 0, SEEK_SET) != 0) {
                    sf_close(f->snd);
                    f->snd = NULL;
                }
            } else {
                f->snd = sndfile_open_input(in, f, &info, &dup_errno);
            }
        }
    }
    if (dup_errno) {
        free(f);
        return vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", path, strerror(dup_errno));
    }
    src->impl = f;
    src->read = sndfile_read;
    src->close = sndfile_close;
    if (!f->snd) { /* the first open's reason: what a headerless fallback made of it is moot */
        sndfile_close(src);
        return vox_fail(err, VOX_ERR_FORMAT, "%s: not a supported audio file (%s)",
                        path, why);
    }
#ifdef SF_FORMAT_MPEG
    if ((info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_MPEG) {
        sndfile_close(src);
        return mpeg_open(in, path, src, err);
    }
#endif
    const bool ogg = (info.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_OGG;
    src->rate = info.samplerate;
    src->channels = info.channels;
    src->expected_frames = sndfile_expected_frames(f->snd, &info);
    if (ogg) vox_ogg_check_end(in, src->cut_short, sizeof src->cut_short);
    f->pcm16 = pcm16_fast(&info);
    src->finite = f->pcm16; /* shorts x 2^-15; sf_readf_float's fallback also scales integers */
    return VOX_OK;
}

/* The decoder for the input: libmpg123 for MPEG audio, libsndfile for the rest; MPEG audio
 * behind junk or padding, which neither the sniff nor libsndfile (from a descriptor) sees, is
 * looked for in what libsndfile does not recognise. */
static vox_status source_open(const vox_audio_input *in, const char *path, vox_audio_source *src,
                              vox_error *err) {
    if (vox_mpeg_sniff(in)) return mpeg_open(in, path, src, err);
    vox_status st = sndfile_open(in, path, src, err);
    if (st == VOX_ERR_FORMAT && !src->impl && vox_mpeg_find(in)) {
        vox_error mpeg_err = {0};
        if (mpeg_open(in, path, src, &mpeg_err) == VOX_OK) {
            /* libmpg123 estimates the length from the file's size, junk included: unknown */
            src->expected_frames = 0;
            return VOX_OK;
        }
    }
    return st;
}

/* ---- decoding -------------------------------------------------------------------------------- */

/* The problem that did not stop decoding, if any: a decoder error part way (what came before it
 * is kept), damage the decoder went past, or fewer frames than the header announced. */
static void note_warning(const vox_audio_source *src, size_t total, vox_audio *out) {
    const double decoded_s = (double)total / src->rate, expected_s = src->expected_frames / src->rate;
    char of[96] = "";
    if (expected_s > decoded_s)
        snprintf(of, sizeof of, " of the %.2f s its header announces", expected_s);
    if (src->error[0]) {
        if (of[0])
            snprintf(out->warning, sizeof out->warning, "truncated or damaged: decoded %.2f s%s (%s)",
                     decoded_s, of, src->error);
        else
            snprintf(out->warning, sizeof out->warning, "truncated or damaged: decoding stopped "
                     "after %.2f s (%s)", decoded_s, src->error);
    } else if (src->damage[0]) {
        snprintf(out->warning, sizeof out->warning, "damaged: %s; decoded %.2f s%s", src->damage,
                 decoded_s, of);
    } else if (src->cut_short[0]) {
        snprintf(out->warning, sizeof out->warning, "truncated: %s; decoded %.2f s%s",
                 src->cut_short, decoded_s, of);
    } else if (expected_s - decoded_s > 0.1 && decoded_s < 0.99 * expected_s) {
        /* the frame count of an MP3 or Ogg is an estimate: a shortfall under 1% (and 0.1 s)
         * is no truncation */
        snprintf(out->warning, sizeof out->warning, "truncated: decoded %.2f s%s", decoded_s, of);
    }
}

/* Reads an opened source to its end, mixing and resampling block by block; shared by the file
 * and the memory loaders. The output goes into *reuse (empty, or a buffer to reuse) when the
 * decoding takes it (then *reuse is left empty); what is not taken stays the caller's. */
static vox_status decode_source(vox_audio_source *src, const char *path, double max_seconds,
                                float_vec *reuse, vox_audio *out, vox_error *err) {
    if (src->rate <= 0 || src->rate > MAX_SOURCE_RATE || src->channels <= 0)
        return vox_fail(err, VOX_ERR_FORMAT, "%s: invalid header (%d Hz, %d channel%s)", path,
                        src->rate, src->channels, src->channels == 1 ? "" : "s");
    const int channels = src->channels;
    const double rate = src->rate;
    const double max_frames = floor(max_seconds * rate);

    /* Blocks of about 64k samples whatever the channel count. Mono at 16 kHz (the common case)
     * is read straight into the output, sized from the header when it says (up to 2^22
     * samples, 262 s: a header may lie): one pass over the samples. The rest is read into buf,
     * mixed down into mono when there are several channels, then resampled or appended. */
    const int resample = src->rate != VOX_SAMPLE_RATE;
    const int direct_read = channels == 1 && !resample;
    size_t block = 65536 / (size_t)channels;
    if (block < 256) block = 256;
    float *buf = direct_read ? NULL : malloc(block * (size_t)channels * sizeof(float));
    float *mono = channels > 1 ? malloc(block * sizeof(float)) : NULL;
    vox_resampler rs;
    memset(&rs, 0, sizeof rs);
    float_vec direct = {0}; /* the output (the resampler's own when resampling) */
    if (!resample) {
        direct = *reuse;
        *reuse = (float_vec){0};
    }
    vox_status st = VOX_OK;
    if ((!direct_read && !buf) || (channels > 1 && !mono))
        st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    if (!st && resample) {
        st = resampler_init(&rs, rate, VOX_SAMPLE_RATE, err);
        if (st) {
            vox_error_prefix(err, "%s", path);
        } else {
            rs.out = *reuse;
            *reuse = (float_vec){0};
        }
    }
    if (!st && direct_read && src->expected_frames > 0) {
        double want = src->expected_frames < max_frames ? src->expected_frames : max_frames;
        if (want > 4194304.0) want = 4194304.0;
        /* + 1: room for the read that finds the end, so a file as long as its header says is
         * not grown (to twice its size) just to learn that nothing follows */
        if (!vec_reserve(&direct, (size_t)want + 1))
            st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    }

    size_t total = 0;
    while (!st) {
        float *in = buf;
        size_t want = block;
        if (direct_read) {
            if (direct.cap == direct.n && !vec_reserve(&direct, block)) {
                st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            in = direct.data + direct.n;
            want = direct.cap - direct.n < block ? direct.cap - direct.n : block;
        }
        size_t n = src->read(src, in, want);
        if (n == 0) break;
        if ((double)(total + n) > max_frames) {
            st = too_long(path, max_seconds, err);
            break;
        }
        const float *x = in; /* the block, mono */
        if (channels > 1) {
            /* the samples as read first, so that a NaN or infinity is reported as the file's */
            if (!src->finite) st = check_finite(path, buf, n * (size_t)channels, total, channels, err);
            if (st) break;
            if (channels == 2) {
                /* the same floats as below, in a loop the compiler vectorises: numpy_sum of two
                 * is (0 + a) + b, and halving it in double then rounding to float is one
                 * rounding of the same exact value as the float product by 0.5 */
                for (size_t i = 0; i < n; i++) mono[i] = ((0.0f + buf[2 * i]) + buf[2 * i + 1]) * 0.5f;
            } else {
                for (size_t i = 0; i < n; i++)
                    mono[i] = (float)((double)numpy_sum(buf + i * (size_t)channels,
                                                        (size_t)channels) / (double)channels);
            }
            x = mono;
            if (!src->finite && !all_finite(x, n)) { /* finite samples whose float32 sum overflows */
                st = vox_fail(err, VOX_ERR_FORMAT, "%s: mixing the channels overflowed: sample "
                              "values near the float limit are not audio", path);
                break;
            }
        } else if (!src->finite) { /* mono: the samples as read (a mix was checked above) */
            st = check_finite(path, x, n, total, 1, err);
            if (st) break;
        }
        if (direct_read) {
            direct.n += n;
        } else if (resample) {
            st = resampler_push(&rs, x, n, err);
            if (st) vox_error_prefix(err, "%s", path);
        } else if (!vec_reserve(&direct, n)) {
            st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
        } else {
            memcpy(direct.data + direct.n, x, n * sizeof(float));
            direct.n += n;
        }
        total += n;
    }
    /* A file that ends early (a WAV whose data chunk is shorter than its header says, a FLAC
     * or Ogg whose decoder loses sync part way: a crash-cut recording) still has value: what is
     * there is transcribed, with a warning that says what was expected and what was decoded.
     * Nothing decoded at all is an error. */
    if (!st && total > 0) note_warning(src, total, out);
    if (!st && total == 0 && src->error[0])
        st = vox_fail(err, VOX_ERR_FORMAT, "%s: decoding failed at once (%s): the file is "
                      "truncated or damaged", path, src->error);
    if (!st && total == 0)
        st = vox_fail(err, VOX_ERR_FORMAT,
                      "%s: no audio could be decoded (0 frames): the file is empty, truncated or "
                      "damaged", path);
    free(buf);
    free(mono);

    if (!st && resample) {
        /* Input shorter than soxr's first output sample (a frame at 44.1 or 48 kHz, up to 4 at
         * 192 kHz) resamples to nothing (python-soxr's empty array), where a 16 kHz file of one
         * frame is one sample: it becomes one sample too, the mean of its frames, so that every
         * file with a frame transcribes. Such input never filled a piece: it is all pending. */
        double tiny_mean = 0;
        const size_t tiny_n = rs.n_in == 0 ? rs.n_pending : 0;
        for (size_t i = 0; i < tiny_n; i++) tiny_mean += rs.pending[i];
        st = resampler_finish(&rs, err);
        if (!st && rs.out.n == 0 && tiny_n > 0) {
            if (vec_reserve(&rs.out, 1))
                rs.out.data[rs.out.n++] = (float)(tiny_mean / (double)tiny_n);
            else
                st = vox_fail(err, VOX_ERR_NOMEM, "resampler: out of memory");
        }
        if (st) {
            vox_error_prefix(err, "%s", path);
        } else {
            direct = rs.out;
            rs.out.data = NULL;
        }
    }
    resampler_free(&rs);
    if (!st && direct.n == 0)
        st = vox_fail(err, VOX_ERR_FORMAT, "%s: too short: %zu frame%s at %d Hz leave no sample at "
                      "%d Hz", path, total, total == 1 ? "" : "s", src->rate, VOX_SAMPLE_RATE);
    if (!st && resample && !all_finite(direct.data, direct.n)) /* read samples were checked */
        st = vox_fail(err, VOX_ERR_FORMAT, "%s: resampling overflowed: sample values near the "
                      "float limit are not audio", path);
    if (st) {
        free(direct.data);
        return st;
    }
    out->samples = direct.data;
    out->n_samples = direct.n;
    out->capacity = direct.cap;
    out->source_rate = src->rate;
    out->source_channels = channels;
    return VOX_OK;
}

static vox_status load_input(const vox_audio_input *in, const char *name, double max_seconds,
                             float_vec *reuse, vox_audio *out, vox_error *err) {
    vox_audio_source src;
    vox_status st = source_open(in, name, &src, err);
    if (st) return st;
    st = decode_source(&src, name, max_seconds, reuse, out, err);
    src.close(&src);
    return st;
}

/* A FIFO (a named pipe, or a shell's <(cmd)), opened without waiting for its writer (a blocking
 * open waits in a call no signal ends): libsndfile cannot seek a pipe (FLAC loses sync, RF64 and
 * W64 lengths come out wrong, CAF gives nothing), so it is read whole, in waits that `stop` can
 * end, and decoded from memory, as audio on standard input is. */
static vox_status load_fifo(int fd, const char *path, double max_seconds, bool (*stop)(void *),
                            void *stop_arg, vox_audio *out, vox_error *err) {
    unsigned char *data = NULL;
    size_t size = 0;
    vox_status st = vox_read_all(fd, path,
                                 max_seconds > VOX_MAX_AUDIO_SECONDS ? VOX_STREAM_MAX_BYTES_SEGMENTED
                                                                     : VOX_STREAM_MAX_BYTES,
                                 stop, stop_arg, &data, &size, err);
    if (!st) st = vox_audio_load_memory(data, size, path, max_seconds, out, err);
    free(data);
    return st;
}

vox_status vox_audio_load_reusing(const char *path, double max_seconds, float *reuse,
                                  size_t reuse_cap, bool (*stop)(void *), void *stop_arg,
                                  vox_audio *out, vox_error *err) {
    memset(out, 0, sizeof *out);
    float_vec buf = {.data = reuse, .cap = reuse ? reuse_cap : 0};
    vox_status st = check_limit(path, &max_seconds, err);
    /* non-blocking only for a FIFO's open (load_fifo); cleared below for everything else */
    int fd = st ? -1 : open(path, O_RDONLY | O_NONBLOCK);
    if (!st && fd < 0) st = vox_fail(err, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (!st && fstat(fd, &sb) != 0)
        st = vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    if (!st && S_ISFIFO(sb.st_mode)) {
        st = load_fifo(fd, path, max_seconds, stop, stop_arg, out, err);
    } else {
        int flags = st ? 0 : fcntl(fd, F_GETFL);
        if (!st && (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0))
            st = vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        if (!st && S_ISDIR(sb.st_mode))
            st = vox_fail(err, VOX_ERR_IO, "%s: is a directory, not an audio file", path);
        if (!st && S_ISREG(sb.st_mode) && sb.st_size == 0)
            st = vox_fail(err, VOX_ERR_FORMAT, "%s: empty file (0 bytes), not audio", path);
        if (!st) {
            vox_audio_input in = {.fd = fd};
            st = load_input(&in, path, max_seconds, &buf, out, err);
        }
    }
    if (fd >= 0) close(fd);
    free(buf.data); /* not taken by the decoding */
    return st;
}

vox_status vox_audio_load(const char *path, double max_seconds, vox_audio *out, vox_error *err) {
    return vox_audio_load_reusing(path, max_seconds, NULL, 0, NULL, NULL, out, err);
}

vox_status vox_audio_load_memory(const void *data, size_t size, const char *name,
                                 double max_seconds, vox_audio *out, vox_error *err) {
    memset(out, 0, sizeof *out);
    vox_status st = check_limit(name, &max_seconds, err);
    if (st) return st;
    if (size == 0)
        return vox_fail(err, VOX_ERR_FORMAT, "%s: empty file (0 bytes), not audio", name);
    if (size > INT64_MAX) return vox_fail(err, VOX_ERR_TOO_LONG, "%s: too large", name);
    vox_audio_input in = {.fd = -1, .data = data, .size = size};
    float_vec none = {0};
    return load_input(&in, name, max_seconds, &none, out, err);
}

void vox_audio_free(vox_audio *a) {
    if (!a) return;
    free(a->samples);
    memset(a, 0, sizeof *a);
}
