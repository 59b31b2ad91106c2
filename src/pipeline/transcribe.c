/* The public API: a context (backend + model + tokenizer) and transcription of one audio input:
 * mel -> audio_encoder -> prompt with [AUDIO] rows replaced -> text_decoder prefill -> greedy
 * (or forced) decode loop -> text. voxtral-spec.md section 5 gives the prompt. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "format/safetensors.h"
#include "mel/mel.h"
#include "pipeline/pipeline.h"
#include "tokenizer/tekken.h"
#include "voxtral/voxtral.h"

struct voxtral_context {
    vox_backend *be;
    vox_model *model;
    vox_tokenizer *tok;
    double load_ms;
};

static double wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

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
                                       .on_token = NULL, .user_data = NULL, .dump_path = NULL};
}

int voxtral_default_max_new_tokens(double audio_seconds) {
    double n = 32.0 + 8.0 * ceil(audio_seconds);
    return n > 32768 ? 32768 : (int)n;
}

vox_status voxtral_init(const voxtral_context_params *p, voxtral_context **out, vox_error *err) {
    *out = NULL;
    double t0 = wall_ms();
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
        st = silence ? voxtral_transcribe_pcm(ctx, silence, VOX_SAMPLE_RATE, &wp, &r, err)
                     : vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        if (st) vox_error_prefix(err, "warm-up");
        voxtral_result_free(r);
        free(silence);
    }
    if (st) {
        voxtral_free(ctx);
        return st;
    }
    ctx->load_ms = wall_ms() - t0;
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
double voxtral_load_ms(const voxtral_context *ctx) { return ctx->load_ms; }

const char *voxtral_token_text(const voxtral_context *ctx, int32_t id, size_t *len) {
    return vox_tokenizer_piece(ctx->tok, id, len);
}

void voxtral_result_free(voxtral_result *r) {
    if (!r) return;
    free(r->text);
    free(r->ids);
    free(r->tokens);
    free(r);
}

/* <s>[INST][BEGIN_AUDIO][AUDIO]x n_audio[/INST](lang:xx)[TRANSCRIBE]; *audio_at = first [AUDIO]. */
static vox_status build_prompt(voxtral_context *ctx, size_t n_audio, const char *language,
                               int32_t **ids_out, size_t *n_out, size_t *audio_at, vox_error *err) {
    const vox_manifest *c = &ctx->model->cfg;
    int32_t *lang_ids = NULL;
    size_t n_lang = 0;
    if (language && *language) {
        char text[64];
        if (strlen(language) > 16)
            return vox_fail(err, VOX_ERR_INVALID_ARG, "language code '%s' is too long", language);
        snprintf(text, sizeof text, "lang:%s", language);
        vox_status st = vox_tokenizer_encode(ctx->tok, text, strlen(text), &lang_ids, &n_lang, err);
        if (st) return st;
    }
    size_t n = 3 + n_audio + 1 + n_lang + 1;
    int32_t *ids = malloc(n * sizeof *ids);
    if (!ids) {
        free(lang_ids);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    size_t i = 0;
    ids[i++] = c->tokenizer.bos;
    ids[i++] = c->tokenizer.inst;
    ids[i++] = c->tokenizer.begin_audio;
    *audio_at = i;
    for (size_t a = 0; a < n_audio; a++) ids[i++] = c->tokenizer.audio;
    ids[i++] = c->tokenizer.inst_end;
    for (size_t l = 0; l < n_lang; l++) ids[i++] = lang_ids[l];
    ids[i++] = c->tokenizer.transcribe;
    free(lang_ids);
    *ids_out = ids;
    *n_out = n;
    return VOX_OK;
}

/* What --dump-tensors writes: float32 copies taken as the pipeline runs. */
typedef struct {
    float *audio;  /* [n_audio, hidden] */
    float *logits; /* [n_steps, vocab]: the logits each step chose from */
    size_t n_audio, n_steps, hidden, vocab;
} tensor_dump;

static vox_status dump_write(const char *path, const tensor_dump *d, const int32_t *prompt,
                             size_t n_prompt, const int32_t *ids, size_t n_ids, vox_error *err) {
    vox_st_writer *w = vox_st_writer_new();
    if (!w) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    int64_t sa[2] = {(int64_t)d->n_audio, (int64_t)d->hidden};
    int64_t sl[2] = {(int64_t)d->n_steps, (int64_t)d->vocab};
    int64_t sp[1] = {(int64_t)n_prompt}, si[1] = {(int64_t)n_ids};
    vox_status st = vox_st_writer_add(w, "audio_embeddings", VOX_DTYPE_F32, 2, sa, d->audio, err);
    if (!st) st = vox_st_writer_add(w, "logits", VOX_DTYPE_F32, 2, sl, d->logits, err);
    if (!st) st = vox_st_writer_add(w, "prompt_ids", VOX_DTYPE_I32, 1, sp, prompt, err);
    if (!st) st = vox_st_writer_add(w, "ids", VOX_DTYPE_I32, 1, si, ids, err);
    if (!st) st = vox_st_writer_save(w, path, err);
    vox_st_writer_free(w);
    return st;
}

/* Runs prompt + decode loop; fills r->ids, r->tokens, timings. */
static vox_status generate(voxtral_context *ctx, const float *samples, size_t n_samples,
                           const voxtral_transcribe_params *p, double audio_seconds,
                           voxtral_result *r, vox_error *err) {
    vox_model *m = ctx->model;
    vox_backend *be = ctx->be;
    const vox_decoder_config *d = &m->cfg.decoder;
    size_t n_chunks = vox_mel_chunk_count(n_samples);
    size_t n_audio = n_chunks * (size_t)vox_encoder_tokens_per_chunk(m);
    int32_t *prompt = NULL;
    size_t n_prompt = 0, audio_at = 0;
    vox_tensor features = {0}, audio = {0}, x = {0}, logits = {0};
    vox_kv_cache cache = {0};
    tensor_dump dump = {0};
    vox_status st = build_prompt(ctx, n_audio, p->language, &prompt, &n_prompt, &audio_at, err);
    if (st) return st;

    bool forcing = p->force_ids && p->n_force_ids > 0;
    int64_t max_new = forcing ? (int64_t)p->n_force_ids
                      : p->max_new_tokens > 0 ? p->max_new_tokens
                                              : voxtral_default_max_new_tokens(audio_seconds);
    if ((int64_t)n_prompt + max_new > d->max_position_embeddings) {
        if ((int64_t)n_prompt >= d->max_position_embeddings) {
            st = vox_fail(err, VOX_ERR_TOO_LONG,
                          "the prompt needs %zu positions but the model's context is %d: "
                          "split the audio into shorter files", n_prompt, d->max_position_embeddings);
            goto done;
        }
        max_new = d->max_position_embeddings - (int64_t)n_prompt;
    }
    for (size_t i = 0; forcing && i < p->n_force_ids; i++) {
        if (p->force_ids[i] < 0 || p->force_ids[i] >= d->vocab_size) {
            st = vox_fail(err, VOX_ERR_INVALID_ARG, "forced id %d is outside the vocabulary (0..%d)",
                          p->force_ids[i], d->vocab_size - 1);
            goto done;
        }
    }
    r->ids = malloc((size_t)max_new * sizeof *r->ids);
    bool want_stats = p->logprobs > 0 || forcing;
    if (want_stats) r->tokens = calloc((size_t)max_new, sizeof *r->tokens);
    if (p->dump_path) {
        dump.hidden = (size_t)d->hidden, dump.vocab = (size_t)d->vocab_size, dump.n_audio = n_audio;
        dump.audio = malloc(n_audio * dump.hidden * sizeof(float));
        dump.logits = malloc((size_t)max_new * dump.vocab * sizeof(float));
        if (!dump.audio || !dump.logits) {
            st = vox_fail(err, VOX_ERR_NOMEM, "out of memory for --dump-tensors");
            goto done;
        }
    }
    if (!r->ids || (want_stats && !r->tokens)) {
        st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        goto done;
    }

    int mk_mel0 = be->mark(be);
    int64_t feat_shape[3] = {(int64_t)n_chunks, m->cfg.encoder.num_mel_bins, VOX_CHUNK_FRAMES};
    if ((st = vox_tensor_new(be, &features, be->act_type, 3, feat_shape, err)) ||
        (st = be->log_mel(be, &features, samples, n_samples, err)))
        goto done;
    int mk_enc0 = be->mark(be);
    if ((st = vox_tensor_new2(be, &audio, be->act_type, (int64_t)n_audio, d->hidden, err)) ||
        (st = vox_encoder_forward(m, &features, n_chunks, &audio, err)))
        goto done;
    vox_tensor_free(be, &features);
    if (dump.audio && (st = be->download_f32(be, dump.audio, &audio, n_audio * dump.hidden, err)))
        goto done;
    int mk_emb0 = be->mark(be);
    if ((st = vox_tensor_new2(be, &x, be->act_type, (int64_t)n_prompt, d->hidden, err))) goto done;
    be->embed(be, &x, &m->embedding, prompt, n_prompt);
    vox_tensor audio_rows = vox_tensor_rows(&x, (int64_t)audio_at, (int64_t)n_audio);
    be->copy(be, &audio_rows, &audio);
    vox_tensor_free(be, &audio);
    int mk_pre0 = be->mark(be);
    if ((st = vox_kv_cache_init(m, &cache, (int64_t)n_prompt + max_new, err)) ||
        (st = vox_tensor_new2(be, &logits, be->act_type, 1, d->vocab_size, err)) ||
        (st = vox_decoder_forward(m, &cache, &x, &logits, err)))
        goto done;
    vox_tensor_free(be, &x);
    if ((st = vox_tensor_new2(be, &x, be->act_type, 1, d->hidden, err))) goto done;

    int eos = m->cfg.tokenizer.eos;
    int k = p->logprobs > VOX_MAX_TOP_K ? VOX_MAX_TOP_K : p->logprobs;
    int k_ask = p->ignore_eos && k < 2 ? 2 : k;
    int mk_dec0 = -1;
    for (int64_t step = 0; step < max_new; step++) {
        vox_logits_stats s;
        int32_t chosen = forcing ? p->force_ids[step] : -1;
        if ((st = be->logits_stats(be, &logits, chosen, k_ask, &s, err))) goto done;
        if (step == 0) mk_dec0 = be->mark(be);
        if (dump.logits && (st = be->download_f32(be, dump.logits + (size_t)step * dump.vocab, &logits,
                                                  dump.vocab, err)))
            goto done;
        dump.n_steps = dump.logits ? (size_t)step + 1 : 0;
        int32_t id = forcing ? chosen : s.argmax;
        if (!forcing && p->ignore_eos && id == eos) {
            /* Benchmarks decode exactly N tokens: take the best token that is not </s>. */
            id = s.top_ids[0] == eos ? s.top_ids[1] : s.top_ids[0];
            if ((st = be->logits_stats(be, &logits, id, k_ask, &s, err))) goto done;
        }
        if (!forcing && !p->ignore_eos && id == eos) break;
        r->ids[r->n_ids] = id;
        if (want_stats) {
            voxtral_token *t = &r->tokens[r->n_ids];
            t->id = id;
            t->logprob = s.chosen_logprob;
            t->margin = s.argmax_margin;
            t->n_top = k < s.k ? k : s.k;
            memcpy(t->top_ids, s.top_ids, sizeof(int32_t) * (size_t)t->n_top);
            memcpy(t->top_logprobs, s.top_logprobs, sizeof(float) * (size_t)t->n_top);
        }
        r->n_ids++;
        if (p->on_token && !p->on_token(id, p->user_data)) break;
        if (step + 1 == max_new) break;
        be->embed(be, &x, &m->embedding, &id, 1);
        if ((st = vox_decoder_step(m, &cache, &x, &logits, err))) goto done;
    }
    int mk_end = be->mark(be);
    if ((st = be->sync(be, err))) goto done;
    r->timings.mel_ms = be->elapsed_ms(be, mk_mel0, mk_enc0);
    r->timings.audio_encoder_ms = be->elapsed_ms(be, mk_enc0, mk_emb0);
    r->timings.token_embedding_ms = be->elapsed_ms(be, mk_emb0, mk_pre0);
    r->timings.prefill_ms = be->elapsed_ms(be, mk_pre0, mk_dec0 >= 0 ? mk_dec0 : mk_end);
    r->timings.decode_ms = mk_dec0 >= 0 ? be->elapsed_ms(be, mk_dec0, mk_end) : 0.0;
    r->timings.n_prompt_tokens = (int)n_prompt;
    r->timings.n_generated = (int)r->n_ids;
    if (p->dump_path) {
        /* the last step may have chosen </s>, which is not in ids: dump what was chosen from */
        st = dump_write(p->dump_path, &dump, prompt, n_prompt, r->ids, r->n_ids, err);
        if (st) vox_error_prefix(err, "--dump-tensors");
    }
done:
    free(dump.audio);
    free(dump.logits);
    vox_kv_cache_free(m, &cache);
    vox_tensor_free(be, &features);
    vox_tensor_free(be, &audio);
    vox_tensor_free(be, &x);
    vox_tensor_free(be, &logits);
    free(prompt);
    return st;
}

vox_status voxtral_transcribe_pcm(voxtral_context *ctx, const float *samples, size_t n_samples,
                                  const voxtral_transcribe_params *p, voxtral_result **out,
                                  vox_error *err) {
    *out = NULL;
    if (p->logprobs < 0 || p->logprobs > VOX_MAX_TOP_K)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "logprobs must be between 0 and %d", VOX_MAX_TOP_K);
    if (n_samples == 0) return vox_fail(err, VOX_ERR_INVALID_ARG, "the audio is empty");
    voxtral_result *r = calloc(1, sizeof *r);
    if (!r) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    r->audio_seconds = (double)n_samples / VOX_SAMPLE_RATE;
    r->language = p->language;
    double t0 = wall_ms();
    vox_status st = generate(ctx, samples, n_samples, p, r->audio_seconds, r, err);
    if (!st) st = vox_tokenizer_decode(ctx->tok, r->ids, r->n_ids, &r->text, err);
    if (st) {
        voxtral_result_free(r);
        return st;
    }
    size_t live;
    ctx->be->memory(ctx->be, &live, &r->timings.peak_device_bytes);
    r->timings.load_ms = ctx->load_ms;
    r->timings.total_ms = wall_ms() - t0;
    *out = r;
    return VOX_OK;
}

vox_status voxtral_transcribe_file(voxtral_context *ctx, const char *path,
                                   const voxtral_transcribe_params *p, voxtral_result **out,
                                   vox_error *err) {
    *out = NULL;
    double t0 = wall_ms();
    vox_audio audio = {0};
    vox_status st = vox_audio_load(path, 0, &audio, err);
    if (st) return st;
    double audio_ms = wall_ms() - t0;
    st = voxtral_transcribe_pcm(ctx, audio.samples, audio.n_samples, p, out, err);
    vox_audio_free(&audio);
    if (st) {
        vox_error_prefix(err, "%s", path);
        return st;
    }
    (*out)->timings.audio_ms = audio_ms;
    (*out)->timings.total_ms += audio_ms;
    return VOX_OK;
}
