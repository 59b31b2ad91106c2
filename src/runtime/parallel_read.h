/* Reading many byte ranges of files on several threads, for loading weights fast.
 *
 * A caller lists pieces: bytes [offset, offset + nbytes) of an open file that belong at dst.
 * vox_read_plan_build cuts them into spans: ranges of one file of at most max_span bytes, each
 * filled by one pread. Pieces that follow each other in a file share a span, so that the many
 * small tensors of a model (norms, biases) cost a few large reads, not hundreds of small ones; a
 * piece larger than max_span is cut across several spans. Each span lists its parts: where each
 * range of its buffer goes.
 *
 * vox_read_run has n threads take the spans in file order (neighbouring threads read
 * neighbouring ranges, which keeps the kernel's readahead useful on a cold cache). A thread
 * borrows a buffer from the sink, reads its span into it and hands it back; the sink moves the
 * parts to their destinations. The CUDA backend's sink lends each thread two pinned buffers and
 * moves the parts with asynchronous host-to-device copies, so that a thread reads its next span
 * while its last one is on the way to the device.
 *
 * Errors: a read that fails or finds the file shorter than planned (truncated after it was
 * opened) stops every thread at its next span and comes back as VOX_ERR_IO naming the file; a
 * sink failure comes back as the sink reported it. What the destinations hold then is unknown. */
#ifndef VOX_RUNTIME_PARALLEL_READ_H
#define VOX_RUNTIME_PARALLEL_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* pread(2)'s contract; tests pass their own to make reads short, interrupted or failing. */
typedef ssize_t (*vox_pread_fn)(int fd, void *buf, size_t n, off_t offset);

typedef struct {
    int fd;
    const char *path;  /* for messages */
    vox_pread_fn read; /* NULL: pread(2) */
} vox_read_file;

typedef struct {
    int file;        /* index into the files of vox_read_run */
    uint64_t offset; /* in the file */
    size_t nbytes;
    void *dst;       /* where the bytes go: opaque to the reader (device memory for cuda) */
} vox_read_piece;

/* nbytes of a span's buffer, from byte `at`, go to dst. */
typedef struct {
    void *dst;
    size_t at, nbytes;
} vox_read_part;

typedef struct {
    int file;
    uint64_t offset;
    size_t nbytes; /* 1 .. max_span */
    size_t first_part, n_parts; /* into the plan's parts, in buffer order */
} vox_read_span;

typedef struct {
    vox_read_span *spans;
    size_t n_spans;
    vox_read_part *parts;
    size_t n_parts;
    size_t max_span;
    uint64_t total_bytes;
} vox_read_plan;

/* Cuts the pieces (in any order; empty ones are skipped) into spans of at most max_span bytes
 * (> 0), sorted by file and offset. A piece that overlaps the one before it starts a new span. */
vox_status vox_read_plan_build(const vox_read_piece *pieces, size_t n_pieces, size_t max_span,
                               vox_read_plan *plan, vox_error *err);
void vox_read_plan_free(vox_read_plan *plan);

/* What vox_read_run does with the buffers; worker is 0 .. n_threads - 1 and each worker calls
 * the sink from one thread only, in the order begin, (acquire, deliver)..., end. */
typedef struct {
    void *user;
    /* First on each worker's thread (bind it to the device, make its stream); may be NULL. */
    vox_status (*begin)(void *user, int worker, vox_error *err);
    /* A buffer of at least max_span bytes that the worker may fill now (it waits until the
     * buffer's earlier contents have left). */
    vox_status (*acquire)(void *user, int worker, void **buf, vox_error *err);
    /* buf holds the span's bytes: move its parts (may be asynchronous, see acquire). */
    vox_status (*deliver)(void *user, int worker, void *buf, const vox_read_span *span,
                          const vox_read_part *parts, vox_error *err);
    /* Last on each worker whose begin succeeded, also after a failure (wait for its copies,
     * release what begin made); may be NULL. */
    vox_status (*end)(void *user, int worker, vox_error *err);
} vox_read_sink;

/* Where the time of a vox_read_run went (wall clock). */
typedef struct {
    int threads;            /* workers that ran */
    double wall_ms;         /* the whole run */
    double read_ms;         /* in pread, summed over the workers */
    double acquire_ms;      /* waiting for buffers, summed over the workers */
    double first_read_at;   /* vox_wall_ms() when the first read began, */
    double last_read_at;    /*   and when the last one ended */
    uint64_t bytes;
} vox_read_stats;

/* Reads every span of the plan on n_threads threads (at most one a span; the calling thread is
 * worker 0) and hands each to the sink. stats may be NULL. */
vox_status vox_read_run(const vox_read_plan *plan, const vox_read_file *files, int n_files,
                        int n_threads, const vox_read_sink *sink, vox_read_stats *stats,
                        vox_error *err);

/* n bytes of the file at offset into buf, through short and interrupted reads. */
vox_status vox_read_exact(const vox_read_file *f, void *buf, size_t n, uint64_t offset,
                          vox_error *err);

#ifdef __cplusplus
}
#endif
#endif
