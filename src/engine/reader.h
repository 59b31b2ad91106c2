/* Reader threads: decode, mix and resample the audio of queued requests, and cut it into pieces,
 * ahead of the GPU and in submission order, holding at most `read_ahead` decoded requests that
 * the engine has not yet taken (memory stays flat however many files are queued). */
#ifndef VOX_ENGINE_READER_H
#define VOX_ENGINE_READER_H

#include <pthread.h>
#include <stdbool.h>

#include "engine/request.h"

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t work;  /* readers wait for a request to read or for room */
    pthread_cond_t ready; /* the engine waits for a request to become READY or FAILED */
    vox_request **reqs;   /* every request, in submission order (owned by the queue) */
    size_t n_reqs, cap_reqs;
    size_t next_read;     /* the next request a reader takes */
    int held;             /* decoded requests the engine has not released */
    int read_ahead;
    /* sample buffers the engine is done with, for the next files (at most read_ahead): a
     * reused buffer's pages are already mapped, a fresh one faults them in (audio.h) */
    float **spare;
    size_t *spare_cap;
    int n_spare;
    bool stop;
    pthread_t threads[8];
    int n_threads;
} vox_reader;

vox_status vox_reader_init(vox_reader *rd, int threads, int read_ahead, vox_error *err);
/* Stops the threads (a request being decoded is finished first) and frees the list. */
void vox_reader_destroy(vox_reader *rd);
/* Appends r (the reader takes it in order); under the reader's lock. */
vox_status vox_reader_push(vox_reader *rd, vox_request *r, vox_error *err);
/* The engine is done with a decoded request's samples: room for one more. */
void vox_reader_release(vox_reader *rd);
/* Takes r's samples (capacity r->samples_cap) back for a later file, or frees them; under the
 * reader's lock. */
void vox_reader_recycle_locked(vox_reader *rd, vox_request *r);

#endif
