/* A request of a queue (private): one submitted file, encoded file in memory or PCM buffer, its audio once decoded, the
 * pieces it is cut into (one, or the segments of its pauses), and what each piece produced.
 * Reader threads (reader.c) fill the audio and the pieces; the engine (engine.c) runs the
 * pieces and completes the request when the last one is done. */
#ifndef VOX_ENGINE_REQUEST_H
#define VOX_ENGINE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment/segment.h"
#include "voxtral/voxtral.h"

typedef enum {
    VOX_REQ_QUEUED,  /* waiting for a reader thread */
    VOX_REQ_READING, /* a reader thread is decoding it */
    VOX_REQ_READY,   /* audio decoded and cut into pieces: the engine may admit its pieces */
    VOX_REQ_FAILED   /* the audio could not be decoded: completes with `error` */
} vox_request_state;

typedef struct {
    uint64_t tag;
    size_t index;                  /* position in submission order */
    char *path;                    /* owned copy; NULL for PCM; an encoded buffer's name */
    const void *encoded;           /* an encoded file in memory (the caller's), or NULL */
    size_t encoded_size;
    voxtral_transcribe_params p;   /* copied; its pointers are the caller's */
    double t_submit, t_ready;      /* wall clock (ms) */

    /* set by the reader thread, read by the engine once the state is READY or FAILED */
    vox_request_state state;
    float *samples;                /* 16 kHz mono; freed once every piece has been encoded */
    size_t n_samples;
    size_t samples_cap;            /* floats allocated at samples, for the readers' reuse */
    double audio_ms;               /* decoding + resampling + cutting, wall clock */
    vox_segment *pieces;           /* what to transcribe (the whole audio when not segmenting) */
    size_t n_pieces;
    vox_status status;
    char *error;
    char *warning;                 /* the audio decoded with a problem (vox_audio.warning) */

    /* the engine's */
    size_t pieces_admitted, pieces_done;
    bool released;                 /* its read-ahead room was given back to the readers */
    int encoding;                  /* pieces admitted whose audio is not encoded yet (rd.mu) */
    voxtral_result **piece_results; /* [n_pieces] */
} vox_request;

void vox_request_free(vox_request *r);

#endif
