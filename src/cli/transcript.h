/* One input file transcribed: decoded once, then either transcribed whole or cut at pauses
 * (segment/) with each piece transcribed as its own request. The writers (output.h) read it. */
#ifndef VOX_CLI_TRANSCRIPT_H
#define VOX_CLI_TRANSCRIPT_H

#include <stdbool.h>
#include <stddef.h>

#include "segment/segment.h"
#include "voxtral/voxtral.h"

/* Longest file voxtral_runner accepts: one request holds 30 min; cut into segments, 10 h
 * (2.3 GB of 16 kHz float samples in memory). */
#define VOX_CLI_SEGMENTED_MAX_SECONDS (10 * 3600.0)

typedef struct {
    double start, end;  /* seconds: where the speech starts and ends (the times shown) */
    voxtral_result *r;  /* owned; r->audio_seconds is the length of the audio transcribed */
} vox_cli_segment;

typedef struct {
    const char *path;        /* borrowed */
    const char *language;    /* as asked (NULL: detected by the model, not reported); borrowed */
    bool logprobs;           /* the results carry per-token log-probabilities */
    double audio_seconds;    /* the whole file */
    bool segmented;          /* segs are pieces cut at pauses (else one piece: the whole file) */
    vox_cli_segment *segs;   /* owned; a segmented file of silence has none */
    size_t n_segs;
    char *text;              /* owned: the whole-file text, or the segments' texts, trimmed and
                                joined by single spaces */
    voxtral_timings timings; /* summed over the requests, plus decoding the file */
} vox_transcript;

/* Called with how much of the file is done (seconds of audio, after each segment and every few
 * tokens: tokens counts the tokens of the current request). */
typedef void (*vox_cli_progress_fn)(double done_s, double total_s, int tokens, void *user);

typedef struct {
    voxtral_transcribe_params tp; /* per request; on_token and user_data are replaced */
    bool segment;
    vox_segment_params seg;
    vox_cli_progress_fn progress; /* may be NULL */
    void *user;
} vox_cli_run_params;

/* Decodes and transcribes path. Errors name the file; VOX_ERR_INTERRUPTED when a signal
 * arrived before it was done (nothing is kept). */
vox_status vox_cli_transcribe(voxtral_context *ctx, const char *path, const vox_cli_run_params *p,
                              vox_transcript *t, vox_error *err);
void vox_transcript_free(vox_transcript *t);

/* s without leading and trailing white space, as a new string (NULL: out of memory). */
char *vox_cli_trim_dup(const char *s);

#endif
