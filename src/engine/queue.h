/* The queue's insides (private to src/engine): requests shared by every device, and one engine
 * per device that runs its own scheduler over them.
 *
 *   queue.c   the public queue API, the request list (reader threads fill it), which piece is
 *             admitted next, and completing requests (one callback at a time);
 *   engine.c  one device: its KV pool, its batch, admission of pieces, the decoder steps.
 *
 * Locks: rd.mu (reader.h) guards the request list, each request's state, pieces_admitted and
 * encoding, and the admission cursor; done_mu guards what completes a request (pieces_done,
 * status, piece_results, the callback). When both are held, done_mu is taken first. */
#ifndef VOX_ENGINE_QUEUE_H
#define VOX_ENGINE_QUEUE_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "engine/context.h"
#include "engine/fault.h"
#include "engine/reader.h"
#include "pipeline/pipeline.h"

/* One piece in flight on an engine. */
typedef struct {
    vox_request *req;
    size_t piece;
    int32_t *prompt;
    size_t n_prompt, audio_at, n_chunks;
    int64_t max_new, asked; /* its token budget, and the budget before the context cut it */
    bool forcing, want_stats, finished;
    bool nonfinite; /* finished because its logits were NaN or infinite: it fails */
    int k; /* top alternatives asked */
    vox_tensor x_prompt;  /* [n_prompt, hidden] until prefilled */
    int64_t n_prefilled;  /* prompt rows run */
    int64_t n_pos;        /* positions in the cache */
    int32_t *blocks;      /* its row of the block table [table_width] */
    int n_blocks, need_blocks;
    int32_t next_id;      /* token fed at the next decode step */
    bool decoding;
    bool fault_marked; /* VOX_FAULT=step:N failed a step that held it (fault.h) */
    voxtral_result *r;
    double t_admit;
    /* --dump-tensors */
    float *dump_audio, *dump_logits;
    size_t dump_steps;
} vox_seq;

typedef struct vox_engine {
    voxtral_queue *q;
    voxtral_context *ctx;
    int max_batch;

    /* device state, set up by the first run (and again when a piece needs more) */
    bool sized;
    int max_seqs, table_width, step_rows;
    /* After a failed step on a device that works on (out of memory, say), steps run at most
     * step_seqs sequences and step_row_cap rows: half of the failed step's (its rows only if it
     * held prompt rows), doubled back after each VOX_REGROW_STEPS steps that succeed (engine.c,
     * step_failed); otherwise max_seqs and step_rows */
    int step_seqs, step_row_cap;
    long steps_since_shrink;
    /* Chunks the audio encoder runs at once (vox_encoder_group_chunks), halved when a group of a
     * single piece fails on a device that works on (its workspace grows with the chunks) */
    int encoder_chunks;
    vox_kv_pool kv;
    vox_decoder_batch dec;
    int committed_blocks;          /* blocks promised to the sequences in flight */
    vox_seq **active;              /* in admission order */
    int n_active;
    vox_seq **prefilling;          /* a step's scratch: the sequences with prompt left, in the
                                    * order their chunks go in (schedule.h) */
    bool prefill_by_budget;        /* that order: the largest budget first (else admission's) */
    /* host side of a batch */
    int32_t *b_ids, *b_pos, *b_slot, *b_row0, *b_len, *b_tables, *b_logit_rows, *b_chosen;
    vox_seq **b_logit_seq, **b_seq;
    vox_logits_stats *b_stats;

    voxtral_queue_stats stats;
    double decode_rows_sum;
    vox_fault fault;               /* VOX_FAULT, the test hook (fault.h) */
    FILE *trace;                   /* VOX_STEP_TRACE: a line a step and an encoder group */
    double trace_t0, trace_last;   /* wall clock at the run's start and at the last traced end */
    /* how its run ended (a device that fails stops; the others go on) */
    vox_status status;
    vox_error err;
    pthread_t thread;
} vox_engine;

struct voxtral_queue {
    voxtral_queue_params qp;
    vox_reader rd;
    size_t next_admit;             /* first request not yet wholly admitted */
    size_t next_release;           /* first admitted request whose samples are still held */
    size_t n_done;                 /* requests completed (under rd.mu) */
    volatile sig_atomic_t cancel;
    pthread_mutex_t done_mu;
    vox_engine *engines;
    int n_engines;
};

/* ---- queue.c, for the engines ---- */

/* The next request with a piece to admit (rd.mu held), or NULL: none decoded yet, or all taken.
 * Completes failed requests met on the way (it lets go of rd.mu for that). */
vox_request *vox_queue_next_piece(voxtral_queue *q);
/* Frees the samples of the requests whose pieces have all been encoded. */
void vox_queue_release_admitted(voxtral_queue *q);
/* A piece is over: its result (st == VOX_OK; the request takes it), or a failure that the
 * request reports. The request completes, through the callback, after its last piece. */
void vox_queue_piece_done(voxtral_queue *q, vox_engine *e, vox_request *r, size_t piece,
                          voxtral_result *result, vox_status st, const char *msg);
/* True once every submitted request has completed. */
bool vox_queue_all_done(voxtral_queue *q);
/* Waits up to 50 ms for a reader to finish the request at the head of the queue. */
void vox_queue_wait_reader(voxtral_queue *q);

/* ---- engine.c ---- */

void vox_engine_init(vox_engine *e, voxtral_queue *q, voxtral_context *ctx, int max_batch);
/* Runs the engine until every request has completed, the queue is cancelled, or its device
 * fails (e->status, e->err say which). */
void vox_engine_run(vox_engine *e);
/* Ends what is in flight on e with st (its requests fail with msg). */
void vox_engine_abandon(vox_engine *e, vox_status st, const char *msg);
void vox_engine_free(vox_engine *e);
/* The batch a context gets by default (voxtral.h's rule). */
int vox_engine_default_batch(const voxtral_context *ctx);

#endif
