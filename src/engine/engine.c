/* The queue: continuous batching of many requests on one device.
 *
 * Requests (files or PCM) wait in submission order; reader threads decode them ahead of the
 * device (reader.c) and cut them into pieces (the whole audio, or its segments). Each piece
 * becomes a sequence. The run loop repeats one scheduler step:
 *   1. admission: while a slot is free and the KV pool can promise a newcomer every block it may
 *      need (prompt + token budget), take the next pieces, up to one encoder group of chunks:
 *      their mel and audio encoder run together, and their prompts are embedded;
 *   2. one decoder step over a batch of rows (decoder.c): one row for every decoding sequence,
 *      plus prompt chunks of sequences being prefilled, up to a row budget a step (chunked
 *      prefill, as Sarathi-Serve and vLLM do), so a newcomer's prompt never freezes the others;
 *   3. the logits of the decode rows and of completed prompts choose tokens (one host sync); a
 *      sequence that reaches </s> or its budget leaves at once and its blocks go back to the pool.
 * A request completes (callback) when its last piece has.
 *
 * Memory: the KV pool is paged (blocks of VOX_KV_BLOCK positions, pipeline.h) and sized once
 * from free device memory (vox_queue_kv_budget); blocks are taken as positions are written, so
 * at most one partly filled block a sequence is held but not used.
 *
 * Timing: every stage is bracketed by device marks. A step's time is shared between its rows:
 * the decode rows' share is split evenly among the decoding sequences and counted as their
 * decode time, each prompt chunk's share is its sequence's prefill time; an admission group's
 * mel, encoder and embedding times are split by chunks. Summed over requests, the stages give
 * the queue's device time, whatever the batch. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio/audio.h"
#include "engine/context.h"
#include "engine/reader.h"
#include "format/safetensors.h"
#include "mel/mel.h"
#include "pipeline/pipeline.h"

#define VOX_KV_BLOCK 16          /* positions a KV block */
#define VOX_MAX_BATCH 256        /* most sequences in flight by default */
/* Rows a decoder step runs at most: decode rows first, prompt chunks fill the rest. Large
 * enough that prefill GEMMs run near full speed, small enough that a step stays short.
 * VOX_STEP_ROWS=N overrides it (tests cut prompts into awkward chunks with it). */
#define VOX_STEP_ROWS 2048

static int step_rows_for(int max_seqs) {
    const char *env = getenv("VOX_STEP_ROWS");
    long n = env && *env ? strtol(env, NULL, 10) : VOX_STEP_ROWS;
    if (n < 1 || n > 1 << 20) n = VOX_STEP_ROWS;
    return n > max_seqs ? (int)n : max_seqs;
}

/* One piece in flight. */
typedef struct {
    vox_request *req;
    size_t piece;
    int32_t *prompt;
    size_t n_prompt, audio_at, n_chunks;
    int64_t max_new;
    bool forcing, want_stats, finished;
    int k; /* top alternatives asked */
    vox_tensor x_prompt;  /* [n_prompt, hidden] until prefilled */
    int64_t n_prefilled;  /* prompt rows run */
    int64_t n_pos;        /* positions in the cache */
    int32_t *blocks;      /* its row of the block table [table_width] */
    int n_blocks, need_blocks;
    int32_t next_id;      /* token fed at the next decode step */
    bool decoding;
    voxtral_result *r;
    double t_admit;
    /* --dump-tensors */
    float *dump_audio, *dump_logits;
    size_t dump_steps;
} vox_seq;

struct voxtral_queue {
    voxtral_context *ctx;
    voxtral_queue_params qp;
    vox_reader rd;
    size_t next_admit;             /* first request not yet wholly admitted */
    size_t next_release;           /* first admitted request whose samples are still held */
    size_t n_done;                 /* requests completed */
    volatile sig_atomic_t cancel;
    int max_batch;

    /* device state, set up by the first run (and again when a piece needs more) */
    bool sized;
    int max_seqs, table_width, step_rows;
    vox_kv_pool kv;
    vox_decoder_batch dec;
    int committed_blocks;          /* blocks promised to the sequences in flight */
    vox_seq **active;
    int n_active;
    /* host side of a batch */
    int32_t *b_ids, *b_pos, *b_slot, *b_row0, *b_len, *b_tables, *b_logit_rows, *b_chosen;
    vox_seq **b_logit_seq, **b_seq;
    vox_logits_stats *b_stats;

    voxtral_queue_stats stats;
    double decode_rows_sum;
    size_t kv_positions_at_peak;
};

voxtral_queue_params voxtral_queue_default_params(void) {
    return (voxtral_queue_params){.max_batch = 0, .read_ahead = 0, .reader_threads = 0,
                                  .on_complete = NULL, .user_data = NULL};
}

int voxtral_queue_batch_size(const voxtral_queue *q) { return q->max_batch; }

void voxtral_queue_get_stats(const voxtral_queue *q, voxtral_queue_stats *out) {
    *out = q->stats;
    out->max_batch = q->max_batch;
    out->mean_batch = q->stats.decode_steps ? q->decode_rows_sum / (double)q->stats.decode_steps : 0;
}

void voxtral_queue_cancel(voxtral_queue *q) { q->cancel = 1; }

/* ---- sizing ---------------------------------------------------------------------------------- */

/* Tokens a piece may generate: forced ids, or the budget asked, or the default for its length;
 * capped by the context. */
static int64_t token_budget(const vox_model *m, const voxtral_transcribe_params *p, size_t n_prompt,
                            double seconds) {
    int64_t n = p->force_ids && p->n_force_ids ? (int64_t)p->n_force_ids
                : p->max_new_tokens > 0       ? p->max_new_tokens
                                              : voxtral_default_max_new_tokens(seconds);
    int64_t room = m->cfg.decoder.max_position_embeddings - (int64_t)n_prompt;
    return n < room ? n : room;
}

