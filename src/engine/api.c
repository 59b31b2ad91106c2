/* The public API: a context (backend + model + tokenizer), results, and transcription of one
 * audio input, which runs as a queue of one (engine.c does the work: mel -> audio_encoder ->
 * prompt with [AUDIO] rows replaced -> text_decoder prefill -> greedy (or forced) decode -> text). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "common/env.h"
#include "engine/context.h"

const char *voxtral_version(void) {
#ifdef VOX_VERSION
    return VOX_VERSION;
#else
    return "0.2.0";
#endif
}

voxtral_context_params voxtral_context_default_params(void) {
    return (voxtral_context_params){.model_dir = "models/voxtral-mini-3b", .device = NULL,
                                    .warmup = true};
}

voxtral_transcribe_params voxtral_transcribe_default_params(void) {
    return (voxtral_transcribe_params){.language = NULL, .max_new_tokens = 0, .ignore_eos = false,
                                       .logprobs = 0, .force_ids = NULL, .n_force_ids = 0,
                                       .on_token = NULL, .user_data = NULL, .segment = false,
                                       .silence_threshold_db = -35.0, .min_silence_s = 0.5,
                                       .dump_path = NULL};
}

int voxtral_default_max_new_tokens(double audio_seconds) {
    double n = 32.0 + 8.0 * ceil(audio_seconds);
    return n > 32768 ? 32768 : (int)n;
}

/* ---- loading: the device, the model's files and the tokenizer at once --------------------- */

/* Runs fn(arg) on a thread of its own, or here and now where no thread can be started. */
static bool start_thread(pthread_t *t, void *(*fn)(void *), void *arg) {
    if (pthread_create(t, NULL, fn, arg) == 0) return true;
    fn(arg);
    return false;
}

/* The device (driver, context, handles: hundreds of ms on a GPU) starts while the host reads
 * the model's headers. */
typedef struct {
    const char *name; /* NULL: cuda:0 when usable, else cpu */
    vox_backend *be;
    vox_status st;
    vox_error err;
    double ms;
} device_job;

static void *start_device(void *arg) {
    device_job *d = arg;
    double t0 = vox_wall_ms();
    const char *name = d->name ? d->name : vox_backend_cuda_available() ? "cuda:0" : "cpu";
    d->st = vox_backend_create(name, &d->be, &d->err);
    d->ms = vox_wall_ms() - t0;
    return NULL;
}

/* tekken.json (a full vocabulary takes about 0.1 s to parse) loads while the weights do. */
typedef struct {
    char path[VOX_PATH_MAX + 300];
    vox_tokenizer *tok;
    vox_status st;
    vox_error err;
    double ms;
} tokenizer_job;

static void *load_tokenizer(void *arg) {
    tokenizer_job *j = arg;
    double t0 = vox_wall_ms();
    j->st = vox_tokenizer_load(j->path, &j->tok, &j->err);
    j->ms = vox_wall_ms() - t0;
    return NULL;
}

/* One-time costs of the device path (lazy kernel loading, GEMM plans, the pool's first growth)
 * paid here rather than by the first file: a 1 s silent clip, its prefill and one decode step.
 * No more steps: a decode step is recorded as a graph on its second run, and that graph belongs
 * to the queue that records it (its buffers' addresses are in it), so one recorded here would
 * be thrown away and recorded again by the first file. VOX_WARMUP_TOKENS=N changes the count
 * (N = 4 records one, for comparison), VOX_NO_WARMUP=1 skips it. */
static vox_status warm_up(voxtral_context *ctx, vox_error *err) {
    const char *tokens = getenv("VOX_WARMUP_TOKENS");
    float *silence = calloc(VOX_SAMPLE_RATE, sizeof(float));
    if (!silence) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    voxtral_transcribe_params wp = voxtral_transcribe_default_params();
    wp.max_new_tokens = tokens && atoi(tokens) > 0 ? atoi(tokens) : 2;
    wp.ignore_eos = true;
    voxtral_result *r = NULL;
    ctx->warming_up = true; /* VOX_FAULT (fault.h) leaves the warm-up's steps alone */
    vox_status st = voxtral_transcribe_pcm(ctx, silence, VOX_SAMPLE_RATE, &wp, &r, err);
    ctx->warming_up = false;
    if (st) vox_error_prefix(err, "warm-up");
    voxtral_result_free(r);
    free(silence);
    return st;
}

