/* The queue (voxtral.h): requests in submission order, decoded ahead by reader threads
 * (reader.c), run by one engine per device (engine.c), each completed through the caller's
 * callback once its last piece is done, one callback at a time whatever the number of devices.
 * queue.h says which lock guards what. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audio/audio.h"
#include "common/text.h"
#include "engine/queue.h"

voxtral_queue_params voxtral_queue_default_params(void) {
    return (voxtral_queue_params){.max_batch = 0, .read_ahead = 0, .reader_threads = 0,
                                  .on_complete = NULL, .user_data = NULL};
}

void voxtral_queue_cancel(voxtral_queue *q) { q->cancel = 1; }

int voxtral_queue_device_count(const voxtral_queue *q) { return q->n_engines; }

int voxtral_queue_batch_size(const voxtral_queue *q) {
    int n = 0;
    for (int i = 0; i < q->n_engines; i++) n += q->engines[i].max_batch;
    return n;
}

static void engine_stats(const vox_engine *e, voxtral_queue_stats *out) {
    *out = e->stats;
    out->max_batch = e->max_batch;
    size_t live;
    e->ctx->be->memory(e->ctx->be, &live, &out->peak_device_bytes);
    out->mean_batch = e->stats.decode_steps ? e->decode_rows_sum / (double)e->stats.decode_steps : 0;
}

vox_status voxtral_queue_get_device_stats(const voxtral_queue *q, int device,
                                          voxtral_queue_stats *out, const char **name) {
    if (device < 0 || device >= q->n_engines) return VOX_ERR_INVALID_ARG;
    engine_stats(&q->engines[device], out);
    if (name) *name = voxtral_device_name(q->engines[device].ctx);
    return VOX_OK;
}

/* Totals over the devices: sums, and the mean batch over every decode step. */
void voxtral_queue_get_stats(const voxtral_queue *q, voxtral_queue_stats *out) {
    memset(out, 0, sizeof *out);
    double rows = 0, waste_weight = 0;
    for (int i = 0; i < q->n_engines; i++) {
        const vox_engine *e = &q->engines[i];
        out->max_batch += e->max_batch;
        out->kv_bytes += e->stats.kv_bytes;
        out->kv_block_size = e->stats.kv_block_size;
        out->steps += e->stats.steps;
        out->decode_steps += e->stats.decode_steps;
        out->kv_peak_used_bytes += e->stats.kv_peak_used_bytes;
        out->kv_waste += e->stats.kv_waste * (double)e->stats.kv_peak_used_bytes;
        waste_weight += (double)e->stats.kv_peak_used_bytes;
        out->queue_wait_ms += e->stats.queue_wait_ms;
        out->gpu_ms += e->stats.gpu_ms;
        out->requests += e->stats.requests;
        out->shrinks += e->stats.shrinks;
        int lim = e->stats.smallest_step_limit;
        if (lim > 0 && (out->smallest_step_limit == 0 || lim < out->smallest_step_limit))
            out->smallest_step_limit = lim;
        rows += e->decode_rows_sum;
        size_t live, peak;
        e->ctx->be->memory(e->ctx->be, &live, &peak);
        if (peak > out->peak_device_bytes) out->peak_device_bytes = peak;
    }
    out->mean_batch = out->decode_steps ? rows / (double)out->decode_steps : 0;
    out->kv_waste = waste_weight > 0 ? out->kv_waste / waste_weight : 0;
}

/* ---- completing requests --------------------------------------------------------------------- */

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
 * their texts joined. ctx: the device that finished it (its load time and peak memory). */
static voxtral_result *assemble(const voxtral_context *ctx, vox_request *r, vox_error *err) {
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
            char *t = vox_trim_dup(pr->text);
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
    if (r->warning) { /* the reader's, before the engine's (a piece cut by the context) */
        size_t n = strlen(r->warning) + (out->warning ? strlen(out->warning) + 2 : 0) + 1;
        char *w = malloc(n);
        if (!w) {
            voxtral_result_free(out);
            vox_fail(err, VOX_ERR_NOMEM, "out of memory");
            return NULL;
        }
        snprintf(w, n, "%s%s%s", r->warning, out->warning ? "; " : "", out->warning ? out->warning : "");
        free(out->warning);
        out->warning = w;
    }
    out->timings.audio_ms = r->audio_ms;
    out->timings.load_ms = ctx->load_ms;
    out->timings.total_ms = vox_wall_ms() - r->t_submit;
    size_t live;
    ctx->be->memory(ctx->be, &live, &out->timings.peak_device_bytes);
    return out;
}