/* Positions of a 30 s request with the default budget: what the pool and the batch are sized
 * for when the requests are not known yet. */
static int64_t typical_positions(const vox_model *m) {
    return 3 + vox_encoder_tokens_per_chunk(m) + 2 + voxtral_default_max_new_tokens(30.0);
}

/* Bytes the KV pool may take: 60% of the device's free memory (the rest is for the encoder's
 * and the step's workspaces and for other processes), at most 12 GiB. */
static size_t kv_budget(const vox_backend *be) {
    size_t free_b = 0, total_b = 0;
    be->mem_info((vox_backend *)be, &free_b, &total_b);
    double b = 0.6 * (double)free_b, cap = 12.0 * (1u << 30);
    return (size_t)(b < cap ? b : cap);
}

static int blocks_for(int64_t positions) { return (int)((positions + VOX_KV_BLOCK - 1) / VOX_KV_BLOCK); }

static void free_batch_arrays(voxtral_queue *q) {
    free(q->b_ids), free(q->b_pos), free(q->b_slot), free(q->b_row0), free(q->b_len);
    free(q->b_tables), free(q->b_logit_rows), free(q->b_chosen), free(q->b_logit_seq);
    free(q->b_seq), free(q->b_stats), free(q->active);
    q->b_ids = q->b_pos = q->b_slot = q->b_row0 = q->b_len = q->b_tables = q->b_logit_rows =
        q->b_chosen = NULL;
    q->b_logit_seq = q->b_seq = q->active = NULL;
    q->b_stats = NULL;
}

static void unsize(voxtral_queue *q) {
    vox_model *m = q->ctx->model;
    if (!q->sized) return;
    vox_decoder_batch_free(m, &q->dec);
    vox_kv_pool_free(m, &q->kv);
    free_batch_arrays(q);
    q->sized = false;
}

/* Sizes the pool and the step for max_seqs sequences of up to `longest` positions each and
 * `positions` positions in all; on a device that cannot hold it, halves the pool until one
 * sequence of `longest` positions fits. */
static vox_status size_for(voxtral_queue *q, int max_seqs, int64_t longest, int64_t positions,
                           vox_error *err) {
    vox_model *m = q->ctx->model;
    unsize(q);
    size_t per_pos = vox_kv_bytes_per_position(m);
    int64_t budget_blocks = (int64_t)(kv_budget(m->be) / (per_pos * VOX_KV_BLOCK));
    int64_t want = blocks_for(positions) + max_seqs + 1; /* + one partial block a sequence */
    int64_t min_blocks = blocks_for(longest) + 1;
    int64_t n_blocks = want < budget_blocks ? want : budget_blocks;
    if (n_blocks < min_blocks) n_blocks = min_blocks;
    q->table_width = blocks_for(longest);
    q->step_rows = step_rows_for(max_seqs);
    vox_status st;
    for (;;) {
        st = vox_kv_pool_init(m, &q->kv, (int)n_blocks, VOX_KV_BLOCK, err);
        if (!st) {
            st = vox_decoder_batch_init(m, &q->dec, q->step_rows, max_seqs, q->table_width,
                                        VOX_KV_BLOCK, err);
            if (st) vox_kv_pool_free(m, &q->kv);
        }
        if (st != VOX_ERR_DEVICE || n_blocks <= min_blocks) break;
        /* out of device memory: a smaller pool (and batch) rather than a failed run */
        n_blocks = n_blocks / 2 > min_blocks ? n_blocks / 2 : min_blocks;
        if (max_seqs > 1) max_seqs = (max_seqs + 1) / 2;
        q->step_rows = step_rows_for(max_seqs);
    }
    if (st) return st;
    q->max_seqs = max_seqs;
    size_t rows = (size_t)q->step_rows, seqs = (size_t)max_seqs;
    q->b_ids = malloc(seqs * sizeof *q->b_ids);
    q->b_pos = malloc(rows * sizeof *q->b_pos);
    q->b_slot = malloc(rows * sizeof *q->b_slot);
    q->b_row0 = malloc((seqs + 1) * sizeof *q->b_row0);
    q->b_len = malloc(seqs * sizeof *q->b_len);
    q->b_tables = malloc(seqs * (size_t)q->table_width * sizeof *q->b_tables);
    q->b_logit_rows = malloc(seqs * sizeof *q->b_logit_rows);
    q->b_chosen = malloc(seqs * sizeof *q->b_chosen);
    q->b_logit_seq = malloc(seqs * sizeof *q->b_logit_seq);
    q->b_seq = malloc(seqs * sizeof *q->b_seq);
    q->b_stats = malloc(seqs * sizeof *q->b_stats);
    q->active = calloc(seqs, sizeof *q->active);
    q->sized = true;
    q->committed_blocks = 0;
    q->stats.kv_bytes = (size_t)q->kv.n_blocks * VOX_KV_BLOCK * per_pos;
    q->stats.kv_block_size = VOX_KV_BLOCK;
    if (!q->b_ids || !q->b_pos || !q->b_slot || !q->b_row0 || !q->b_len || !q->b_tables ||
        !q->b_logit_rows || !q->b_chosen || !q->b_logit_seq || !q->b_seq || !q->b_stats || !q->active) {
        unsize(q);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    return VOX_OK;
}

/* ---- completing requests --------------------------------------------------------------------- */

static char *trim_dup(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) n--;
    char *t = malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = 0;
    }
    return t;
}

static void add_timings(voxtral_timings *sum, const voxtral_timings *x) {
    sum->mel_ms += x->mel_ms;
    sum->audio_encoder_ms += x->audio_encoder_ms;
    sum->token_embedding_ms += x->token_embedding_ms;
    sum->prefill_ms += x->prefill_ms;
    sum->decode_ms += x->decode_ms;
    sum->queue_ms += x->queue_ms;
    sum->n_prompt_tokens += x->n_prompt_tokens;
    sum->n_generated += x->n_generated;
}

