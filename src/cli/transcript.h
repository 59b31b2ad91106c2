/* One input file transcribed (whole, or cut at pauses with each piece its own request), as the
 * writers (output.h) read it. */
#ifndef VOX_CLI_TRANSCRIPT_H
#define VOX_CLI_TRANSCRIPT_H

#include <stdbool.h>
#include <stddef.h>

#include "voxtral/voxtral.h"

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
    const char *warning;     /* the audio decoded with a problem (a truncated file), or NULL */
    voxtral_result *whole;   /* owned: the result the pieces came from (segmented: their
                                container, whose segments moved into segs) */
} vox_transcript;

/* Takes a request's result (r is owned by t afterwards, and freed with it) for the writers:
 * the whole file as one piece, or its segments. */
vox_status vox_transcript_from_result(vox_transcript *t, const char *path, voxtral_result *r,
                                      bool logprobs, vox_error *err);
void vox_transcript_free(vox_transcript *t);

#endif
