/* One device's engine of the queue (queue.h): continuous batching of many requests.
 *
 * Requests (files or PCM) wait in submission order; reader threads decode them ahead of the
 * device (reader.c) and cut them into pieces (the whole audio, or its segments). Each piece
 * becomes a sequence on the engine that admits it (with several devices, each engine runs this
 * loop on a thread of its own, all taking pieces from the one queue). The loop repeats one
 * scheduler step:
 *   1. admission: while a slot is free and the KV pool can promise a newcomer every block it may
 *      need (prompt + token budget), take the next pieces, up to one encoder group of chunks:
 *      their mel and audio encoder run together, and their prompts are embedded;
 *   2. one decoder step over a batch of rows (decoder.c): one row for every decoding sequence,
 *      plus prompt chunks of sequences being prefilled, up to a row budget a step (chunked
 *      prefill, as Sarathi-Serve and vLLM do), so a newcomer's prompt never freezes the others;
 *      the prompts of the largest token budgets go first (schedule.h: the run ends with its
 *      longest sequence, so that one should start first);
 *   3. the logits of the decode rows and of completed prompts choose tokens (one host sync); a
 *      sequence that reaches </s> or its budget leaves at once and its blocks go back to the pool.
 * A request completes (callback) when its last piece has.
 *
 * Memory: the KV pool is paged (blocks of VOX_KV_BLOCK positions, pipeline.h) and sized once
 * from free device memory (kv_budget); blocks are taken as positions are written, so
 * at most one partly filled block a sequence is held but not used.
 *
 * Timing: every stage is bracketed by device marks. A step's time is shared between its rows:
 * the decode rows' share is split evenly among the decoding sequences and counted as their
 * decode time, each prompt chunk's share is its sequence's prefill time; an admission group's
 * mel, encoder and embedding times are split by chunks. Summed over requests, the stages give
 * the queue's device time, whatever the batch. VOX_STEP_TRACE=FILE appends one line a step and
 * an encoder group to FILE (trace_* below): where a run's device time goes, step by step. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "engine/queue.h"
#include "engine/schedule.h"
#include "format/safetensors.h"
#include "mel/mel.h"

#define VOX_KV_BLOCK 16          /* positions a KV block */
#define VOX_MAX_BATCH 256        /* most sequences in flight by default */
/* Rows a decoder step runs at most: decode rows first, prompt chunks fill the rest. Large
 * enough that prefill GEMMs run near full speed, small enough that a step stays short.
 * VOX_STEP_ROWS=N overrides it (tests cut prompts into awkward chunks with it). */
#define VOX_STEP_ROWS 2048
/* Steps that must succeed after a failed one before its halved limits double again (step_failed):
 * long enough that memory taken by another process is not fought for every few steps, short
 * enough that a passing shortage does not slow the rest of a long run. */
#define VOX_REGROW_STEPS 64

static int step_rows_for(int max_seqs) {
    const char *env = getenv("VOX_STEP_ROWS");
    long n = env && *env ? strtol(env, NULL, 10) : VOX_STEP_ROWS;
    if (n < 1 || n > 1 << 20) n = VOX_STEP_ROWS;
    return n > max_seqs ? (int)n : max_seqs;
}

/* ---- sizing ---------------------------------------------------------------------------------- */

/* Tokens a piece may generate: forced ids, or the budget asked, or the default for its length;
 * capped by the context (*asked, if not NULL: the budget before the cap). */
static int64_t token_budget(const vox_model *m, const voxtral_transcribe_params *p, size_t n_prompt,
                            double seconds, int64_t *asked) {
    int64_t n = p->force_ids && p->n_force_ids ? (int64_t)p->n_force_ids
                : p->max_new_tokens > 0       ? p->max_new_tokens
                                              : voxtral_default_max_new_tokens(seconds);
    if (asked) *asked = n;
    int64_t room = m->cfg.decoder.max_position_embeddings - (int64_t)n_prompt;
    return n < room ? n : room;
}

/* Positions of a 30 s request with the default budget: what the pool and the batch are sized
 * for when the requests are not known yet. */