/* The request's result from its pieces': the piece itself (whole audio), or the segments with
 * their texts joined. */
static voxtral_result *assemble(voxtral_queue *q, vox_request *r, vox_error *err) {
    voxtral_result *out;
    if (!r->p.segment) {
        out = r->piece_results[0];
        r->piece_results[0] = NULL;
    } else {
        out = calloc(1, sizeof *out);
        if (!out || (r->n_pieces && !(out->segments = calloc(r->n_pieces, sizeof *out->segments)))) {
            free(out);
            vox_fail(err, VOX_ERR_NOMEM, "out of memory");
            return NULL;
        }
        out->segmented = true;
        out->language = r->p.language;
        size_t cap = 1;
        for (size_t i = 0; i < r->n_pieces; i++) cap += strlen(r->piece_results[i]->text) + 1;
        char *text = malloc(cap), *o = text;
        if (!text) {
            voxtral_result_free(out);
            vox_fail(err, VOX_ERR_NOMEM, "out of memory");
            return NULL;
        }
        for (size_t i = 0; i < r->n_pieces; i++) {
            voxtral_result *pr = r->piece_results[i];
            char *t = trim_dup(pr->text);
            if (t && *t) {
                if (o > text) *o++ = ' ';
                memcpy(o, t, strlen(t));
                o += strlen(t);
            }
            free(t);
            add_timings(&out->timings, &pr->timings);
            out->segments[out->n_segments++] = (voxtral_segment){
                .start = (double)r->pieces[i].start / VOX_SAMPLE_RATE,
                .end = (double)r->pieces[i].end / VOX_SAMPLE_RATE, .r = pr};
            r->piece_results[i] = NULL;
        }
        *o = 0;
        out->text = text;
    }
    out->audio_seconds = (double)r->n_samples / VOX_SAMPLE_RATE;
    out->timings.audio_ms = r->audio_ms;
    out->timings.load_ms = q->ctx->load_ms;
    out->timings.total_ms = vox_wall_ms() - r->t_submit;
    size_t live;
    q->ctx->be->memory(q->ctx->be, &live, &out->timings.peak_device_bytes);
    return out;
}

/* Calls the callback for r (its result when every piece succeeded) and frees it. */
static void complete(voxtral_queue *q, size_t index) {
    vox_request *r = q->rd.reqs[index];
    voxtral_completion c = {.tag = r->tag, .path = r->path, .status = r->status,
                            .error = r->error, .result = NULL};
    vox_error err = {0};
    if (!r->status && !(c.result = assemble(q, r, &err))) {
        c.status = err.code;
        c.error = err.msg;
    }
    if (c.status && c.error && r->path && strncmp(c.error, r->path, strlen(r->path)) != 0) {
        snprintf(err.msg, sizeof err.msg, "%.300s: %.700s", r->path, c.error);
        c.error = err.msg;
    }
    q->qp.on_complete(&c, q->qp.user_data);
    if (!r->released && r->state != VOX_REQ_QUEUED) vox_reader_release(&q->rd);
    pthread_mutex_lock(&q->rd.mu);
    q->rd.reqs[index] = NULL;
    pthread_mutex_unlock(&q->rd.mu);
    vox_request_free(r);
    q->n_done++;
}

static void fail_request(vox_request *r, vox_status st, const char *msg) {
    if (r->status) return; /* the first failure is the one reported */
    r->status = st;
    free(r->error);
    r->error = strdup(msg);
}

/* A piece is over (its result, or a failure): the request completes after its last piece. */
static void piece_done(voxtral_queue *q, vox_request *r) {
    r->pieces_done++;
    if (r->pieces_done == r->n_pieces && r->pieces_admitted == r->n_pieces) complete(q, r->index);
}

static vox_status dump_write(const vox_model *m, const vox_seq *s, vox_error *err) {
    const vox_decoder_config *d = &m->cfg.decoder;
    vox_st_writer *w = vox_st_writer_new();
    if (!w) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    int64_t n_audio = (int64_t)s->n_chunks * vox_encoder_tokens_per_chunk(m);
    int64_t sa[2] = {n_audio, d->hidden}, sl[2] = {(int64_t)s->dump_steps, d->vocab_size};
    int64_t sp[1] = {(int64_t)s->n_prompt}, si[1] = {(int64_t)s->r->n_ids};
    vox_status st = vox_st_writer_add(w, "audio_embeddings", VOX_DTYPE_F32, 2, sa, s->dump_audio, err);
    if (!st) st = vox_st_writer_add(w, "logits", VOX_DTYPE_F32, 2, sl, s->dump_logits, err);
    if (!st) st = vox_st_writer_add(w, "prompt_ids", VOX_DTYPE_I32, 1, sp, s->prompt, err);
    if (!st) st = vox_st_writer_add(w, "ids", VOX_DTYPE_I32, 1, si, s->r->ids, err);
    if (!st) st = vox_st_writer_save(w, s->req->p.dump_path, err);
    vox_st_writer_free(w);
    if (st) vox_error_prefix(err, "--dump-tensors");
    return st;
}

static void seq_free(voxtral_queue *q, vox_seq *s) {
    vox_tensor_free(q->ctx->be, &s->x_prompt);
    voxtral_result_free(s->r);
    free(s->prompt);
    free(s->blocks);
    free(s->dump_audio);
    free(s->dump_logits);
    free(s);
}

/* Takes s out of the batch: its blocks go back to the pool; its result (when st is VOX_OK) to
 * its request. */
