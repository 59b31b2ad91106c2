/* MPEG audio (MP3, MP2) through libmpg123, quietly.
 *
 * libsndfile decodes MP3 with libmpg123 too, but on a handle made with libmpg123's defaults,
 * which print to stderr where a damaged stream loses sync ("Note: Illegal Audio-MPEG-Header
 * 0x... at offset 4416.", "Note: Trying to resync...", "[src/libmpg123/layer3.c:...] error: ...").
 * Nothing in libsndfile's API reaches that handle, and libmpg123 has neither a process-wide
 * default nor a message callback: MPG123_QUIET can only be set on a handle. Redirecting fd 2
 * around the decoding was the other way, and a worse one: fd 2 belongs to the whole process, so
 * the messages other threads write meanwhile (the engine reports files while reader threads
 * decode) would be swallowed too, and MP3 decoding would have to be serialised across the
 * reader threads. So MPEG audio gets a libmpg123 handle of our own, set up as libsndfile sets
 * its own (mpeg_decode.c: no automatic resampling, float output, gapless, no Frankenstein
 * streams; the samples are the same to the bit, checked in tests/unit/test_audio.c) plus
 * MPG123_QUIET. What the messages said is not lost: each frame's position in the stream is
 * checked against the end of the one before, so the bytes skipped to find sync again are
 * counted and reported in the file's warning. */
#include <errno.h>
#include <mpg123.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/source.h"

/* ---- recognising MPEG audio ------------------------------------------------------------------ */

/* A frame header libmpg123 accepts (its head_check): frame sync, and no reserved version,
 * layer, bitrate or sample rate. */
static bool frame_header(const unsigned char *h) {
    return h[0] == 0xFF && (h[1] & 0xE0) == 0xE0 && ((h[1] >> 3) & 3) != 1 &&
           ((h[1] >> 1) & 3) != 0 && (h[2] >> 4) != 15 && ((h[2] >> 2) & 3) != 3;
}

/* Where the audio begins after an ID3v2 tag at the start (h: the input's first 10 bytes): 0
 * without a tag, -1 for a tag whose size is not syncsafe. A tag is a 10-byte header, a syncsafe
 * size and an optional 10-byte footer. */
static int64_t id3v2_end(const unsigned char *h) {
    if (memcmp(h, "ID3", 3) != 0) return 0;
    if ((h[6] | h[7] | h[8] | h[9]) & 0x80) return -1;
    return 10 + ((int64_t)h[6] << 21 | (int64_t)h[7] << 14 | (int64_t)h[8] << 7 | h[9]) +
           (h[5] & 0x10 ? 10 : 0);
}

bool vox_mpeg_sniff(const vox_audio_input *in) {
    unsigned char h[10];
    if (!vox_input_peek(in, 0, h, sizeof h)) return false;
    const int64_t off = id3v2_end(h);
    if (off < 0 || (off > 0 && !vox_input_peek(in, (uint64_t)off, h, 4))) return false;
    return frame_header(h);
}

/* The length in bytes of the frame whose header is h (frame_header(h)), or 0 for a free-format
 * frame (no bitrate in the header). ISO 11172-3 / 13818-3: kbit/s by version and layer, then
 * Layer I 4 * (12 * bitrate / rate + padding), Layer II and MPEG-1 Layer III 144 * bitrate /
 * rate + padding, MPEG-2/2.5 Layer III 72 * bitrate / rate + padding. */