static int64_t typical_positions(const vox_model *m) {
    return VOX_PROMPT_FIXED_TOKENS + vox_encoder_tokens_per_chunk(m) + voxtral_default_max_new_tokens(30.0);
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

static void free_batch_arrays(vox_engine *e) {
    free(e->b_ids), free(e->b_pos), free(e->b_slot), free(e->b_row0), free(e->b_len);
    free(e->b_tables), free(e->b_logit_rows), free(e->b_chosen), free(e->b_logit_seq);
    free(e->b_seq), free(e->b_stats), free(e->active), free(e->prefilling);
    e->b_ids = e->b_pos = e->b_slot = e->b_row0 = e->b_len = e->b_tables = e->b_logit_rows =
        e->b_chosen = NULL;
    e->b_logit_seq = e->b_seq = e->active = e->prefilling = NULL;
    e->b_stats = NULL;
}

static void unsize(vox_engine *e) {
    vox_model *m = e->ctx->model;
    if (!e->sized) return;
    vox_decoder_batch_free(m, &e->dec);
    vox_kv_pool_free(m, &e->kv);
    free_batch_arrays(e);
    e->sized = false;
}

/* Sizes the pool and the step for max_seqs sequences of up to `longest` positions each and
 * `positions` positions in all; on a device that cannot hold it, halves the pool until one
 * sequence of `longest` positions fits. */
static vox_status size_for(vox_engine *e, int max_seqs, int64_t longest, int64_t positions,
                           vox_error *err) {
    vox_model *m = e->ctx->model;
    unsize(e);
    size_t per_pos = vox_kv_bytes_per_position(m);
    int64_t budget_blocks = (int64_t)(kv_budget(m->be) / (per_pos * VOX_KV_BLOCK));
    int64_t want = blocks_for(positions) + max_seqs + 1; /* + one partial block a sequence */
    int64_t min_blocks = blocks_for(longest) + 1;
    int64_t n_blocks = want < budget_blocks ? want : budget_blocks;
    if (n_blocks < min_blocks) n_blocks = min_blocks;
    e->table_width = blocks_for(longest);
    e->step_rows = step_rows_for(max_seqs);
    vox_status st;
    for (;;) {
        st = vox_kv_pool_init(m, &e->kv, (int)n_blocks, VOX_KV_BLOCK, err);
        if (!st) {
            st = vox_decoder_batch_init(m, &e->dec, e->step_rows, max_seqs, e->table_width,
                                        VOX_KV_BLOCK, err);
            if (st) vox_kv_pool_free(m, &e->kv);
        }
        if (st != VOX_ERR_DEVICE || n_blocks <= min_blocks) break;
        /* out of device memory: a smaller pool (and batch) rather than a failed run */
        n_blocks = n_blocks / 2 > min_blocks ? n_blocks / 2 : min_blocks;
        if (max_seqs > 1) max_seqs = (max_seqs + 1) / 2;
        e->step_rows = step_rows_for(max_seqs);
    }
    if (st) return st;
    e->max_seqs = max_seqs;
    e->step_seqs = max_seqs;
    e->step_row_cap = e->step_rows;
    e->steps_since_shrink = 0;
    size_t rows = (size_t)e->step_rows, seqs = (size_t)max_seqs;
    e->b_ids = malloc(seqs * sizeof *e->b_ids);
    e->b_pos = malloc(rows * sizeof *e->b_pos);
    e->b_slot = malloc(rows * sizeof *e->b_slot);
    e->b_row0 = malloc((seqs + 1) * sizeof *e->b_row0);
    e->b_len = malloc(seqs * sizeof *e->b_len);
    e->b_tables = malloc(seqs * (size_t)e->table_width * sizeof *e->b_tables);
    e->b_logit_rows = malloc(seqs * sizeof *e->b_logit_rows);
    e->b_chosen = malloc(seqs * sizeof *e->b_chosen);
    e->b_logit_seq = malloc(seqs * sizeof *e->b_logit_seq);
    e->b_seq = malloc(seqs * sizeof *e->b_seq);
    e->b_stats = malloc(seqs * sizeof *e->b_stats);
    e->active = calloc(seqs, sizeof *e->active);
    e->prefilling = malloc(seqs * sizeof *e->prefilling);
    e->sized = true;
    e->committed_blocks = 0;
    e->stats.kv_bytes = (size_t)e->kv.n_blocks * VOX_KV_BLOCK * per_pos;
    e->stats.kv_block_size = VOX_KV_BLOCK;
    if (!e->b_ids || !e->b_pos || !e->b_slot || !e->b_row0 || !e->b_len || !e->b_tables ||
        !e->b_logit_rows || !e->b_chosen || !e->b_logit_seq || !e->b_seq || !e->b_stats || !e->active ||
        !e->prefilling) {
        unsize(e);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    return VOX_OK;
}

/* ---- sequences ------------------------------------------------------------------------------- */

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

static void seq_free(vox_engine *e, vox_seq *s) {
    vox_tensor_free(e->ctx->be, &s->x_prompt);
    voxtral_result_free(s->r);
    free(s->prompt);
    free(s->blocks);
    free(s->dump_audio);
    free(s->dump_logits);
    free(s);
}

/* Takes s out of the batch: its blocks go back to the pool; its result (when st is VOX_OK) to
 * its request. */
static void seq_finish(vox_engine *e, vox_seq *s, vox_status st, const char *msg) {
    vox_kv_pool_give(&e->kv, s->blocks, s->n_blocks);
    e->committed_blocks -= s->need_blocks;
    vox_error err = {0};
    if (!st) st = vox_tokenizer_decode(e->ctx->tok, s->r->ids, s->r->n_ids, &s->r->text, &err);
    if (!st && s->req->p.dump_path) st = dump_write(e->ctx->model, s, &err);
    /* generation that ran into the context's end, short of its budget: the text is cut. The
     * remedy named is --segment where the audio's prompt is what fills the context (more than one
     * 30 s chunk: segments have one each), else a smaller token budget. */
    if (!st && !s->forcing && (int64_t)s->r->n_ids >= s->max_new && s->max_new < s->asked) {
        char w[300];
        snprintf(w, sizeof w, "the transcript stops at the end of the model's context (%d "
                 "positions: %zu of the prompt, %lld generated, %lld asked): %s",
                 e->ctx->model->cfg.decoder.max_position_embeddings, s->n_prompt,
                 (long long)s->max_new, (long long)s->asked,
                 s->n_chunks > 1 ? "audio this long needs --segment"
                                 : "the token budget asked is more than the context holds");
        if (!(s->r->warning = strdup(w))) st = vox_fail(&err, VOX_ERR_NOMEM, "out of memory");
    }
    if (st && !msg) msg = err.msg;
    voxtral_result *result = NULL;
    if (!st) {
        s->r->timings.n_prompt_tokens = (int)s->n_prompt;
        s->r->timings.n_generated = (int)s->r->n_ids;
        result = s->r;
        s->r = NULL;
        e->stats.requests++;
    }
    for (int i = 0; i < e->n_active; i++)
        if (e->active[i] == s) {
            memmove(&e->active[i], &e->active[i + 1], (size_t)(e->n_active - i - 1) * sizeof *e->active);
            e->n_active--;
            break;
        }
    vox_request *r = s->req;
    size_t piece = s->piece;
    seq_free(e, s);
    vox_queue_piece_done(e->q, e, r, piece, result, st, msg);
}

/* ---- admission: the next pieces through mel, encoder and prompt embedding ------------------- */

static vox_seq *seq_new(vox_engine *e, vox_request *r, size_t piece, vox_error *err) {
    voxtral_context *ctx = e->ctx;
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
    /* every forced id is scored, or the request fails: token_budget would cut the list short */
    if (!st && s->forcing &&
        (int64_t)(s->n_prompt + r->p.n_force_ids) > m->cfg.decoder.max_position_embeddings)
        st = vox_fail(err, VOX_ERR_TOO_LONG, "%zu forced ids do not fit: the model's context is %d "
                      "positions and the prompt takes %zu, so at most %lld ids",
                      r->p.n_force_ids, m->cfg.decoder.max_position_embeddings, s->n_prompt,
                      (long long)(m->cfg.decoder.max_position_embeddings - (int64_t)s->n_prompt));
    if (!st) {
        s->max_new = token_budget(m, &r->p, s->n_prompt, s->r->audio_seconds, &s->asked);
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
        seq_free(e, s);
        return NULL;
    }
    return s;
}

/* Whether e's device still works after a failure: an error that is not sticky (out of memory,
 * a bad launch) leaves it working, while a lost device (a sticky CUDA error poisons the context)
 * fails every sync from then on. */
static bool device_works(vox_engine *e) {
    vox_error ignored;
    return !vox_fault_device_lost(&e->fault) && e->ctx->be->sync(e->ctx->be, &ignored) == VOX_OK;
}

/* ---- VOX_STEP_TRACE -------------------------------------------------------------------------- */

/* One line of the trace: what the engine ran, its device time, and the wall clock (ms from the
 * engine's start: `at` when the line is written, `gap` since the previous line, i.e. host time
 * plus device time the events do not cover). */
static void trace_line(vox_engine *e, const char *fmt, ...) {
    if (!e->trace) return;
    double now = vox_wall_ms();
    fprintf(e->trace, "%s at %.3f gap %.3f ", e->ctx->be->name, now - e->trace_t0, now - e->trace_last);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(e->trace, fmt, ap);
    va_end(ap);
    fputc('\n', e->trace);
    e->trace_last = now;
}

/* The most chunks the audio encoder runs at once for a group of `chunks` chunks. */
static int chunks_at_once(const vox_engine *e, size_t chunks) {
    return chunks < (size_t)e->encoder_chunks ? (int)chunks : e->encoder_chunks;
}

/* Whether the queue was cancelled (SIGINT): a long admission stops at its next layer. */
static bool queue_cancelled(void *q) { return ((voxtral_queue *)q)->cancel != 0; }

/* Runs mel, the encoder and the prompt embedding for the sequences in g (their x_prompt is
 * filled); times are shared by chunks. */
static vox_status encode_group(vox_engine *e, vox_seq **g, int n, size_t chunks, vox_error *err) {
    voxtral_context *ctx = e->ctx;
    vox_model *m = ctx->model;
    vox_backend *be = ctx->be;
    const vox_decoder_config *d = &m->cfg.decoder;
    int per_chunk = vox_encoder_tokens_per_chunk(m);
    vox_tensor features = {0}, audio = {0};
    double h0 = vox_wall_ms(); /* host time spent issuing each phase (the trace's *_host_ms) */
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
    double h1 = vox_wall_ms();
    if (!st) st = vox_tensor_new2(be, &audio, be->act_type, (int64_t)chunks * per_chunk, d->hidden, err);
    if (!st)
        st = vox_encoder_forward(m, &features, chunks, e->encoder_chunks, queue_cancelled, e->q,
                                 &audio, err);
    vox_tensor_free(be, &features);
    int mk2 = be->mark(be);
    double h2 = vox_wall_ms();
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
    if (!st) st = vox_fault_encode(&e->fault, be->name, chunks_at_once(e, chunks), err);
    if (st) {
        for (int i = 0; i < n; i++) vox_tensor_free(be, &g[i]->x_prompt);
        return st;
    }
    double mel = be->elapsed_ms(be, mk0, mk1), enc = be->elapsed_ms(be, mk1, mk2),
           emb = be->elapsed_ms(be, mk2, mk3);
    e->stats.gpu_ms += mel + enc + emb;
    trace_line(e, "encode seqs %d chunks %zu mel_ms %.3f encoder_ms %.3f embed_ms %.3f mel_host_ms %.3f "
               "encoder_host_ms %.3f", n, chunks, mel, enc, emb, h1 - h0, h2 - h1);
    for (int i = 0; i < n; i++) {
        double share = (double)g[i]->n_chunks / (double)chunks;
        g[i]->r->timings.mel_ms += mel * share;
        g[i]->r->timings.audio_encoder_ms += enc * share;
        g[i]->r->timings.token_embedding_ms += emb * share;
    }
    return VOX_OK;
}

/* encode_group, smaller when it fails on a device that works on (out of memory for the whole
 * group, say): its pieces in halves, and a single piece's chunks fewer at once (for the rest of
 * the run: e->encoder_chunks), rather than failed requests. A failure that stays comes down to
 * one piece a chunk at a time, which then fails (and the chunks at once are what they were:
 * fewer did not help). */
static vox_status encode_split(vox_engine *e, vox_seq **g, int n, vox_error *err) {
    size_t chunks = 0;
    for (int i = 0; i < n; i++) chunks += g[i]->n_chunks;
    const int chunks_before = e->encoder_chunks;
    vox_status st;
    for (;;) {
        st = encode_group(e, g, n, chunks, err);
        if (st != VOX_ERR_DEVICE || !device_works(e)) return st;
        const int at_once = chunks_at_once(e, chunks);
        if (n > 1 || at_once == 1) break;
        e->encoder_chunks = at_once / 2;
        e->stats.shrinks++;
        trace_line(e, "failed encode chunks %d then_chunks %d error %s", at_once, e->encoder_chunks,
                   err->msg);
    }
    if (n == 1) {
        e->encoder_chunks = chunks_before;
        return st;
    }
    e->stats.shrinks++;
    trace_line(e, "failed encode seqs %d chunks %zu then_seqs %d error %s", n, chunks, n / 2, err->msg);
    st = encode_split(e, g, n / 2, err);
    return st ? st : encode_split(e, g + n / 2, n - n / 2, err);
}

/* Admits what fits: pieces in submission order while a slot is free and the pool can promise
 * their blocks, up to one encoder group of chunks (a piece longer than a group goes alone).
 * Returns VOX_OK, or a device failure that ends the run. */
static vox_status admit(vox_engine *e, bool *grow, vox_error *err) {
    voxtral_queue *q = e->q;
    vox_seq *g[VOX_ENCODER_GROUP_MAX];
    int n = 0;
    size_t chunks = 0;
    *grow = false;
    /* The reader's lock is held while a piece is looked at and claimed (pieces_admitted), so
     * that two devices never take the same one; seq_new is cheap (the prompt's ids). */
    pthread_mutex_lock(&q->rd.mu);
    const size_t most = (size_t)e->encoder_chunks;
    while (e->n_active + n < e->step_seqs && (size_t)n < most) {
        vox_request *r = vox_queue_next_piece(q);
        if (!r) break;
        size_t piece = r->pieces_admitted;
        const vox_segment *pc = &r->pieces[piece];
        size_t pc_chunks = vox_mel_chunk_count(pc->audio_end - pc->audio_start);
        if (n > 0 && chunks + pc_chunks > most) break;
        vox_error perr = {0};
        vox_seq *s = seq_new(e, r, piece, &perr);
        if (!s) { /* this piece cannot run: its request fails, the others go on */
            r->pieces_admitted++;
            pthread_mutex_unlock(&q->rd.mu);
            vox_queue_piece_done(q, e, r, piece, NULL, perr.code, perr.msg);
            pthread_mutex_lock(&q->rd.mu);
            continue;
        }
        if (s->need_blocks > e->table_width || s->need_blocks > e->kv.n_blocks - 1) {
            /* longer than the pool or the block table was sized for: resize once idle */
            seq_free(e, s);
            *grow = true;
            break;
        }
        if (e->committed_blocks + s->need_blocks > e->kv.n_blocks - 1) {
            seq_free(e, s); /* waits for blocks to come back */
            break;
        }
        r->pieces_admitted++;
        r->encoding++; /* its samples stay until it is encoded */
        e->committed_blocks += s->need_blocks;
        s->blocks = malloc((size_t)e->table_width * sizeof *s->blocks);
        s->t_admit = vox_wall_ms();
        s->r->timings.queue_ms = s->t_admit - (r->t_ready > r->t_submit ? r->t_ready : r->t_submit);
        e->stats.queue_wait_ms += s->r->timings.queue_ms;
        g[n++] = s;
        chunks += s->n_chunks;
    }
    pthread_mutex_unlock(&q->rd.mu);
    if (n == 0) return VOX_OK;
    vox_status st = VOX_OK;
    for (int i = 0; i < n; i++)
        if (!g[i]->blocks) st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    vox_fault_group_begin(&e->fault);
    if (!st) st = encode_split(e, g, n, err);
    pthread_mutex_lock(&q->rd.mu);
    for (int i = 0; i < n; i++) g[i]->req->encoding--;
    pthread_mutex_unlock(&q->rd.mu);
    vox_queue_release_admitted(q); /* their samples are no longer needed */
    for (int i = 0; i < n; i++) e->active[e->n_active++] = g[i];
    /* cancelled while encoding: they end with the others in flight, not as failures */
    if (st == VOX_ERR_INTERRUPTED && q->cancel) return VOX_OK;
    if (st) {
        /* A failed group fails its requests alone; a device that no longer works stops this
         * engine (the others go on). */
        bool device_dead = !device_works(e);
        char msg[VOX_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        for (int i = 0; i < n; i++) seq_finish(e, g[i], st, msg);
        return device_dead ? st : VOX_OK;
    }
    return VOX_OK;
}

/* ---- one decoder step ------------------------------------------------------------------------ */

/* Takes blocks so that s can hold `positions` positions (promised at admission: never fails). */
static void seq_reserve(vox_engine *e, vox_seq *s, int64_t positions) {
    while ((int64_t)s->n_blocks * VOX_KV_BLOCK < positions) {
        int32_t b = vox_kv_pool_take(&e->kv);
        VOX_ASSERT(b >= 1 && s->n_blocks < s->need_blocks);
        s->blocks[s->n_blocks++] = b;
    }
}

/* The token chosen for s from its logits' statistics; false when s ends here. */
static bool take_token(vox_engine *e, vox_seq *s, const vox_logits_stats *st) {
    int eos = e->ctx->model->cfg.tokenizer.eos;
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

/* A decoder step of n sequences and `rows` rows (e->b_seq) failed. A device that no longer works
 * ends the run. On one that works on (it ran out of memory at this size, say), the batch
 * shrinks instead: nothing is lost, the sequences are where they were before the step (what
 * it wrote of their caches is written again, the same, when they run), and the next steps run
 * at most half as many sequences (and prompt rows, if it had some), so that a failure that
 * stays (a request the device fails on) comes down to a step of that request alone, which
 * fails alone while the others go on. Admission waits while more sequences are in flight than a
 * step may run. */
static vox_status step_failed(vox_engine *e, int n, int rows, vox_status st, vox_error *err) {
    if (!device_works(e)) return st;
    if (rows > 1) {
        e->step_seqs = n > 1 ? n / 2 : 1;
        if (rows > n) e->step_row_cap = rows / 2; /* it held prompt rows: fewer of those too */
        e->steps_since_shrink = 0;
        e->stats.shrinks++;
        if (e->stats.smallest_step_limit == 0 || e->step_seqs < e->stats.smallest_step_limit)
            e->stats.smallest_step_limit = e->step_seqs;
        trace_line(e, "failed seqs %d rows %d then_seqs %d then_rows %d error %s", n, rows,
                   e->step_seqs, e->step_row_cap, err->msg);
        return VOX_OK;
    }
    char msg[VOX_ERROR_MSG_MAX];
    snprintf(msg, sizeof msg, "a decoder step failed: %.900s", err->msg);
    seq_finish(e, e->b_seq[0], st, msg);
    return VOX_OK;
}

/* After VOX_REGROW_STEPS steps that succeed, a shrunk step's limits double, up to the sizing's. */
static void step_succeeded(vox_engine *e) {
    if (e->step_seqs == e->max_seqs && e->step_row_cap == e->step_rows) return;
    if (++e->steps_since_shrink < VOX_REGROW_STEPS) return;
    e->steps_since_shrink = 0;
    e->step_seqs = e->step_seqs > e->max_seqs / 2 ? e->max_seqs : 2 * e->step_seqs;
    e->step_row_cap = e->step_row_cap > e->step_rows / 2 ? e->step_rows : 2 * e->step_row_cap;
}

static vox_status step(vox_engine *e, vox_error *err) {
    voxtral_context *ctx = e->ctx;
    vox_model *m = ctx->model;
    vox_backend *be = ctx->be;
    int rows = 0, n_seqs = 0, n_logits = 0, tw = e->table_width, k_ask = 2;
    const int n_prefilling = vox_prefill_order(e->active, e->n_active, e->prefill_by_budget, e->prefilling);
    /* decode rows first, then prompt chunks while the step has room */
    bool holds_marked = false; /* VOX_FAULT=step:N */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < (pass == 0 ? e->n_active : n_prefilling); i++) {
            vox_seq *s = pass == 0 ? e->active[i] : e->prefilling[i];
            if (n_seqs >= e->step_seqs || rows >= e->step_row_cap) break;
            if (pass == 0 && !s->decoding) continue;
            int64_t n = pass == 0 ? 1 : (int64_t)s->n_prompt - s->n_prefilled;
            if (n > e->step_row_cap - rows) n = e->step_row_cap - rows;
            holds_marked |= s->fault_marked;
            seq_reserve(e, s, s->n_pos + n);
            e->b_row0[n_seqs] = rows;
            e->b_len[n_seqs] = (int32_t)(s->n_pos + n);
            memcpy(e->b_tables + (size_t)n_seqs * tw, s->blocks, (size_t)s->n_blocks * sizeof(int32_t));
            for (int j = s->n_blocks; j < tw; j++) e->b_tables[(size_t)n_seqs * tw + j] = 0;
            for (int64_t j = 0; j < n; j++) {
                int64_t pos = s->n_pos + j;
                e->b_pos[rows + j] = (int32_t)pos;
                e->b_slot[rows + j] = s->blocks[pos / VOX_KV_BLOCK] * VOX_KV_BLOCK + (int32_t)(pos % VOX_KV_BLOCK);
            }
            if (pass == 0) {
                e->b_ids[n_seqs] = s->next_id;
            } else {
                vox_tensor dst = vox_tensor_rows(&e->dec.x, rows, n);
                vox_tensor src = vox_tensor_rows(&s->x_prompt, s->n_prefilled, n);
                be->copy(be, &dst, &src);
            }
            e->b_seq[n_seqs] = s;
            bool wants_logits = pass == 0 || s->n_prefilled + n == (int64_t)s->n_prompt;
            if (wants_logits) {
                e->b_logit_rows[n_logits] = rows + (int)n - 1;
                e->b_logit_seq[n_logits] = s;
                e->b_chosen[n_logits] = s->forcing ? s->req->p.force_ids[s->r->n_ids] : -1;
                if (s->k > k_ask) k_ask = s->k;
                n_logits++;
            }
            rows += (int)n;
            n_seqs++;
        }
    }
    if (rows == 0) return VOX_OK;
    e->b_row0[n_seqs] = rows;
    int n_decode = 0;
    while (n_decode < n_seqs && e->b_seq[n_decode]->decoding) n_decode++;
    vox_batch b = {.n_rows = rows, .n_seqs = n_seqs, .n_decode = n_decode, .ids = e->b_ids,
                   .row_pos = e->b_pos, .row_slot = e->b_slot, .seq_row0 = e->b_row0,
                   .seq_len = e->b_len, .tables = e->b_tables, .table_width = tw,
                   .block_size = VOX_KV_BLOCK, .logit_rows = e->b_logit_rows, .n_logits = n_logits};
    int mk0 = be->mark(be);
    vox_status st = vox_decoder_batch_step(m, &e->kv, &e->dec, &b, err);
    int mk1 = be->mark(be);
    vox_tensor logits = vox_tensor_rows(&e->dec.logits, 0, n_logits > 0 ? n_logits : 1);
    if (!st && n_logits > 0) st = be->logits_stats(be, &logits, e->b_chosen, k_ask, e->b_stats, err);
    if (!st && n_logits == 0) st = be->sync(be, err); /* for the step's time */
    bool mark = false;
    if (!st) st = vox_fault_step(&e->fault, be->name, n_seqs, holds_marked, &mark, err);
    for (int i = 0; mark && i < n_seqs; i++) e->b_seq[i]->fault_marked = true;
    if (st) return step_failed(e, n_seqs, rows, st, err);
    /* --dump-tensors: the logits each dumping sequence chose from */
    for (int i = 0; i < n_logits; i++) {
        vox_seq *s = e->b_logit_seq[i];
        if (!s->dump_logits) continue;
        size_t V = (size_t)m->cfg.decoder.vocab_size;
        vox_tensor row = vox_tensor_rows(&e->dec.logits, i, 1);
        if ((st = be->download_f32(be, s->dump_logits + s->dump_steps * V, &row, V, err)))
            return step_failed(e, n_seqs, rows, st, err);
    }
    for (int i = 0; i < n_logits; i++) /* counted once all are in: a failed step runs again */
        if (e->b_logit_seq[i]->dump_logits) e->b_logit_seq[i]->dump_steps++;

    /* time shares, then the state of every sequence */
    double t = be->elapsed_ms(be, mk0, mk1);
    e->stats.gpu_ms += t;
    e->stats.steps++;
    step_succeeded(e);
    if (e->trace) {
        long kv_decode = 0; /* positions the decode rows attend to: the step's K/V reads */
        for (int i = 0; i < n_decode; i++) kv_decode += e->b_len[i];
        trace_line(e, "step %ld seqs %d decode %d rows %d logits %d active %d kv_decode %ld gpu_ms %.3f",
                   e->stats.steps, n_seqs, n_decode, rows, n_logits, e->n_active, kv_decode, t);
    }
    if (n_decode > 0) {
        e->stats.decode_steps++;
        e->decode_rows_sum += n_decode;
    }
    for (int i = 0; i < n_seqs; i++) {
        vox_seq *s = e->b_seq[i];
        int n = e->b_row0[i + 1] - e->b_row0[i];
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
    size_t held = (size_t)(e->kv.n_blocks - 1 - e->kv.n_free) * VOX_KV_BLOCK, used = 0;
    for (int i = 0; i < e->n_active; i++) used += (size_t)e->active[i]->n_pos;
    size_t per_pos = vox_kv_bytes_per_position(m);
    if (held * per_pos > e->stats.kv_peak_used_bytes) {
        e->stats.kv_peak_used_bytes = held * per_pos;
        e->stats.kv_waste = held ? 1.0 - (double)used / (double)held : 0.0;
    }
    for (int i = 0; i < n_logits; i++) {
        vox_seq *s = e->b_logit_seq[i];
        /* NaN or infinite logits (damaged weights, or an overflow) make every log-probability
         * NaN: the sequence fails rather than print the argmax of nothing (id 0) */
        if (!isfinite(e->b_stats[i].chosen_logprob)) {
            s->finished = s->nonfinite = true;
            continue;
        }
        if (!take_token(e, s, &e->b_stats[i])) {
            s->finished = true;
            continue;
        }
        s->decoding = true;
    }
    for (int i = 0; i < e->n_active;) {
        vox_seq *s = e->active[i];
        if (s->finished && s->nonfinite) {
            char msg[VOX_ERROR_MSG_MAX];
            snprintf(msg, sizeof msg,
                     "the model's logits are not finite (NaN or infinite) at output token %zu: its "
                     "text decoder holds NaN or infinite weights, or overflows (export the model "
                     "again from a sound checkpoint)",
                     s->r->n_ids + 1);
            seq_finish(e, s, VOX_ERR_FORMAT, msg);
            continue;
        }
        if (s->finished) {
            seq_finish(e, s, VOX_OK, NULL);
            continue;
        }
        i++;
    }
    return VOX_OK;
}

/* ---- the run --------------------------------------------------------------------------------- */

/* Sizes the pool from what is known: the decoded requests' pieces exactly, the others as 30 s
 * requests with the default budget; at least the next piece. */
static vox_status size_from_queue(vox_engine *e, vox_error *err) {
    vox_model *m = e->ctx->model;
    int64_t typical = typical_positions(m), longest = typical, total = 0;
    size_t seqs = 0;
    pthread_mutex_lock(&e->q->rd.mu);
    for (size_t i = e->q->next_admit; i < e->q->rd.n_reqs && seqs < (size_t)e->max_batch; i++) {
        vox_request *r = e->q->rd.reqs[i];
        if (!r) continue;
        if (r->state != VOX_REQ_READY) {
            if (r->state != VOX_REQ_FAILED) {
                total += typical;
                seqs++;
            }
            continue;
        }
        for (size_t p = r->pieces_admitted; p < r->n_pieces && seqs < (size_t)e->max_batch; p++) {
            size_t n = r->pieces[p].audio_end - r->pieces[p].audio_start;
            size_t n_audio = vox_mel_chunk_count(n) * (size_t)vox_encoder_tokens_per_chunk(m);
            int64_t prompt = VOX_PROMPT_FIXED_TOKENS + (int64_t)n_audio + 8; /* + room for a language tag */
            int64_t pos = prompt + token_budget(m, &r->p, (size_t)prompt, (double)n / VOX_SAMPLE_RATE, NULL);
            if (pos > m->cfg.decoder.max_position_embeddings) pos = m->cfg.decoder.max_position_embeddings;
            if (pos > longest) longest = pos;
            total += pos;
            seqs++;
        }
    }
    pthread_mutex_unlock(&e->q->rd.mu);
    if (seqs == 0) seqs = 1;
    if (total < longest) total = longest;
    return size_for(e, (int)seqs, longest, total, err);
}

int vox_engine_default_batch(const voxtral_context *ctx) {
    if (!ctx->be->graph_begin) return 16; /* the CPU reference */
    size_t per_request = (size_t)(3 + vox_encoder_tokens_per_chunk(ctx->model) + 2 + 128) *
                         vox_kv_bytes_per_position(ctx->model);
    size_t n = kv_budget(ctx->be) / per_request;
    return n < 1 ? 1 : n > VOX_MAX_BATCH ? VOX_MAX_BATCH : (int)n;
}


/* ---- the engine's life ----------------------------------------------------------------------- */

void vox_engine_init(vox_engine *e, voxtral_queue *q, voxtral_context *ctx, int max_batch) {
    memset(e, 0, sizeof *e);
    e->q = q;
    e->ctx = ctx;
    e->max_batch = max_batch;
    e->encoder_chunks = vox_encoder_group_chunks(ctx->be);
    /* VOX_PREFILL_ORDER=admission: prompts in admission order (the order before 2026-12-04c),
     * for A/B runs of schedule.h's largest-budget-first */
    const char *order = getenv("VOX_PREFILL_ORDER");
    e->prefill_by_budget = !(order && strcmp(order, "admission") == 0);
    const char *trace = getenv("VOX_STEP_TRACE");
    if (trace && *trace) {
        e->trace = fopen(trace, "a"); /* several devices: lines interleave, named by device */
        if (e->trace) {
            setvbuf(e->trace, NULL, _IOLBF, 0);
            e->trace_t0 = e->trace_last = vox_wall_ms();
        } else {
            fprintf(stderr, "voxtral: VOX_STEP_TRACE: cannot open %s; no trace\n", trace);
        }
    }
}

/* This thread works on e's device (a CUDA device is a property of the calling thread). */
static void bind(vox_engine *e) {
    if (e->ctx->be->bind_thread) e->ctx->be->bind_thread(e->ctx->be);
}

void vox_engine_run(vox_engine *e) {
    voxtral_queue *q = e->q;
    vox_error *err = &e->err;
    vox_status st = VOX_OK;
    bind(e);
    while (!q->cancel && !vox_queue_all_done(q)) {
        if (!e->sized) {
            pthread_mutex_lock(&q->rd.mu);
            vox_request *r = vox_queue_next_piece(q); /* completes failed requests at the head */
            pthread_mutex_unlock(&q->rd.mu);
            if (!r) {
                vox_queue_wait_reader(q);
                continue;
            }
            double t0 = vox_wall_ms();
            if ((st = size_from_queue(e, err))) break;
            trace_line(e, "sized seqs %d kv_blocks %d host_ms %.3f", e->max_seqs, e->kv.n_blocks,
                       vox_wall_ms() - t0);
        }
        bool grow = false;
        if ((st = admit(e, &grow, err))) break;
        if (q->cancel) break; /* an admission can take long (the CPU encoder): no step after it */
        if (grow && e->n_active == 0) {
            unsize(e); /* sized again from the pieces now known */
            continue;
        }
        if (e->n_active == 0) {
            vox_queue_wait_reader(q);
            continue;
        }
        if ((st = step(e, err))) break;
    }
    e->status = st;
    if (st) { /* this device failed: what it had in flight fails with it, the others go on */
        char msg[VOX_ERROR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        vox_engine_abandon(e, st, msg);
    }
}

void vox_engine_abandon(vox_engine *e, vox_status st, const char *msg) {
    bind(e);
    while (e->n_active > 0) {
        vox_seq *s = e->active[e->n_active - 1];
        vox_request *r = s->req;
        /* its pieces not admitted yet will not run: they count as failed, so that the request
         * completes once the pieces in flight (here or on other devices) are over */
        pthread_mutex_lock(&e->q->rd.mu);
        size_t never = r->n_pieces - r->pieces_admitted;
        r->pieces_admitted = r->n_pieces;
        pthread_mutex_unlock(&e->q->rd.mu);
        for (size_t i = 0; i < never; i++) vox_queue_piece_done(e->q, e, r, 0, NULL, st, msg);
        seq_finish(e, s, st, msg);
    }
}

void vox_engine_free(vox_engine *e) {
    bind(e);
    while (e->n_active > 0) {
        vox_seq *s = e->active[--e->n_active];
        vox_kv_pool_give(&e->kv, s->blocks, s->n_blocks);
        seq_free(e, s);
    }
    unsize(e);
    if (e->trace) fclose(e->trace);
    e->trace = NULL;
}