static void seq_finish(voxtral_queue *q, vox_seq *s, vox_status st, const char *msg) {
    vox_kv_pool_give(&q->kv, s->blocks, s->n_blocks);
    q->committed_blocks -= s->need_blocks;
    vox_error err = {0};
    if (!st) st = vox_tokenizer_decode(q->ctx->tok, s->r->ids, s->r->n_ids, &s->r->text, &err);
    if (!st && s->req->p.dump_path) st = dump_write(q->ctx->model, s, &err);
    if (st && !msg) msg = err.msg;
    if (!st) {
        s->r->timings.n_prompt_tokens = (int)s->n_prompt;
        s->r->timings.n_generated = (int)s->r->n_ids;
        s->req->piece_results[s->piece] = s->r;
        s->r = NULL;
    } else {
        fail_request(s->req, st, msg);
    }
    for (int i = 0; i < q->n_active; i++)
        if (q->active[i] == s) {
            memmove(&q->active[i], &q->active[i + 1], (size_t)(q->n_active - i - 1) * sizeof *q->active);
            q->n_active--;
            break;
        }
    vox_request *r = s->req;
    seq_free(q, s);
    piece_done(q, r);
}

/* ---- admission: the next pieces through mel, encoder and prompt embedding ------------------- */

/* The next piece to admit, or NULL (none ready yet, or all taken). Completes failed requests met
 * on the way and gives the read-ahead room of wholly admitted ones back to the readers (their
 * samples are freed by release_admitted, once encoded). Called with the reader's lock held. */
static vox_request *next_piece(voxtral_queue *q) {
    while (q->next_admit < q->rd.n_reqs) {
        vox_request *r = q->rd.reqs[q->next_admit];
        if (!r) { /* completed already */
            q->next_admit++;
            continue;
        }
        if (r->state == VOX_REQ_QUEUED || r->state == VOX_REQ_READING) return NULL;
        if (r->state == VOX_REQ_FAILED || r->pieces_admitted == r->n_pieces) {
            size_t i = q->next_admit++;
            bool done = r->state == VOX_REQ_FAILED || r->n_pieces == 0; /* nothing to run */
            r->released = true;
            pthread_mutex_unlock(&q->rd.mu);
            vox_reader_release(&q->rd);
            if (done) complete(q, i);
            pthread_mutex_lock(&q->rd.mu);
            continue;
        }
        return r;
    }
    return NULL;
}

/* Frees the samples of the requests whose pieces have all been encoded. */
static void release_admitted(voxtral_queue *q) {
    pthread_mutex_lock(&q->rd.mu);
    next_piece(q);
    for (; q->next_release < q->next_admit; q->next_release++) {
        vox_request *r = q->rd.reqs[q->next_release];
        if (r) {
            free(r->samples);
            r->samples = NULL;
        }
    }
    pthread_mutex_unlock(&q->rd.mu);
}