static unsigned frame_bytes(const unsigned char *h) {
    static const unsigned short kbps[5][15] = {
        {0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448}, /* MPEG-1 I */
        {0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},    /* MPEG-1 II */
        {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},     /* MPEG-1 III */
        {0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},    /* MPEG-2 I */
        {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},         /* MPEG-2 II, III */
    };
    static const unsigned rates[3] = {44100, 48000, 32000}; /* MPEG-1; /2 MPEG-2, /4 MPEG-2.5 */
    const int version = (h[1] >> 3) & 3, layer = 4 - ((h[1] >> 1) & 3); /* version 3 = MPEG-1 */
    const unsigned index = h[2] >> 4, pad = (h[2] >> 1) & 1;
    const unsigned rate = rates[(h[2] >> 2) & 3] >> (version == 3 ? 0 : version == 2 ? 1 : 2);
    const int table = version == 3 ? layer - 1 : layer == 1 ? 3 : 4;
    const unsigned long bitrate = kbps[table][index] * 1000ul;
    if (bitrate == 0) return 0;
    if (layer == 1) return (unsigned)(12 * bitrate / rate + pad) * 4;
    return (unsigned)((layer == 3 && version != 3 ? 72 : 144) * bitrate / rate + pad);
}

bool vox_mpeg_find(const vox_audio_input *in) {
    enum { kSearch = 64 << 10, kTail = 3 * 4096 }; /* frames are at most ~2.9 KB */
    unsigned char h[10];
    const int64_t tag_end = vox_input_peek(in, 0, h, sizeof h) ? id3v2_end(h) : 0;
    unsigned char *buf = malloc(kSearch + kTail);
    if (!buf) return false;
    const size_t n = vox_input_read_at(in, tag_end > 0 ? (uint64_t)tag_end : 0, buf, kSearch + kTail);
    bool found = false;
    for (size_t i = 0; i + 4 <= n && i < kSearch && !found; i++) {
        size_t at = i;
        int frames = 0;
        while (frames < 3 && at + 4 <= n && frame_header(buf + at)) {
            const unsigned len = frame_bytes(buf + at);
            if (len < 4) break;
            frames++;
            at += len;
        }
        found = frames == 3;
    }
    free(buf);
    return found;
}

/* ---- decoding -------------------------------------------------------------------------------- */

typedef struct {
    vox_audio_input in;
    off_t pos;              /* memory input: the read position */
    mpg123_handle *mh;
    const float *frame;     /* the decoded frame not yet read (libmpg123's buffer) */
    size_t frame_left;      /* its samples not yet read */
    bool ended;
    off_t next_at;          /* where the next frame should start (-1: no frame yet) */
    off_t last_size;        /* the size of the last frame */
    long gaps;              /* places where bytes were skipped to find sync again */
    long long skipped, first_gap_at;
    off_t size;             /* of the input (-1: unknown) */
} mpeg_impl;

static ssize_t input_read(void *handle, void *buf, size_t n) {
    mpeg_impl *m = handle;
    if (m->in.fd >= 0) {
        ssize_t got;
        do got = read(m->in.fd, buf, n);
        while (got < 0 && errno == EINTR);
        return got;
    }
    if (m->pos < 0 || (size_t)m->pos >= m->in.size) return 0;
    size_t left = m->in.size - (size_t)m->pos;
    if (n > left) n = left;
    memcpy(buf, m->in.data + m->pos, n);
    m->pos += (off_t)n;
    return (ssize_t)n;
}

static off_t input_seek(void *handle, off_t offset, int whence) {
    mpeg_impl *m = handle;
    if (m->in.fd >= 0) return lseek(m->in.fd, offset, whence);
    off_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : (off_t)m->in.size, to;
    if ((whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) ||
        __builtin_add_overflow(base, offset, &to) || to < 0)
        return -1;
    m->pos = to;
    return to;
}

/* True when the bytes from off to the end are a tag, not audio (ID3v1, APE, Lyrics3, ID3v2). */
static bool tag_at(const vox_audio_input *in, off_t off) {
    unsigned char h[11];
    return (vox_input_peek(in, (uint64_t)off, h, 3) && (memcmp(h, "TAG", 3) == 0 || memcmp(h, "ID3", 3) == 0)) ||
           (vox_input_peek(in, (uint64_t)off, h, 8) && memcmp(h, "APETAGEX", 8) == 0) ||
           (vox_input_peek(in, (uint64_t)off, h, 11) && memcmp(h, "LYRICSBEGIN", 11) == 0);
}

