/* Audio input: decode a file with libsndfile (WAV in its PCM and float encodings, FLAC,
 * Ogg/Vorbis, Opus) or libmpg123 (MP3), average the channels to mono, resample to 16 kHz with
 * libsoxr's HQ recipe (as mistral-common does). */
#ifndef VOX_AUDIO_AUDIO_H
#define VOX_AUDIO_AUDIO_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_SAMPLE_RATE 16000
/* One request holds at most 30 minutes of audio: 60 chunks of 375 audio tokens fill 22,500 of
 * the decoder's 32,768 positions, leaving room for the prompt and the transcript. */
#define VOX_MAX_AUDIO_SECONDS 1800
/* The most bytes read from a stream (standard input, a pipe, a FIFO) before decoding it: what the
 * longest audio taken needs with room to spare (30 min whole: 48 kHz stereo float WAV is 691 MB;
 * 10 h segmented: 16-bit stereo at 48 kHz is 6.9 GB), so that an endless pipe ends with a
 * message instead of exhausting memory. */
#define VOX_STREAM_MAX_BYTES ((size_t)1 << 30)
#define VOX_STREAM_MAX_BYTES_SEGMENTED ((size_t)8 << 30)

typedef struct {
    float *samples;    /* mono, VOX_SAMPLE_RATE Hz, owned */
    size_t n_samples;
    size_t capacity;   /* floats allocated at samples (>= n_samples), for reuse */
    int source_rate;     /* sample rate of the file */
    int source_channels; /* channel count of the file */
    /* A problem that did not stop decoding, or "": a file that ends before its header says, or
     * whose decoder loses sync part way (a crash-cut recording), gives what is there and says
     * how much was expected and how much decoded; a damaged MP3 whose decoder found sync again
     * says where and how many bytes were skipped. */
    char warning[256];
} vox_audio;

/* Decodes, mixes and resamples PATH. Reads until the end of the stream (the reported frame
 * count may be unknown or wrong). Errors, each naming the file: cannot open / not audio
 * (VOX_ERR_IO / VOX_ERR_FORMAT), empty (VOX_ERR_FORMAT), non-finite samples (VOX_ERR_FORMAT),
 * longer than max_seconds (VOX_ERR_TOO_LONG; 0 means VOX_MAX_AUDIO_SECONDS). */
vox_status vox_audio_load(const char *path, double max_seconds, vox_audio *out, vox_error *err);

/* vox_audio_load, for a reader that can be stopped: a FIFO's audio is read whole before it is
 * decoded, waiting for its writer in slices that end (VOX_ERR_INTERRUPTED) once stop(stop_arg)
 * (NULL: never) says so; and decoding into `reuse` (reuse_cap floats from malloc, or NULL) instead of fresh
 * memory, grown if the file needs more: a reader that hands back the buffers of files it is done
 * with saves faulting in fresh pages for every file (1.3 against 2.6 ms a 30 s file, 8 threads on
 * the GPU machine). reuse is owned by the call: it ends up in out->samples, or freed. */
vox_status vox_audio_load_reusing(const char *path, double max_seconds, float *reuse,
                                  size_t reuse_cap, bool (*stop)(void *), void *stop_arg,
                                  vox_audio *out, vox_error *err);

/* The same for a whole file's bytes held in memory, data[0..size) (libsndfile virtual I/O);
 * name stands for the file in messages. */
vox_status vox_audio_load_memory(const void *data, size_t size, const char *name,
                                 double max_seconds, vox_audio *out, vox_error *err);

/* The checks a decoded file gets, for 16 kHz mono samples handed over as they are (the API's
 * PCM requests): every sample finite (VOX_ERR_FORMAT) and at most max_seconds long
 * (VOX_ERR_TOO_LONG; 0 means VOX_MAX_AUDIO_SECONDS). name stands for them in messages. */
vox_status vox_audio_check_samples(const char *name, const float *x, size_t n, double max_seconds,
                                   vox_error *err);

/* Resamples mono float samples from in_rate to out_rate (soxr HQ); *out is malloc'ed. */
vox_status vox_audio_resample(const float *in, size_t n_in, double in_rate, double out_rate,
                              float **out, size_t *n_out, vox_error *err);

void vox_audio_free(vox_audio *a);

#ifdef __cplusplus
}
#endif
#endif