/* Calls the callback for request `index` (its result when every piece succeeded) and frees it.
 * done_mu held. */
static void complete_locked(voxtral_queue *q, const voxtral_context *ctx, size_t index) {
    pthread_mutex_lock(&q->rd.mu);
    vox_request *r = q->rd.reqs[index];
    pthread_mutex_unlock(&q->rd.mu);
    voxtral_completion c = {.tag = r->tag, .path = r->path, .status = r->status,
                            .error = r->error, .result = NULL};
    vox_error err = {0};
    if (!r->status && !(c.result = assemble(ctx, r, &err))) {
        c.status = err.code;
        c.error = err.msg;
    }
    if (c.status && c.error && r->path && !vox_message_names(c.error, r->path)) {
        if (c.error != err.msg) snprintf(err.msg, sizeof err.msg, "%s", c.error);
        vox_error_prefix(&err, "%s", r->path);
        c.error = err.msg;
    }
    q->qp.on_complete(&c, q->qp.user_data);
    if (!r->released && r->state != VOX_REQ_QUEUED) vox_reader_release(&q->rd);
    pthread_mutex_lock(&q->rd.mu);
    q->rd.reqs[index] = NULL;
    q->n_done++;
    pthread_mutex_unlock(&q->rd.mu);
    vox_request_free(r);
}

static void fail_locked(vox_request *r, vox_status st, const char *msg) {
    if (r->status) return; /* the first failure is the one reported */
    r->status = st;
    free(r->error);
    r->error = strdup(msg ? msg : vox_status_name(st));
}

void vox_queue_piece_done(voxtral_queue *q, vox_engine *e, vox_request *r, size_t piece,
                          voxtral_result *result, vox_status st, const char *msg) {
    pthread_mutex_lock(&q->done_mu);
    if (st) {
        fail_locked(r, st, msg);
        voxtral_result_free(result);
    } else {
        r->piece_results[piece] = result;
    }
    r->pieces_done++;
    pthread_mutex_lock(&q->rd.mu);
    bool all_admitted = r->pieces_admitted == r->n_pieces;
    pthread_mutex_unlock(&q->rd.mu);
    if (r->pieces_done == r->n_pieces && all_admitted) complete_locked(q, e->ctx, r->index);
    pthread_mutex_unlock(&q->done_mu);
}

bool vox_queue_all_done(voxtral_queue *q) {
    pthread_mutex_lock(&q->rd.mu);
    bool done = q->n_done == q->rd.n_reqs;
    pthread_mutex_unlock(&q->rd.mu);
    return done;
}

/* ---- admission order ------------------------------------------------------------------------- */

vox_request *vox_queue_next_piece(voxtral_queue *q) {
    while (q->next_admit < q->rd.n_reqs) {
        vox_request *r = q->rd.reqs[q->next_admit];
        if (!r) { /* completed already */
            q->next_admit++;
            continue;
        }
        if (r->state == VOX_REQ_QUEUED || r->state == VOX_REQ_READING) return NULL;
        if (r->state == VOX_REQ_FAILED || r->pieces_admitted == r->n_pieces) {
            /* wholly admitted (or nothing to run): its read-ahead room goes back to the readers */
            size_t i = q->next_admit++;
            bool done = r->state == VOX_REQ_FAILED || r->n_pieces == 0;
            r->released = true;
            pthread_mutex_unlock(&q->rd.mu);
            vox_reader_release(&q->rd);
            if (done) {
                pthread_mutex_lock(&q->done_mu);
                complete_locked(q, q->engines[0].ctx, i);
                pthread_mutex_unlock(&q->done_mu);
            }
            pthread_mutex_lock(&q->rd.mu);
            continue;
        }
        return r;
    }
    return NULL;
}

void vox_queue_release_admitted(voxtral_queue *q) {
    pthread_mutex_lock(&q->rd.mu);
    vox_queue_next_piece(q);
    /* stop at a request some engine is still encoding */
    for (; q->next_release < q->next_admit; q->next_release++) {
        vox_request *r = q->rd.reqs[q->next_release];
        if (r && r->encoding > 0) break;
        if (r) vox_reader_recycle_locked(&q->rd, r);
    }
    pthread_mutex_unlock(&q->rd.mu);
}