static void note_damage(vox_audio_source *s, const mpeg_impl *m) {
    /* Decoding that ends well before the input does: libmpg123 lost sync and found only data it
     * would not take for the same stream (or none) after it. Less than a frame left over is a
     * cut file's last frame (the expected length says the rest). */
    off_t rest = m->size - m->next_at;
    if (!s->error[0] && m->size > 0 && m->next_at > 0 && rest > m->last_size &&
        !tag_at(&m->in, m->next_at)) {
        snprintf(s->damage, sizeof s->damage, "the MPEG stream lost sync at byte %lld and "
                 "decoding stopped there (%lld bytes not decoded)", (long long)m->next_at,
                 (long long)rest);
        return;
    }
    if (m->gaps == 1)
        snprintf(s->damage, sizeof s->damage, "the MPEG stream lost sync at byte %lld (%lld "
                 "bytes skipped to find it again)", m->first_gap_at, m->skipped);
    else if (m->gaps > 1)
        snprintf(s->damage, sizeof s->damage, "the MPEG stream lost sync %ld times, first at "
                 "byte %lld (%lld bytes skipped to find it again)", m->gaps, m->first_gap_at,
                 m->skipped);
}

/* Decodes the next frame into m->frame; false at the end of the stream or on an error. */
static bool next_frame(vox_audio_source *s, mpeg_impl *m) {
    for (;;) {
        off_t num;
        unsigned char *audio;
        size_t bytes;
        int r = mpg123_decode_frame(m->mh, &num, &audio, &bytes);
        if (r == MPG123_DONE) return false;
        if (r == MPG123_NEW_FORMAT) { /* libsndfile calls a change of format a malformed file */
            snprintf(s->error, sizeof s->error, "libmpg123: the stream changes its format part way");
            return false;
        }
        if (r != MPG123_OK) {
            snprintf(s->error, sizeof s->error, "libmpg123: %s", mpg123_strerror(m->mh));
            return false;
        }
        /* a frame that starts after the end of the one before: bytes skipped to find sync */
        off_t at = mpg123_framepos(m->mh);
        struct mpg123_frameinfo fi;
        if (at >= 0 && mpg123_info(m->mh, &fi) == MPG123_OK) {
            if (m->next_at >= 0 && at > m->next_at) {
                if (m->gaps++ == 0) m->first_gap_at = (long long)m->next_at;
                m->skipped += (long long)(at - m->next_at);
            }
            m->next_at = at + fi.framesize;
            m->last_size = fi.framesize;
        }
        if (bytes == 0) continue; /* a frame gapless decoding drops whole */
        m->frame = (const float *)audio;
        m->frame_left = bytes / sizeof(float);
        return true;
    }
}

static size_t mpeg_read(vox_audio_source *s, float *buf, size_t n) {
    mpeg_impl *m = s->impl;
    size_t want = n * (size_t)s->channels, done = 0;
    while (done < want && !m->ended) {
        if (m->frame_left == 0 && !next_frame(s, m)) {
            m->ended = true;
            note_damage(s, m);
            break;
        }
        size_t take = want - done < m->frame_left ? want - done : m->frame_left;
        memcpy(buf + done, m->frame, take * sizeof(float));
        m->frame += take;
        m->frame_left -= take;
        done += take;
    }
    return done / (size_t)s->channels; /* libmpg123 gives whole frames of every channel */
}

static void mpeg_close(vox_audio_source *s) {
    mpeg_impl *m = s->impl;
    if (!m) return;
    if (m->mh) {
        mpg123_close(m->mh);
        mpg123_delete(m->mh);
    }
    free(m);
    s->impl = NULL;
}

static pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
static int g_init_status;
static void init_library(void) { g_init_status = mpg123_init(); } /* once: not thread-safe */