static vox_seq *seq_new(voxtral_queue *q, vox_request *r, size_t piece, vox_error *err) {
    voxtral_context *ctx = q->ctx;
    vox_model *m = ctx->model;
    const vox_segment *pc = &r->pieces[piece];
    size_t n = pc->audio_end - pc->audio_start;
    vox_seq *s = calloc(1, sizeof *s);
    if (!s || !(s->r = calloc(1, sizeof *s->r))) {
        free(s);
        vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        return NULL;
    }
    s->req = r;
    s->piece = piece;
    s->r->audio_seconds = (double)n / VOX_SAMPLE_RATE;
    s->r->language = r->p.language;
    vox_status st = VOX_OK;
    if (n == 0) st = vox_fail(err, VOX_ERR_INVALID_ARG, "the audio is empty");
    s->n_chunks = vox_mel_chunk_count(n);
    if (!st) st = vox_prompt_build(ctx, s->n_chunks * (size_t)vox_encoder_tokens_per_chunk(m),
                                   r->p.language, &s->prompt, &s->n_prompt, &s->audio_at, err);
    if (!st && (int64_t)s->n_prompt >= m->cfg.decoder.max_position_embeddings)
        st = vox_fail(err, VOX_ERR_TOO_LONG, "the prompt needs %zu positions but the model's "
                      "context is %d: split the audio into shorter files", s->n_prompt,
                      m->cfg.decoder.max_position_embeddings);
    s->forcing = r->p.force_ids && r->p.n_force_ids > 0;
    for (size_t i = 0; !st && s->forcing && i < r->p.n_force_ids; i++)
        if (r->p.force_ids[i] < 0 || r->p.force_ids[i] >= m->cfg.decoder.vocab_size)
            st = vox_fail(err, VOX_ERR_INVALID_ARG, "forced id %d is outside the vocabulary (0..%d)",
                          r->p.force_ids[i], m->cfg.decoder.vocab_size - 1);
    if (!st) {
        s->max_new = token_budget(m, &r->p, s->n_prompt, s->r->audio_seconds);
        s->want_stats = r->p.logprobs > 0 || s->forcing;
        s->k = r->p.logprobs > VOX_MAX_TOP_K ? VOX_MAX_TOP_K : r->p.logprobs;
        s->need_blocks = blocks_for((int64_t)s->n_prompt + s->max_new);
        s->r->ids = malloc((size_t)(s->max_new ? s->max_new : 1) * sizeof *s->r->ids);
        if (s->want_stats) s->r->tokens = calloc((size_t)(s->max_new ? s->max_new : 1), sizeof *s->r->tokens);
        if (!s->r->ids || (s->want_stats && !s->r->tokens))
            st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    if (!st && r->p.dump_path) {
        size_t hidden = (size_t)m->cfg.decoder.hidden, vocab = (size_t)m->cfg.decoder.vocab_size;
        s->dump_audio = malloc(s->n_chunks * (size_t)vox_encoder_tokens_per_chunk(m) * hidden * sizeof(float));
        s->dump_logits = malloc((size_t)(s->max_new ? s->max_new : 1) * vocab * sizeof(float));
        if (!s->dump_audio || !s->dump_logits)
            st = vox_fail(err, VOX_ERR_NOMEM, "out of memory for --dump-tensors");
    }
    if (st) {
        seq_free(q, s);
        return NULL;
    }
    return s;
}

/* Runs mel, the encoder and the prompt embedding for the sequences in g (their x_prompt is
 * filled); times are shared by chunks. */
static vox_status encode_group(voxtral_queue *q, vox_seq **g, int n, size_t chunks, vox_error *err) {
    voxtral_context *ctx = q->ctx;
    vox_model *m = ctx->model;
    vox_backend *be = ctx->be;
    const vox_decoder_config *d = &m->cfg.decoder;
    int per_chunk = vox_encoder_tokens_per_chunk(m);
    vox_tensor features = {0}, audio = {0};
    int mk0 = be->mark(be);
    int64_t fshape[3] = {(int64_t)chunks, m->cfg.encoder.num_mel_bins, VOX_CHUNK_FRAMES};
    vox_status st = vox_tensor_new(be, &features, be->act_type, 3, fshape, err);
    size_t c0 = 0;
    for (int i = 0; !st && i < n; i++) {
        const vox_segment *pc = &g[i]->req->pieces[g[i]->piece];
        vox_tensor view = vox_tensor_rows(&features, (int64_t)c0, (int64_t)g[i]->n_chunks);
        st = be->log_mel(be, &view, g[i]->req->samples + pc->audio_start,
                         pc->audio_end - pc->audio_start, err);
        c0 += g[i]->n_chunks;
    }
    int mk1 = be->mark(be);
    if (!st) st = vox_tensor_new2(be, &audio, be->act_type, (int64_t)chunks * per_chunk, d->hidden, err);
    if (!st) st = vox_encoder_forward(m, &features, chunks, &audio, err);
    vox_tensor_free(be, &features);
    int mk2 = be->mark(be);
    c0 = 0;
    for (int i = 0; !st && i < n; i++) {
        vox_seq *s = g[i];
        int64_t n_audio = (int64_t)s->n_chunks * per_chunk;
        vox_tensor rows = vox_tensor_rows(&audio, (int64_t)c0 * per_chunk, n_audio);
        c0 += s->n_chunks;
        if (s->dump_audio &&
            (st = be->download_f32(be, s->dump_audio, &rows, (size_t)(n_audio * d->hidden), err)))
            break;
        if ((st = vox_tensor_new2(be, &s->x_prompt, be->act_type, (int64_t)s->n_prompt, d->hidden, err)))
            break;
        be->embed(be, &s->x_prompt, &m->embedding, s->prompt, s->n_prompt);
        vox_tensor dst = vox_tensor_rows(&s->x_prompt, (int64_t)s->audio_at, n_audio);
        be->copy(be, &dst, &rows);
    }
    vox_tensor_free(be, &audio);
    int mk3 = be->mark(be);
    if (!st) st = be->sync(be, err);
    if (st) {
        for (int i = 0; i < n; i++) vox_tensor_free(be, &g[i]->x_prompt);
        return st;
    }
    double mel = be->elapsed_ms(be, mk0, mk1), enc = be->elapsed_ms(be, mk1, mk2),
           emb = be->elapsed_ms(be, mk2, mk3);
    q->stats.gpu_ms += mel + enc + emb;
    for (int i = 0; i < n; i++) {
        double share = (double)g[i]->n_chunks / (double)chunks;
        g[i]->r->timings.mel_ms += mel * share;
        g[i]->r->timings.audio_encoder_ms += enc * share;
        g[i]->r->timings.token_embedding_ms += emb * share;
    }
    return VOX_OK;
}

/* encode_group, in halves when the device runs out of memory for the whole group: a smaller
 * group rather than failed requests. */
static vox_status encode_split(voxtral_queue *q, vox_seq **g, int n, vox_error *err) {
    size_t chunks = 0;
    for (int i = 0; i < n; i++) chunks += g[i]->n_chunks;
    vox_status st = encode_group(q, g, n, chunks, err);
    if (st != VOX_ERR_DEVICE || n == 1) return st;
    vox_error sync_err;
    if (q->ctx->be->sync(q->ctx->be, &sync_err)) return st; /* the device itself failed */
    st = encode_split(q, g, n / 2, err);
    return st ? st : encode_split(q, g + n / 2, n - n / 2, err);
}

/* Admits what fits: pieces in submission order while a slot is free and the pool can promise
 * their blocks, up to one encoder group of chunks (a piece longer than a group goes alone).
 * Returns VOX_OK, or a device failure that ends the run. */
static vox_status admit(voxtral_queue *q, bool *grow, vox_error *err) {
    vox_seq *g[VOX_ENCODER_CHUNK_BATCH];
    int n = 0;
    size_t chunks = 0;
    *grow = false;
    pthread_mutex_lock(&q->rd.mu);
    while (q->n_active + n < q->max_seqs && n < VOX_ENCODER_CHUNK_BATCH) {
        vox_request *r = next_piece(q);
        if (!r) break;
        size_t piece = r->pieces_admitted;
        const vox_segment *pc = &r->pieces[piece];
        size_t pc_chunks = vox_mel_chunk_count(pc->audio_end - pc->audio_start);
        if (n > 0 && chunks + pc_chunks > VOX_ENCODER_CHUNK_BATCH) break;
        pthread_mutex_unlock(&q->rd.mu);
        vox_error perr = {0};
        vox_seq *s = seq_new(q, r, piece, &perr);
        pthread_mutex_lock(&q->rd.mu);
        if (!s) { /* this piece cannot run: its request fails, the others go on */
            r->pieces_admitted++;
            fail_request(r, perr.code, perr.msg);
            pthread_mutex_unlock(&q->rd.mu);
            piece_done(q, r);
            pthread_mutex_lock(&q->rd.mu);
            continue;
        }
        if (s->need_blocks > q->table_width || s->need_blocks > q->kv.n_blocks - 1) {
            /* longer than the pool or the block table was sized for: resize once idle */
            seq_free(q, s);
            *grow = true;
            break;
        }
        if (q->committed_blocks + s->need_blocks > q->kv.n_blocks - 1) {
            seq_free(q, s); /* waits for blocks to come back */
            break;
        }
        r->pieces_admitted++;
        q->committed_blocks += s->need_blocks;
        s->blocks = malloc((size_t)q->table_width * sizeof *s->blocks);
        s->t_admit = vox_wall_ms();
        s->r->timings.queue_ms = s->t_admit - (r->t_ready > r->t_submit ? r->t_ready : r->t_submit);
        q->stats.queue_wait_ms += s->r->timings.queue_ms;
        g[n++] = s;
        chunks += s->n_chunks;
    }
    pthread_mutex_unlock(&q->rd.mu);
    if (n == 0) return VOX_OK;
    vox_status st = VOX_OK;
    for (int i = 0; i < n; i++)
        if (!g[i]->blocks) st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    if (!st) st = encode_split(q, g, n, err);
    release_admitted(q); /* their samples are no longer needed */
    if (st) {
        /* A failed group (the device ran out of memory, say) fails its requests alone; a device
         * that no longer works fails the next sync too, and the run ends there. */
        vox_error sync_err;
        bool device_dead = q->ctx->be->sync(q->ctx->be, &sync_err) != VOX_OK;
        for (int i = 0; i < n; i++) {
            q->active[q->n_active++] = g[i]; /* so that seq_finish finds and releases it */
            seq_finish(q, g[i], st, err->msg);
        }
        return device_dead ? st : VOX_OK;
    }
    for (int i = 0; i < n; i++) q->active[q->n_active++] = g[i];
    return VOX_OK;
}

/* ---- one decoder step ------------------------------------------------------------------------ */

/* Takes blocks so that s can hold `positions` positions (promised at admission: never fails). */
static void seq_reserve(voxtral_queue *q, vox_seq *s, int64_t positions) {
    while ((int64_t)s->n_blocks * VOX_KV_BLOCK < positions) {
        int32_t b = vox_kv_pool_take(&q->kv);
        VOX_ASSERT(b >= 1 && s->n_blocks < s->need_blocks);
        s->blocks[s->n_blocks++] = b;
    }
}

/* The token chosen for s from its logits' statistics; false when s ends here. */
static bool take_token(voxtral_queue *q, vox_seq *s, const vox_logits_stats *st) {
    int eos = q->ctx->model->cfg.tokenizer.eos;
    const voxtral_transcribe_params *p = &s->req->p;
    size_t step = s->r->n_ids;
    int32_t id = s->forcing ? p->force_ids[step] : st->argmax;
    float logprob = st->chosen_logprob;
    if (!s->forcing && p->ignore_eos && id == eos) {
        /* benchmarks decode exactly N tokens: the best token that is not </s> */
        int i = st->top_ids[0] == eos ? 1 : 0;
        id = st->top_ids[i];
        logprob = st->top_logprobs[i];
    }
    if (!s->forcing && !p->ignore_eos && id == eos) return false;
    s->r->ids[s->r->n_ids] = id;
    if (s->want_stats) {
        voxtral_token *t = &s->r->tokens[s->r->n_ids];
        t->id = id;
        t->logprob = logprob;
        t->margin = st->argmax_margin;
        t->n_top = s->k < st->k ? s->k : st->k;
        memcpy(t->top_ids, st->top_ids, sizeof(int32_t) * (size_t)t->n_top);
        memcpy(t->top_logprobs, st->top_logprobs, sizeof(float) * (size_t)t->n_top);
    }
    s->r->n_ids++;
    if (p->on_token && !p->on_token(id, p->user_data)) return false;
    if ((int64_t)s->r->n_ids >= s->max_new) return false;
    s->next_id = id;
    return true;
}

static vox_status step(voxtral_queue *q, vox_error *err) {
    voxtral_context *ctx = q->ctx;
    vox_model *m = ctx->model;
    vox_backend *be = ctx->be;
    int rows = 0, n_seqs = 0, n_logits = 0, tw = q->table_width, k_ask = 2;
    bool any_logprobs = false;
    /* decode rows first, then prompt chunks while the step has room */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < q->n_active; i++) {
            vox_seq *s = q->active[i];
            if (pass == 0 ? !s->decoding : s->decoding || rows >= q->step_rows) continue;
            int64_t n = pass == 0 ? 1 : (int64_t)s->n_prompt - s->n_prefilled;
            if (n > q->step_rows - rows) n = q->step_rows - rows;
            seq_reserve(q, s, s->n_pos + n);
            q->b_row0[n_seqs] = rows;
            q->b_len[n_seqs] = (int32_t)(s->n_pos + n);
            memcpy(q->b_tables + (size_t)n_seqs * tw, s->blocks, (size_t)s->n_blocks * sizeof(int32_t));
            for (int j = s->n_blocks; j < tw; j++) q->b_tables[(size_t)n_seqs * tw + j] = 0;
            for (int64_t j = 0; j < n; j++) {
                int64_t pos = s->n_pos + j;
                q->b_pos[rows + j] = (int32_t)pos;
                q->b_slot[rows + j] = s->blocks[pos / VOX_KV_BLOCK] * VOX_KV_BLOCK + (int32_t)(pos % VOX_KV_BLOCK);
            }
            if (pass == 0) {
                q->b_ids[n_seqs] = s->next_id;
            } else {
                vox_tensor dst = vox_tensor_rows(&q->dec.x, rows, n);
                vox_tensor src = vox_tensor_rows(&s->x_prompt, s->n_prefilled, n);
                be->copy(be, &dst, &src);
            }
            q->b_seq[n_seqs] = s;
            bool wants_logits = pass == 0 || s->n_prefilled + n == (int64_t)s->n_prompt;
            if (wants_logits) {
                q->b_logit_rows[n_logits] = rows + (int)n - 1;
                q->b_logit_seq[n_logits] = s;
                q->b_chosen[n_logits] = s->forcing ? s->req->p.force_ids[s->r->n_ids] : -1;
                if (s->k > k_ask) k_ask = s->k;
                any_logprobs |= s->want_stats;
                n_logits++;
            }
            rows += (int)n;
            n_seqs++;
        }
        if (pass == 0) q->b_row0[n_seqs] = rows; /* (overwritten when prompt chunks follow) */
    }
    (void)any_logprobs;
    if (rows == 0) return VOX_OK;
    q->b_row0[n_seqs] = rows;
    int n_decode = 0;
    while (n_decode < n_seqs && q->b_seq[n_decode]->decoding) n_decode++;
    vox_batch b = {.n_rows = rows, .n_seqs = n_seqs, .n_decode = n_decode, .ids = q->b_ids,
                   .row_pos = q->b_pos, .row_slot = q->b_slot, .seq_row0 = q->b_row0,
                   .seq_len = q->b_len, .tables = q->b_tables, .table_width = tw,
                   .block_size = VOX_KV_BLOCK, .logit_rows = q->b_logit_rows, .n_logits = n_logits};
    int mk0 = be->mark(be);
    vox_status st = vox_decoder_batch_step(m, &q->kv, &q->dec, &b, err);
    int mk1 = be->mark(be);
    vox_tensor logits = vox_tensor_rows(&q->dec.logits, 0, n_logits > 0 ? n_logits : 1);
    if (!st && n_logits > 0) st = be->logits_stats(be, &logits, q->b_chosen, k_ask, q->b_stats, err);
    if (!st && n_logits == 0) st = be->sync(be, err); /* for the step's time */
    if (st) return st;
    /* --dump-tensors: the logits each dumping sequence chose from */
    for (int i = 0; i < n_logits; i++) {
        vox_seq *s = q->b_logit_seq[i];
        if (!s->dump_logits) continue;
        size_t V = (size_t)m->cfg.decoder.vocab_size;
        vox_tensor row = vox_tensor_rows(&q->dec.logits, i, 1);
        if ((st = be->download_f32(be, s->dump_logits + s->dump_steps * V, &row, V, err))) return st;
        s->dump_steps++;
    }

    /* time shares, then the state of every sequence */
    double t = be->elapsed_ms(be, mk0, mk1);
    q->stats.gpu_ms += t;
    q->stats.steps++;
    if (n_decode > 0) {
        q->stats.decode_steps++;
        q->decode_rows_sum += n_decode;
    }
    for (int i = 0; i < n_seqs; i++) {
        vox_seq *s = q->b_seq[i];
        int n = q->b_row0[i + 1] - q->b_row0[i];
        double share = t * n / rows;
        if (i < n_decode) {
            s->r->timings.decode_ms += share;
            s->n_pos += 1;
        } else {
            s->r->timings.prefill_ms += share;
            s->n_prefilled += n;
            s->n_pos += n;
            if (s->n_prefilled == (int64_t)s->n_prompt) vox_tensor_free(be, &s->x_prompt);
        }
    }
    /* KV use at its peak: blocks held against positions written */
    size_t held = (size_t)(q->kv.n_blocks - 1 - q->kv.n_free) * VOX_KV_BLOCK, used = 0;
    for (int i = 0; i < q->n_active; i++) used += (size_t)q->active[i]->n_pos;
    size_t per_pos = vox_kv_bytes_per_position(m);
    if (held * per_pos > q->stats.kv_peak_used_bytes) {
        q->stats.kv_peak_used_bytes = held * per_pos;
        q->stats.kv_waste = held ? 1.0 - (double)used / (double)held : 0.0;
    }
    for (int i = 0; i < n_logits; i++) {
        vox_seq *s = q->b_logit_seq[i];
        if (!take_token(q, s, &q->b_stats[i])) {
            s->finished = true;
            continue;
        }
        s->decoding = true;
    }
    for (int i = 0; i < q->n_active;) {
        vox_seq *s = q->active[i];
        if (s->finished) {
            seq_finish(q, s, VOX_OK, NULL);
            continue;
        }
        i++;
    }
    return VOX_OK;
}

