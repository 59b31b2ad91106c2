/* voxtral_runner's public C API: load an exported Voxtral model once, transcribe audio with it.
 *
 *   voxtral_context_params cp = voxtral_context_default_params();
 *   cp.model_dir = "models/voxtral-mini-3b";
 *   voxtral_context *ctx;
 *   if (voxtral_init(&cp, &ctx, &err)) { fprintf(stderr, "%s\n", err.msg); ... }
 *   voxtral_transcribe_params tp = voxtral_transcribe_default_params();
 *   voxtral_result *r;
 *   if (voxtral_transcribe_file(ctx, "audio.wav", &tp, &r, &err) == VOX_OK) puts(r->text);
 *   voxtral_result_free(r);
 *   voxtral_free(ctx);
 *
 * The library never prints; every failure comes back as a status and a message in vox_error. */
#ifndef VOXTRAL_VOXTRAL_H
#define VOXTRAL_VOXTRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxtral/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct voxtral_context voxtral_context;

typedef struct {
    const char *model_dir; /* exported model directory (voxtral.json, blobs, tekken.json) */
    const char *device;    /* "cpu", "cuda", "cuda:N"; NULL: cuda:0 when usable, else cpu */
    bool warmup;           /* GPU: run a 1 s silent clip at load, so the first file does not pay
                              for kernel loading, GEMM plans and graph capture (default true) */
} voxtral_context_params;

/* Called after each generated token; return false to stop (the result keeps what was made). */
typedef bool (*voxtral_token_callback)(int32_t id, void *user_data);

typedef struct {
    const char *language;      /* "en", "fr", ...: adds "lang:xx" to the prompt; NULL: detect */
    int max_new_tokens;        /* <= 0: voxtral_default_max_new_tokens(audio seconds) */
    bool ignore_eos;           /* decode exactly max_new_tokens (benchmarks) */
    int logprobs;              /* 0..20: per token log-probability and this many alternatives */
    const int32_t *force_ids;  /* teacher forcing: feed these ids instead of choosing (scoring) */
    size_t n_force_ids;
    voxtral_token_callback on_token;
    void *user_data;
    /* Developer aid: write the audio embeddings, the prompt, the ids and the float32 logits of
     * every step to this safetensors file (compared with transformers by scripts/). */
    const char *dump_path;
} voxtral_transcribe_params;

/* One generated (or forced) token and how likely the model found it. */
typedef struct {
    int32_t id;
    float logprob;           /* log-softmax (fp32, full vocabulary) of id */
    float margin;            /* top-1 logit minus top-2 logit at this step */
    int n_top;
    int32_t top_ids[20];
    float top_logprobs[20];
} voxtral_token;

/* Per-stage latency in milliseconds (GPU time from CUDA events on the cuda device). */
typedef struct {
    double load_ms;            /* model load (set on the context, copied into each result) */
    double audio_ms;           /* decode + mono + resample */
    double mel_ms;
    double audio_encoder_ms;   /* encoder + projector */
    double token_embedding_ms; /* prompt embedding + [AUDIO] replacement */
    double prefill_ms;         /* text_decoder over the prompt */
    double decode_ms;          /* text_decoder, all generated tokens after the first */
    double total_ms;           /* audio in to ids out */
    int n_prompt_tokens;
    int n_generated;           /* tokens produced (including the first, from prefill) */
    size_t peak_device_bytes;  /* peak bytes of the tensor pool (weights included) */
} voxtral_timings;

typedef struct {
    char *text;                /* the transcript, UTF-8 */
    int32_t *ids;              /* generated ids without </s> */
    size_t n_ids;
    voxtral_token *tokens;     /* n_ids entries when logprobs or forcing was asked, else NULL */
    double audio_seconds;
    const char *language;      /* as asked (NULL: detected by the model, not reported) */
    voxtral_timings timings;
} voxtral_result;

voxtral_context_params voxtral_context_default_params(void);
voxtral_transcribe_params voxtral_transcribe_default_params(void);

/* Default token budget for audio of this length: 32 + 8 per second (fast speech makes about 4
 * tokens a second), capped by the decoder's context. */
int voxtral_default_max_new_tokens(double audio_seconds);

vox_status voxtral_init(const voxtral_context_params *params, voxtral_context **out, vox_error *err);
void voxtral_free(voxtral_context *ctx);
const char *voxtral_device_name(const voxtral_context *ctx);
double voxtral_load_ms(const voxtral_context *ctx);

/* Transcribes a file (decoded, mixed to mono, resampled to 16 kHz). */
vox_status voxtral_transcribe_file(voxtral_context *ctx, const char *path,
                                   const voxtral_transcribe_params *params, voxtral_result **out,
                                   vox_error *err);
/* Transcribes 16 kHz mono float samples. */
vox_status voxtral_transcribe_pcm(voxtral_context *ctx, const float *samples, size_t n_samples,
                                  const voxtral_transcribe_params *params, voxtral_result **out,
                                  vox_error *err);
/* Text of one id (for per-token output); the pointer is valid while ctx lives. */
const char *voxtral_token_text(const voxtral_context *ctx, int32_t id, size_t *len);

void voxtral_result_free(voxtral_result *r);

const char *voxtral_version(void);

#ifdef __cplusplus
}
#endif
#endif
