/* The public API: a context (backend + model + tokenizer), results, and transcription of one
 * audio input, which runs as a queue of one (engine.c does the work: mel -> audio_encoder ->
 * prompt with [AUDIO] rows replaced -> text_decoder prefill -> greedy (or forced) decode -> text). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "engine/context.h"

const char *voxtral_version(void) {
#ifdef VOX_VERSION
    return VOX_VERSION;
#else
    return "0.1.0";
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

vox_status voxtral_init(const voxtral_context_params *p, voxtral_context **out, vox_error *err) {
    *out = NULL;
    double t0 = vox_wall_ms();
    voxtral_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    const char *device = p->device ? p->device : (vox_backend_cuda_available() ? "cuda:0" : "cpu");
    vox_status st = vox_backend_create(device, &ctx->be, err);
    if (!st) st = vox_model_load(p->model_dir, ctx->be, &ctx->model, err);
    if (!st) {
        char path[VOX_PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", p->model_dir, ctx->model->cfg.tokenizer.file);
        st = vox_tokenizer_load(path, &ctx->tok, err);
    }
    if (!st && vox_tokenizer_vocab_size(ctx->tok) > ctx->model->cfg.decoder.vocab_size)
        st = vox_fail(err, VOX_ERR_FORMAT, "%s: tokenizer has %d ids but the decoder only %d",
                      p->model_dir, vox_tokenizer_vocab_size(ctx->tok), ctx->model->cfg.decoder.vocab_size);
    if (!st) st = ctx->be->sync(ctx->be, err);
    if (!st && p->warmup && ctx->be->graph_begin) {
        /* One-time costs of the device path (lazy kernel loading, GEMM plans, the pool's first
         * growth, the decode graph) are paid here rather than by the first file: a 1 s silent
         * clip and four decode steps, so that the decode step is recorded and replayed once. */
        float *silence = calloc(VOX_SAMPLE_RATE, sizeof(float));
        voxtral_transcribe_params wp = voxtral_transcribe_default_params();
        wp.max_new_tokens = 4;
        wp.ignore_eos = true;
        voxtral_result *r = NULL;
        ctx->warming_up = true;
        st = silence ? voxtral_transcribe_pcm(ctx, silence, VOX_SAMPLE_RATE, &wp, &r, err)
                     : vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        ctx->warming_up = false;
        if (st) vox_error_prefix(err, "warm-up");
        voxtral_result_free(r);
        free(silence);
    }
    if (st) {
        voxtral_free(ctx);
        return st;
    }
    ctx->load_ms = vox_wall_ms() - t0;
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

/* Runs one request (a file when path is set, else the samples) through a queue of one. */
static vox_status transcribe_one(voxtral_context *ctx, const char *path, const float *samples,
                                 size_t n_samples, const voxtral_transcribe_params *p,
                                 voxtral_result **out, vox_error *err) {
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
    st = path ? voxtral_queue_submit_file(q, path, p, 0, err)
              : voxtral_queue_submit_pcm(q, samples, n_samples, p, 0, err);
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
    *out = NULL;
    if (n_samples == 0) return vox_fail(err, VOX_ERR_INVALID_ARG, "the audio is empty");
    return transcribe_one(ctx, NULL, samples, n_samples, p, out, err);
}

vox_status voxtral_transcribe_file(voxtral_context *ctx, const char *path,
                                   const voxtral_transcribe_params *p, voxtral_result **out,
                                   vox_error *err) {
    return transcribe_one(ctx, path, NULL, 0, p, out, err);
}