/* ---- the run --------------------------------------------------------------------------------- */

/* Waits up to 50 ms for a reader to finish a request (so that a cancel is seen soon). */
static void wait_reader(voxtral_queue *q) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&q->rd.mu);
    vox_request *r = q->next_admit < q->rd.n_reqs ? q->rd.reqs[q->next_admit] : NULL;
    if (r && (r->state == VOX_REQ_QUEUED || r->state == VOX_REQ_READING))
        pthread_cond_timedwait(&q->rd.ready, &q->rd.mu, &ts);
    pthread_mutex_unlock(&q->rd.mu);
}

/* Sizes the pool from what is known: the decoded requests' pieces exactly, the others as 30 s
 * requests with the default budget; at least the next piece. */
static vox_status size_from_queue(voxtral_queue *q, vox_error *err) {
    vox_model *m = q->ctx->model;
    int64_t typical = typical_positions(m), longest = typical, total = 0;
    size_t seqs = 0;
    pthread_mutex_lock(&q->rd.mu);
    for (size_t i = q->next_admit; i < q->rd.n_reqs && seqs < (size_t)q->max_batch; i++) {
        vox_request *r = q->rd.reqs[i];
        if (!r) continue;
        if (r->state != VOX_REQ_READY) {
            if (r->state != VOX_REQ_FAILED) {
                total += typical;
                seqs++;
            }
            continue;
        }
        for (size_t p = r->pieces_admitted; p < r->n_pieces && seqs < (size_t)q->max_batch; p++) {
            size_t n = r->pieces[p].audio_end - r->pieces[p].audio_start;
            size_t n_audio = vox_mel_chunk_count(n) * (size_t)vox_encoder_tokens_per_chunk(m);
            int64_t prompt = 3 + (int64_t)n_audio + 2 + 8; /* + room for a language tag */
            int64_t pos = prompt + token_budget(m, &r->p, (size_t)prompt, (double)n / VOX_SAMPLE_RATE);
            if (pos > m->cfg.decoder.max_position_embeddings) pos = m->cfg.decoder.max_position_embeddings;
            if (pos > longest) longest = pos;
            total += pos;
            seqs++;
        }
    }
    pthread_mutex_unlock(&q->rd.mu);
    if (seqs == 0) seqs = 1;
    if (total < longest) total = longest;
    return size_for(q, (int)seqs, longest, total, err);
}