vox_status voxtral_init(const voxtral_context_params *p, voxtral_context **out, vox_error *err) {
    VOX_ERR_SCRATCH(err);
    if (!out) return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_init: no context to return");
    *out = NULL;
    if (!p || !p->model_dir || !p->model_dir[0])
        return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_init: no model directory");
    double t0 = vox_wall_ms();
    voxtral_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    voxtral_load_timings *lt = &ctx->load;
    device_job dev = {.name = p->device};
    pthread_t dev_thread, tok_thread;
    bool dev_threaded = start_thread(&dev_thread, start_device, &dev), tok_threaded = false;
    tokenizer_job tok = {0};

    vox_status st = vox_model_open(p->model_dir, &ctx->model, err);
    lt->model_files_ms = vox_wall_ms() - t0;
    if (!st) {
        snprintf(tok.path, sizeof tok.path, "%s/%s", p->model_dir, ctx->model->cfg.tokenizer.file);
        tok_threaded = start_thread(&tok_thread, load_tokenizer, &tok);
    }
    double t1 = vox_wall_ms();
    if (dev_threaded) pthread_join(dev_thread, NULL);
    lt->device_wait_ms = vox_wall_ms() - t1;
    ctx->be = dev.be;
    if (dev.st) { /* the device's failure comes first, as when it was created first */
        st = dev.st;
        *err = dev.err;
    }
    if (!st) {
        if (ctx->be->bind_thread) ctx->be->bind_thread(ctx->be); /* it started on another thread */
        double t2 = vox_wall_ms();
        st = vox_model_upload(ctx->model, ctx->be, err);
        lt->weights_ms = vox_wall_ms() - t2;
    }
    double t3 = vox_wall_ms();
    if (tok_threaded) pthread_join(tok_thread, NULL);
    lt->tokenizer_wait_ms = vox_wall_ms() - t3;
    ctx->tok = tok.tok;
    if (!st && tok.st) {
        st = tok.st;
        *err = tok.err;
    }
    /* A tokenizer with ids the decoder cannot embed. (A smaller one is a padded vocabulary: a
     * trained model never picks the padding, and an id past the tokenizer fails its file.) */
    if (!st && vox_tokenizer_vocab_size(ctx->tok) > ctx->model->cfg.decoder.vocab_size)
        st = vox_fail(err, VOX_ERR_FORMAT,
                      "%s: the tokenizer has %d ids but the decoder's vocab_size in %s/%s is only %d "
                      "(re-export the model)",
                      tok.path, vox_tokenizer_vocab_size(ctx->tok), p->model_dir,
                      VOX_MANIFEST_FILE, ctx->model->cfg.decoder.vocab_size);
    /* voxtral.json's special-token ids against tekken.json's names: an id that names another
     * token would build every prompt wrong, silently. (A name the tokenizer lacks, as an old
     * tekken.json without its special-token list may, cannot be checked.) */
    for (int i = 0; !st && i < VOX_SPECIAL_TOKEN_COUNT; i++) {
        int want = vox_manifest_special(&ctx->model->cfg, i);
        int32_t has = vox_tokenizer_special_id(ctx->tok, vox_special_tokens[i].token);
        if (has >= 0 && has != want)
            st = vox_fail(err, VOX_ERR_FORMAT,
                          "%s/%s: tokenizer.%s is %d, but %s has %s at id %d (re-export the model)",
                          p->model_dir, VOX_MANIFEST_FILE, vox_special_tokens[i].field, want,
                          tok.path, vox_special_tokens[i].token, (int)has);
    }
    double t4 = vox_wall_ms();
    if (!st) st = ctx->be->sync(ctx->be, err);
    lt->sync_ms = vox_wall_ms() - t4;
    if (!st && p->warmup && ctx->be->graph_begin && !vox_env_flag("VOX_NO_WARMUP")) {
        double t5 = vox_wall_ms();
        st = warm_up(ctx, err);
        lt->warmup_ms = vox_wall_ms() - t5;
    }
    if (st) {
        voxtral_free(ctx);
        return st;
    }
    const vox_load_stats *b = &ctx->be->load;
    lt->device_ms = dev.ms;
    lt->context_ms = b->context_ms;
    lt->blas_ms = b->blas_ms;
    lt->blas_wait_ms = b->blas_wait_ms;
    lt->staging_ms = b->staging_ms;
    lt->tokenizer_ms = tok.ms;
    lt->alloc_ms = b->alloc_ms;
    lt->serial_ms = b->serial_ms;
    lt->bulk_ms = b->bulk_ms;
    lt->read_ms = b->read_ms;
    lt->buffer_wait_ms = b->buffer_wait_ms;
    lt->upload_ms = b->upload_ms;
    lt->upload_after_reads_ms = b->upload_after_reads_ms;
    lt->bytes = b->bytes;
    lt->threads = b->threads;
    lt->total_ms = ctx->load_ms = vox_wall_ms() - t0;
    *out = ctx;
    return VOX_OK;
}