vox_status vox_mpeg_open(const vox_audio_input *in, vox_audio_source *src, char *why, size_t n) {
    memset(src, 0, sizeof *src);
    pthread_once(&g_init_once, init_library);
    if (g_init_status != MPG123_OK) {
        snprintf(why, n, "libmpg123: %s", mpg123_plain_strerror(g_init_status));
        return VOX_ERR_INTERNAL;
    }
    mpeg_impl *m = calloc(1, sizeof *m);
    if (!m) return VOX_ERR_NOMEM;
    m->in = *in;
    m->next_at = -1;
    m->size = (off_t)vox_input_size(in);
    src->impl = m;
    src->read = mpeg_read;
    src->close = mpeg_close;
    if (in->fd >= 0 && lseek(in->fd, 0, SEEK_SET) != 0) {
        snprintf(why, n, "cannot seek: %s", strerror(errno));
        mpeg_close(src);
        return VOX_ERR_IO;
    }
    int e = MPG123_OK;
    m->mh = mpg123_new(NULL, &e);
    if (!m->mh) {
        snprintf(why, n, "libmpg123: %s", mpg123_plain_strerror(e));
        mpeg_close(src);
        return e == MPG123_OUT_OF_MEM ? VOX_ERR_NOMEM : VOX_ERR_INTERNAL;
    }
    mpg123_param(m->mh, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 0);
    mpg123_param(m->mh, MPG123_ADD_FLAGS, MPG123_FORCE_FLOAT | MPG123_GAPLESS | MPG123_QUIET, 0);
    /* junk before the first frame as far as vox_mpeg_find looks (libmpg123's default: 1 KB) */
    mpg123_param(m->mh, MPG123_RESYNC_LIMIT, 80 << 10, 0);
#if MPG123_API_VERSION >= 45
    mpg123_param(m->mh, MPG123_ADD_FLAGS, MPG123_NO_FRANKENSTEIN, 0);
#endif
    long rate = 0;
    int channels = 0, encoding = 0;
    if (mpg123_replace_reader_handle(m->mh, input_read, input_seek, NULL) != MPG123_OK ||
        mpg123_open_handle(m->mh, m) != MPG123_OK ||
        mpg123_getformat(m->mh, &rate, &channels, &encoding) != MPG123_OK) {
        snprintf(why, n, "libmpg123: %s", mpg123_strerror(m->mh));
        mpeg_close(src);
        return VOX_ERR_FORMAT;
    }
    /* the length from the Xing/Info header, else estimated from the file size; a full scan
     * only when neither is there (as libsndfile) */
    off_t length = mpg123_length(m->mh);
    if (length <= 0 && mpg123_scan(m->mh) == MPG123_OK) length = mpg123_length(m->mh);
    if (encoding != MPG123_ENC_FLOAT_32 &&
        mpg123_format(m->mh, rate, channels, MPG123_ENC_FLOAT_32) != MPG123_OK) {
        snprintf(why, n, "libmpg123: %s", mpg123_strerror(m->mh));
        mpeg_close(src);
        return VOX_ERR_FORMAT;
    }
    /* soundfile.read (the reference) seeks a seekable file to frame 0 before reading it, which
     * libsndfile passes on as mpg123_seek(0) (its MP3 is seekable when the length is known).
     * That is not a no-op: after it, MPEG-2/2.5 Layer III streams (rates up to 24 kHz) decode
     * to floats up to 3e-7 away from a fresh handle's (MPEG-1 ones are unchanged). */
    if (length >= 0 && mpg123_seek(m->mh, 0, SEEK_SET) < 0) {
        snprintf(why, n, "libmpg123: %s", mpg123_strerror(m->mh));
        mpeg_close(src);
        return VOX_ERR_FORMAT;
    }
    src->rate = rate > 0 && rate <= INT32_MAX ? (int)rate : 0;
    src->channels = channels;
    src->expected_frames = length > 0 ? (double)length : 0;
    return VOX_OK;
}