void vox_queue_wait_reader(voxtral_queue *q) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&q->rd.mu);
    pthread_cond_timedwait(&q->rd.ready, &q->rd.mu, &ts);
    pthread_mutex_unlock(&q->rd.mu);
}

/* ---- the run --------------------------------------------------------------------------------- */

static void *engine_thread(void *arg) {
    vox_engine_run(arg);
    return NULL;
}

vox_status voxtral_queue_run(voxtral_queue *q, vox_error *err) {
    VOX_ERR_SCRATCH(err);
    /* one thread a device (the caller's for the first) */
    for (int i = 1; i < q->n_engines; i++) {
        vox_engine *e = &q->engines[i];
        if (pthread_create(&e->thread, NULL, engine_thread, e) != 0) {
            e->status = vox_fail(&e->err, VOX_ERR_NOMEM, "cannot start the thread of %s",
                                 voxtral_device_name(e->ctx));
            e->thread = 0;
        }
    }
    vox_engine_run(&q->engines[0]);
    for (int i = 1; i < q->n_engines; i++)
        if (q->engines[i].thread) pthread_join(q->engines[i].thread, NULL);

    /* Cancelled, or every device failed: whatever is not complete ends with that. */
    vox_status st = VOX_OK;
    vox_error why = {0};
    if (q->cancel) {
        st = vox_fail(&why, VOX_ERR_INTERRUPTED, "interrupted");
    } else if (!vox_queue_all_done(q)) {
        for (int i = 0; i < q->n_engines && !st; i++)
            if (q->engines[i].status) {
                st = q->engines[i].status;
                why = q->engines[i].err;
            }
        if (!st) st = vox_fail(&why, VOX_ERR_INTERNAL, "the queue stopped with requests not done");
    }
    if (!st) return VOX_OK;
    for (int i = 0; i < q->n_engines; i++) vox_engine_abandon(&q->engines[i], st, why.msg);
    pthread_mutex_lock(&q->rd.mu);
    q->rd.next_read = q->rd.n_reqs; /* readers take nothing more, and one that waits for a
                                       * FIFO's writer gives up (reader_stopping) */
    q->rd.stop = true;
    pthread_cond_broadcast(&q->rd.work);
    for (size_t i = 0; i < q->rd.n_reqs; i++) {
        vox_request *r = q->rd.reqs[i];
        if (!r) continue;
        while (r->state == VOX_REQ_READING) /* a reader is decoding it: let it finish */
            pthread_cond_wait(&q->rd.ready, &q->rd.mu);
        pthread_mutex_unlock(&q->rd.mu);
        pthread_mutex_lock(&q->done_mu);
        fail_locked(r, st, why.msg);
        complete_locked(q, q->engines[0].ctx, i);
        pthread_mutex_unlock(&q->done_mu);
        pthread_mutex_lock(&q->rd.mu);
    }
    q->next_admit = q->rd.n_reqs;
    pthread_mutex_unlock(&q->rd.mu);
    *err = why;
    return st;
}

/* ---- creation and submission ----------------------------------------------------------------- */