vox_status voxtral_queue_run(voxtral_queue *q, vox_error *err) {
    vox_status st = VOX_OK;
    for (;;) {
        if (q->cancel) break;
        pthread_mutex_lock(&q->rd.mu);
        bool all_done = q->n_done == q->rd.n_reqs;
        pthread_mutex_unlock(&q->rd.mu);
        if (all_done) break;
        if (!q->sized) {
            wait_reader(q);
            pthread_mutex_lock(&q->rd.mu);
            vox_request *r = next_piece(q); /* completes failed requests at the head */
            pthread_mutex_unlock(&q->rd.mu);
            if (!r) continue;
            if ((st = size_from_queue(q, err))) break;
        }
        bool grow = false;
        if ((st = admit(q, &grow, err))) break;
        if (grow && q->n_active == 0) {
            unsize(q); /* sized again from the pieces now known */
            continue;
        }
        if (q->n_active == 0) {
            wait_reader(q);
            continue;
        }
        if ((st = step(q, err))) break;
    }
    /* Cancelled, or the device failed: whatever is not complete ends with that. */
    if (q->cancel && !st) st = vox_fail(err, VOX_ERR_INTERRUPTED, "interrupted");
    if (st) {
        char msg[VOX_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        while (q->n_active > 0) {
            vox_seq *s = q->active[q->n_active - 1];
            s->req->pieces_admitted = s->req->n_pieces; /* its other pieces will not run */
            seq_finish(q, s, st, msg);
        }
        pthread_mutex_lock(&q->rd.mu);
        q->rd.next_read = q->rd.n_reqs; /* readers take nothing more */
        for (size_t i = 0; i < q->rd.n_reqs; i++) {
            vox_request *r = q->rd.reqs[i];
            if (!r) continue;
            /* a reader may still be decoding it: wait for that */
            while (r->state == VOX_REQ_READING) pthread_cond_wait(&q->rd.ready, &q->rd.mu);
            fail_request(r, st, msg);
            pthread_mutex_unlock(&q->rd.mu);
            complete(q, i);
            pthread_mutex_lock(&q->rd.mu);
        }
        q->next_admit = q->rd.n_reqs;
        pthread_mutex_unlock(&q->rd.mu);
    }
    return st;
}

/* ---- creation and submission ----------------------------------------------------------------- */

static int default_max_batch(const voxtral_context *ctx) {
    if (!ctx->be->graph_begin) return 16; /* the CPU reference */
    size_t per_request = (size_t)(3 + vox_encoder_tokens_per_chunk(ctx->model) + 2 + 128) *
                         vox_kv_bytes_per_position(ctx->model);
    size_t n = kv_budget(ctx->be) / per_request;
    return n < 1 ? 1 : n > VOX_MAX_BATCH ? VOX_MAX_BATCH : (int)n;
}

vox_status voxtral_queue_create(voxtral_context *ctx, const voxtral_queue_params *params,
                                voxtral_queue **out, vox_error *err) {
    *out = NULL;
    if (!params->on_complete)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_create: on_complete is required");
    voxtral_queue *q = calloc(1, sizeof *q);
    if (!q) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    q->ctx = ctx;
    q->qp = *params;
    q->max_batch = params->max_batch > 0 ? params->max_batch : default_max_batch(ctx);
    if (q->max_batch > 4096) q->max_batch = 4096;
    int ahead = params->read_ahead > 0 ? params->read_ahead : 2 * q->max_batch;
    if (ahead < 16) ahead = 16;
    int threads = params->reader_threads;
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores < 2 ? 2 : cores > 8 ? 8 : (int)cores;
    }
    vox_status st = vox_reader_init(&q->rd, threads, ahead, err);
    if (st) {
        free(q);
        return st;
    }
    *out = q;
    return VOX_OK;
}

