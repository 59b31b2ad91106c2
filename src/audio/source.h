/* What audio.c decodes from (private to src/audio): one decoder library's stream of interleaved
 * float frames. libsndfile reads every format (audio.c); MPEG audio goes to libmpg123 directly
 * (mpeg.c), whose console messages can only be turned off on a handle of our own. */
#ifndef VOX_AUDIO_SOURCE_H
#define VOX_AUDIO_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* Where the bytes come from: an open file (fd >= 0), or a buffer in memory (fd < 0). */
typedef struct {
    int fd;
    const unsigned char *data;
    size_t size;
} vox_audio_input;

/* Up to n bytes at offset off (fewer where the input ends); returns how many. */
size_t vox_input_read_at(const vox_audio_input *in, uint64_t off, unsigned char *buf, size_t n);
/* n bytes at offset off; false when the input is shorter. */
bool vox_input_peek(const vox_audio_input *in, uint64_t off, unsigned char *buf, size_t n);
/* The input's size in bytes; -1 when unknown (not a regular file). */
int64_t vox_input_size(const vox_audio_input *in);

typedef struct vox_audio_source vox_audio_source;
struct vox_audio_source {
    int rate, channels;
    double expected_frames; /* what the header announces (0: unknown; an estimate for MP3, Ogg) */
    /* Every frame `read` gives is finite by construction (16-bit PCM scaled by our own loop), so
     * the decoder skips its search for NaN and infinity; false for decoders that give floats. */
    bool finite;
    /* Reads up to n frames into buf; returns how many, 0 at the end. A decoding error ends the
     * stream: the frames read before it stand, and `error` says what went wrong. */
    size_t (*read)(vox_audio_source *s, float *buf, size_t n);
    void (*close)(vox_audio_source *s);
    char error[200];  /* "libsndfile: ..." / "libmpg123: ...", or "" */
    char damage[200]; /* damage the decoder went past (MPEG: where it lost sync), or "" */
    char cut_short[200]; /* why the input is known to end early (Ogg: no end-of-stream page), or "" */
    void *impl;
};

/* True when the input holds MPEG audio at its start (after an ID3v2 tag, if any). */
bool vox_mpeg_sniff(const vox_audio_input *in);
/* True when three consecutive MPEG frames start within the first 64 KiB (after an ID3v2 tag):
 * MPEG audio behind junk or padding, which libsndfile recognises only by a .mp3 name. Asked
 * only of inputs libsndfile does not recognise. */
bool vox_mpeg_find(const vox_audio_input *in);

/* Opens the input with libmpg123. VOX_ERR_FORMAT when it holds no MPEG audio (why says what
 * libmpg123 found), VOX_ERR_NOMEM. */
vox_status vox_mpeg_open(const vox_audio_input *in, vox_audio_source *src, char *why, size_t n);

/* Why the input's last Ogg page shows it cut short: into why[0..n), "" when the last page is
 * complete and carries the end-of-stream flag. */
void vox_ogg_check_end(const vox_audio_input *in, char *why, size_t n);

/* Why libsndfile could not open an Ogg input whose streams hold no Vorbis or Opus (Speex, FLAC
 * in Ogg, video only): into why[0..n) the codecs found; "" for other inputs, whose reason is
 * libsndfile's ("Unspecified internal error", "unknown error in flac decoder" otherwise). */
void vox_ogg_describe_unsupported(const vox_audio_input *in, char *why, size_t n);

#endif