void voxtral_free(voxtral_context *ctx) {
    if (!ctx) return;
    vox_tokenizer_free(ctx->tok);
    vox_model_free(ctx->model);
    vox_backend_destroy(ctx->be);
    free(ctx);
}

const char *voxtral_device_name(const voxtral_context *ctx) { return ctx->be->name; }
int voxtral_cuda_device_count(void) { return vox_backend_cuda_count(); }
double voxtral_load_ms(const voxtral_context *ctx) { return ctx->load_ms; }
voxtral_load_timings voxtral_load_breakdown(const voxtral_context *ctx) { return ctx->load; }

const char *voxtral_token_text(const voxtral_context *ctx, int32_t id, size_t *len) {
    return vox_tokenizer_piece(ctx->tok, id, len);
}

void voxtral_result_free(voxtral_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_segments; i++) voxtral_result_free(r->segments[i].r);
    free(r->segments);
    free(r->warning);
    free(r->text);
    free(r->ids);
    free(r->tokens);
    free(r);
}

/* ---- one request at a time: a queue of one ---------------------------------------------------- */

typedef struct {
    voxtral_result *r;
    vox_status st;
    vox_error err;
} single_result;

static void single_done(const voxtral_completion *c, void *user) {
    single_result *out = user;
    out->r = c->result;
    out->st = c->status;
    if (c->status) {
        out->err.code = c->status;
        snprintf(out->err.msg, sizeof out->err.msg, "%s", c->error ? c->error : "failed");
    }
}

/* What one request transcribes: a file (path), an encoded file in memory (data, named name), or
 * 16 kHz samples. */
typedef struct {
    const char *path;
    const void *data;
    size_t size;
    const char *name;
    const float *samples;
    size_t n_samples;
} single_input;

/* Runs one request through a queue of one. */
static vox_status transcribe_one(voxtral_context *ctx, const single_input *in,
                                 const voxtral_transcribe_params *p, voxtral_result **out,
                                 vox_error *err) {
    *out = NULL;
    single_result res = {0};
    voxtral_queue_params qp = voxtral_queue_default_params();
    qp.max_batch = 1;
    qp.reader_threads = 1;
    qp.on_complete = single_done;
    qp.user_data = &res;
    voxtral_queue *q;
    vox_status st = voxtral_queue_create(ctx, &qp, &q, err);
    if (st) return st;
    st = in->path ? voxtral_queue_submit_file(q, in->path, p, 0, err)
         : in->samples ? voxtral_queue_submit_pcm(q, in->samples, in->n_samples, p, 0, err)
                       : voxtral_queue_submit_encoded(q, in->data, in->size, in->name, p, 0, err);
    if (!st) st = voxtral_queue_run(q, err);
    voxtral_queue_free(q);
    if (st) {
        voxtral_result_free(res.r);
        return st;
    }
    if (res.st) {
        *err = res.err;
        return res.st;
    }
    *out = res.r;
    return VOX_OK;
}

vox_status voxtral_transcribe_pcm(voxtral_context *ctx, const float *samples, size_t n_samples,
                                  const voxtral_transcribe_params *p, voxtral_result **out,
                                  vox_error *err) {
    VOX_ERR_SCRATCH(err);
    *out = NULL;
    if (n_samples == 0) return vox_fail(err, VOX_ERR_INVALID_ARG, "the audio is empty");
    if (!samples) return vox_fail(err, VOX_ERR_INVALID_ARG, "no samples for %zu", n_samples);
    return transcribe_one(ctx, &(single_input){.samples = samples, .n_samples = n_samples}, p, out,
                          err);
}

vox_status voxtral_transcribe_file(voxtral_context *ctx, const char *path,
                                   const voxtral_transcribe_params *p, voxtral_result **out,
                                   vox_error *err) {
    VOX_ERR_SCRATCH(err);
    if (!path) {
        if (out) *out = NULL;
        return vox_fail(err, VOX_ERR_INVALID_ARG, "voxtral_transcribe_file: no path");
    }
    return transcribe_one(ctx, &(single_input){.path = path}, p, out, err);
}

vox_status voxtral_transcribe_encoded(voxtral_context *ctx, const void *data, size_t size,
                                      const char *name, const voxtral_transcribe_params *p,
                                      voxtral_result **out, vox_error *err) {
    VOX_ERR_SCRATCH(err);
    return transcribe_one(ctx, &(single_input){.data = data, .size = size, .name = name}, p, out,
                          err);
}