void voxtral_queue_free(voxtral_queue *q) {
    if (!q) return;
    while (q->n_active > 0) {
        vox_seq *s = q->active[--q->n_active];
        vox_kv_pool_give(&q->kv, s->blocks, s->n_blocks);
        seq_free(q, s);
    }
    unsize(q);
    vox_reader_destroy(&q->rd);
    free(q);
}

static vox_status submit(voxtral_queue *q, vox_request *r, const voxtral_transcribe_params *p,
                         uint64_t tag, vox_error *err) {
    if (p->logprobs < 0 || p->logprobs > VOX_MAX_TOP_K) {
        vox_request_free(r);
        return vox_fail(err, VOX_ERR_INVALID_ARG, "logprobs must be between 0 and %d", VOX_MAX_TOP_K);
    }
    r->tag = tag;
    r->p = *p;
    r->t_submit = vox_wall_ms();
    r->state = VOX_REQ_QUEUED;
    vox_status st = vox_reader_push(&q->rd, r, err);
    if (st) vox_request_free(r);
    return st;
}

vox_status voxtral_queue_submit_file(voxtral_queue *q, const char *path,
                                     const voxtral_transcribe_params *params, uint64_t tag,
                                     vox_error *err) {
    vox_request *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    return submit(q, r, params, tag, err);
}

vox_status voxtral_queue_submit_pcm(voxtral_queue *q, const float *samples, size_t n_samples,
                                    const voxtral_transcribe_params *params, uint64_t tag,
                                    vox_error *err) {
    if (n_samples == 0) return vox_fail(err, VOX_ERR_INVALID_ARG, "the audio is empty");
    vox_request *r = calloc(1, sizeof *r);
    if (!r || !(r->samples = malloc(n_samples * sizeof *samples))) {
        free(r);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    memcpy(r->samples, samples, n_samples * sizeof *samples);
    r->n_samples = n_samples;
    return submit(q, r, params, tag, err);
}