vox_status voxtral_queue_create_multi(voxtral_context *const *ctxs, int n,
                                      const voxtral_queue_params *params, voxtral_queue **out,
                                      vox_error *err) {
    VOX_ERR_SCRATCH(err);
    if (!out) return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_create: no queue to return");
    *out = NULL;
    if (!params || !params->on_complete)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_create: on_complete is required");
    if (n < 1 || !ctxs) return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_create: no context");
    for (int i = 0; i < n; i++) {
        if (!ctxs[i]) return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_create: context %d is NULL", i);
        /* two engines on one context would share its backend and buffers, unguarded */
        for (int j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i])
                return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_create: context %d is "
                                "context %d again (one context a device)", i, j);
    }
    voxtral_queue *q = calloc(1, sizeof *q);
    if (!q || !(q->engines = calloc((size_t)n, sizeof *q->engines))) {
        free(q);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    vox_fault fault = {0};
    vox_status fst = ctxs[0]->warming_up ? VOX_OK : vox_fault_from_env(&fault, err);
    if (fst) {
        free(q->engines);
        free(q);
        return fst;
    }
    q->qp = *params;
    q->n_engines = n;
    pthread_mutex_init(&q->done_mu, NULL);
    for (int i = 0; i < n; i++) {
        int b = params->max_batch > 0 ? params->max_batch : vox_engine_default_batch(ctxs[i]);
        if (b > 4096) b = 4096;
        vox_engine_init(&q->engines[i], q, ctxs[i], b);
        q->engines[i].fault = fault; /* each device counts its own steps and groups */
    }
    /* Files decoded ahead: two encoder groups an engine (at least 16 in all). The engine admits
     * one group a step, so the readers (thousands of files a second) stay far enough ahead, and
     * the few buffers in flight are reused file after file instead of a fresh one for each
     * (reader.h). */
    int ahead = params->read_ahead;
    if (ahead <= 0)
        for (int i = 0; i < n; i++) ahead += 2 * vox_encoder_group_chunks(ctxs[i]->be);
    if (ahead < 16) ahead = 16;
    int threads = params->reader_threads;
    if (threads <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cores < 2 ? 2 : cores > 8 ? 8 : (int)cores;
    }
    vox_status st = vox_reader_init(&q->rd, threads, ahead, err);
    if (st) {
        pthread_mutex_destroy(&q->done_mu);
        free(q->engines);
        free(q);
        return st;
    }
    *out = q;
    return VOX_OK;
}

vox_status voxtral_queue_create(voxtral_context *ctx, const voxtral_queue_params *params,
                                voxtral_queue **out, vox_error *err) {
    return voxtral_queue_create_multi(&ctx, 1, params, out, err);
}

void voxtral_queue_free(voxtral_queue *q) {
    if (!q) return;
    for (int i = 0; i < q->n_engines; i++) vox_engine_free(&q->engines[i]);
    vox_reader_destroy(&q->rd);
    pthread_mutex_destroy(&q->done_mu);
    free(q->engines);
    free(q);
}

static vox_status submit(voxtral_queue *q, vox_request *r, const voxtral_transcribe_params *p,
                         uint64_t tag, vox_error *err) {
    if (!q || !p) {
        vox_request_free(r);
        return vox_fail(err, VOX_ERR_INVALID_ARG, "submit: %s is NULL", q ? "params" : "the queue");
    }
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
    VOX_ERR_SCRATCH(err);
    if (!path) return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_queue_submit_file: no path");
    vox_request *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    return submit(q, r, params, tag, err);
}

vox_status voxtral_queue_submit_encoded(voxtral_queue *q, const void *data, size_t size,
                                        const char *name, const voxtral_transcribe_params *params,
                                        uint64_t tag, vox_error *err) {
    VOX_ERR_SCRATCH(err);
    if (!data && size > 0) return vox_fail(err, VOX_ERR_INVALID_ARG, "no data for %zu bytes", size);
    static const unsigned char none; /* an empty buffer is a request that fails as empty */
    vox_request *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(name ? name : "(memory)"))) {
        free(r);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    r->encoded = data ? data : &none;
    r->encoded_size = size;
    return submit(q, r, params, tag, err);
}

vox_status voxtral_queue_submit_pcm(voxtral_queue *q, const float *samples, size_t n_samples,
                                    const voxtral_transcribe_params *params, uint64_t tag,
                                    vox_error *err) {
    VOX_ERR_SCRATCH(err);
    if (n_samples == 0) return vox_fail(err, VOX_ERR_INVALID_ARG, "the audio is empty");
    if (!samples) return vox_fail(err, VOX_ERR_INVALID_ARG, "no samples for %zu", n_samples);
    /* more than memory can hold (the copy's size would wrap); the 30 min limit and finite
     * samples are checked by the reader, failing the request, as for a decoded file */
    if (n_samples > SIZE_MAX / sizeof *samples)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "%zu samples: more than memory can hold", n_samples);
    vox_request *r = calloc(1, sizeof *r);
    if (!r || !(r->samples = malloc(n_samples * sizeof *samples))) {
        free(r);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    memcpy(r->samples, samples, n_samples * sizeof *samples);
    r->n_samples = n_samples;
    r->samples_cap = n_samples;
    return submit(q, r, params, tag, err);
}
