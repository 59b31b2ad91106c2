/* voxtral_runner's public C API: load an exported Voxtral model once, transcribe audio with it.
 *
 * One file at a time:
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
 * Many at once (continuous batching: every request in flight shares each pass over the weights):
 *   voxtral_queue_params qp = voxtral_queue_default_params();
 *   qp.on_complete = done;            // called once per request, in completion order
 *   voxtral_queue *q;
 *   voxtral_queue_create(ctx, &qp, &q, &err);
 *   for (...) voxtral_queue_submit_file(q, path, &tp, tag, &err);
 *   voxtral_queue_run(q, &err);       // returns when every submitted request is complete
 *   voxtral_queue_free(q);
 *
 * The library never prints; every failure comes back as a status and a message in vox_error
 * (err may be NULL where only the status is wanted). */
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
    bool warmup;           /* GPU: run a 1 s silent clip at load (prefill and one decode step), so
                              that the first file does not pay for kernel loading, GEMM plans and
                              the memory pool's growth (default true; VOX_NO_WARMUP=1 turns it
                              off for measurements) */
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
    /* Cut the audio at pauses and transcribe each piece as its own request (result->segments);
     * lifts the 30-minute limit of one request to 10 hours. */
    bool segment;
    double silence_threshold_db; /* segment: silence is this far below the loud level (-35) */
    double min_silence_s;        /* segment: shorter pauses are not cut (0.5) */
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
    double total_ms;           /* audio in to ids out (queue: submission to completion) */
    double queue_ms;           /* queue: from submission (or audio ready) to admission */
    int n_prompt_tokens;
    int n_generated;           /* tokens produced (including the first, from prefill) */
    size_t peak_device_bytes;  /* peak bytes of the tensor pool (weights included) */
} voxtral_timings;

/* Where the time of voxtral_init went (wall clock, milliseconds). The device starts on a thread
 * of its own while this one opens the model's files, and the tokenizer loads on a third; then
 * the weights are made, the device synchronised and the warm-up run. */
typedef struct {
    double total_ms;           /* all of voxtral_init (voxtral_load_ms) */
    double device_ms;          /* device thread: backend creation (cuda: context and staging) */
    double context_ms;         /*   driver start, context, stream, memory pool */
    double staging_ms;         /*   GEMM workspace, pinned staging buffers */
    double blas_ms;            /* cuBLASLt thread: loading the library (0.1 s of static
                                  initialisers), its handle; beside the weights */
    double model_files_ms;     /* manifest, blob headers (opened and mapped), weight checks */
    double tokenizer_ms;       /* tokenizer thread: tekken.json */
    double device_wait_ms;     /* this thread waiting for the device thread after the files */
    double weights_ms;         /* making every weight on the device, start to finish: */
    double alloc_ms;           /*   device allocations */
    double serial_ms;          /*   weights uploaded one by one (converted from F32/F16 files;
                                    all of them with VOX_LOAD_THREADS=0) */
    double bulk_ms;            /*   the parallel reads and uploads of the rest, start to finish */
    double read_ms;            /*     time in pread, mean over the reader threads */
    double buffer_wait_ms;     /*     readers waiting for a staging buffer (uploads behind), mean */
    double upload_ms;          /*     device time with a host-to-device copy in flight */
    double upload_after_reads_ms; /*  of which after the last read (the uploads reads did not hide) */
    double bytes;              /*     bytes read and uploaded by the readers */
    int threads;               /*     reader threads (0: none) */
    double blas_wait_ms;       /* waiting for the cuBLASLt thread after the weights */
    double tokenizer_wait_ms;  /* waiting for the tokenizer thread after the weights */
    double sync_ms;            /* the device finishing what the load enqueued */
    double warmup_ms;          /* the warm-up clip (0 when off) */
} voxtral_load_timings;

typedef struct voxtral_result voxtral_result;

/* A piece of a segmented request: where its speech starts and ends in the audio (seconds). */
typedef struct {
    double start, end;
    voxtral_result *r;         /* its transcript; r->audio_seconds: the audio it was given */
} voxtral_segment;

struct voxtral_result {
    char *text;                /* the transcript, UTF-8 (segmented: the pieces' texts trimmed and
                                  joined by single spaces) */
    int32_t *ids;              /* generated ids without </s> */
    size_t n_ids;
    voxtral_token *tokens;     /* n_ids entries when logprobs or forcing was asked, else NULL */
    double audio_seconds;
    const char *language;      /* as asked (NULL: detected by the model, not reported) */
    voxtral_timings timings;   /* segmented: summed over the pieces */
    char *warning;             /* a problem with the input that did not stop it (a truncated
                                  file: what was expected and what was decoded), or NULL */
    bool segmented;
    voxtral_segment *segments; /* segmented: the pieces with speech, in order (ids is empty) */
    size_t n_segments;
};

voxtral_context_params voxtral_context_default_params(void);
voxtral_transcribe_params voxtral_transcribe_default_params(void);

/* Default token budget for audio of this length: 32 + 8 per second (fast speech makes about 4
 * tokens a second), capped by the decoder's context. */
int voxtral_default_max_new_tokens(double audio_seconds);

vox_status voxtral_init(const voxtral_context_params *params, voxtral_context **out, vox_error *err);
void voxtral_free(voxtral_context *ctx);
const char *voxtral_device_name(const voxtral_context *ctx);
/* CUDA devices usable by this build (0 without the CUDA backend or a GPU). */
int voxtral_cuda_device_count(void);
double voxtral_load_ms(const voxtral_context *ctx);
/* Where the load's time went. */
voxtral_load_timings voxtral_load_breakdown(const voxtral_context *ctx);

/* Transcribes a file (decoded, mixed to mono, resampled to 16 kHz). */
vox_status voxtral_transcribe_file(voxtral_context *ctx, const char *path,
                                   const voxtral_transcribe_params *params, voxtral_result **out,
                                   vox_error *err);
/* Transcribes an audio file held in memory (its bytes, any format a path may hold); name stands
 * for it in messages (NULL: "(memory)"). */
vox_status voxtral_transcribe_encoded(voxtral_context *ctx, const void *data, size_t size,
                                      const char *name, const voxtral_transcribe_params *params,
                                      voxtral_result **out, vox_error *err);
/* Transcribes 16 kHz mono float samples. */
vox_status voxtral_transcribe_pcm(voxtral_context *ctx, const float *samples, size_t n_samples,
                                  const voxtral_transcribe_params *params, voxtral_result **out,
                                  vox_error *err);
/* Text of one id (for per-token output); the pointer is valid while ctx lives. */
const char *voxtral_token_text(const voxtral_context *ctx, int32_t id, size_t *len);

void voxtral_result_free(voxtral_result *r);

/* ---- many requests at once: the queue ---- */

typedef struct voxtral_queue voxtral_queue;

/* What a completed request reports. */
typedef struct {
    uint64_t tag;              /* the caller's, from submit */
    const char *path;          /* the file submitted, or the name of an encoded one (NULL for
                                  PCM) */
    vox_status status;         /* VOX_OK, or why it failed; VOX_ERR_INTERRUPTED after cancel */
    const char *error;         /* the message when status != VOX_OK (names the file) */
    voxtral_result *result;    /* on success; the callback owns it (voxtral_result_free) */
} voxtral_completion;

typedef void (*voxtral_completion_callback)(const voxtral_completion *c, void *user_data);

typedef struct {
    int max_batch;             /* most sequences decoded at once; <= 0: sized from the device's
                                  free memory (voxtral_queue_batch_size reports the choice) */
    int read_ahead;            /* files decoded ahead of the GPU; <= 0: two encoder groups a device (64 on a GPU, 16 on the CPU), at least 16 */
    int reader_threads;        /* threads decoding audio; <= 0: the cores, 2 to 8 */
    voxtral_completion_callback on_complete; /* required */
    void *user_data;
} voxtral_queue_params;

/* Figures of a queue's run, for reports. */
typedef struct {
    int max_batch;             /* sequences in flight at most */
    size_t kv_bytes;           /* the KV cache pool */
    int kv_block_size;         /* positions a block */
    long steps;                /* decoder steps run */
    long decode_steps;         /* steps that decoded at least one sequence */
    double mean_batch;         /* sequences decoded a step, mean over those steps */
    size_t kv_peak_used_bytes; /* KV blocks in use at most */
    double kv_waste;           /* at that peak, the share of held block rows not yet written */
    double queue_wait_ms;      /* summed over requests: submission (audio ready) to admission */
    double gpu_ms;             /* device time of the queue's work (stage total) */
    long requests;             /* pieces transcribed (a file, or each segment of one) */
    size_t peak_device_bytes;  /* the device's peak memory (totals: the largest) */
    long shrinks;              /* decoder steps and encoder groups that failed on a device that
                                  worked on (out of memory, say) and ran again smaller (steps:
                                  half their sequences; groups: half their files, or a file's
                                  chunks fewer at once), instead of the requests failing */
    int smallest_step_limit;   /* the fewest sequences a step was then limited to (0: never;
                                  totals: the smallest over the devices) */
} voxtral_queue_stats;

voxtral_queue_params voxtral_queue_default_params(void);
vox_status voxtral_queue_create(voxtral_context *ctx, const voxtral_queue_params *params,
                                voxtral_queue **out, vox_error *err);
/* A queue over several contexts, one per device, each with its own copy of the weights (a
 * context given twice is refused: VOX_ERR_INVALID_ARG): each device runs its own batch on a
 * thread of its own, all taking requests from the one queue; params.max_batch applies to each
 * device. Callbacks still come one at a time, never two at once, but each on the thread of the
 * device that completed the request. A device that fails ends what it had in flight (those
 * requests fail) and the others go on. */
vox_status voxtral_queue_create_multi(voxtral_context *const *ctxs, int n,
                                      const voxtral_queue_params *params, voxtral_queue **out,
                                      vox_error *err);
/* Queues a file (decoded, mixed to mono and resampled by reader threads) or 16 kHz mono PCM
 * (copied). params is copied; its pointers (language, force_ids) must stay valid until the
 * request completes. Failures of the request itself (unreadable audio; PCM, like a decoded
 * file, must be finite and at most 30 min long) come back through the callback, never here;
 * submit fails only on bad arguments. */
vox_status voxtral_queue_submit_file(voxtral_queue *q, const char *path,
                                     const voxtral_transcribe_params *params, uint64_t tag,
                                     vox_error *err);
vox_status voxtral_queue_submit_pcm(voxtral_queue *q, const float *samples, size_t n_samples,
                                    const voxtral_transcribe_params *params, uint64_t tag,
                                    vox_error *err);
/* Queues an audio file held in memory (the bytes of any format a path may hold: a pipe read to
 * its end, a download), decoded by the reader threads like a file. `name` stands for it in
 * messages and in the completion's path (copied; NULL: "(memory)"). The bytes are not copied:
 * they must stay valid until the request completes. */
vox_status voxtral_queue_submit_encoded(voxtral_queue *q, const void *data, size_t size,
                                        const char *name, const voxtral_transcribe_params *params,
                                        uint64_t tag, vox_error *err);
/* Runs until every submitted request has completed (each through the callback: on this thread
 * with one device; voxtral_queue_create_multi says where with several). Fails only when the
 * device itself fails; the requests not done then complete with that error; after
 * voxtral_queue_cancel, VOX_ERR_INTERRUPTED. */
vox_status voxtral_queue_run(voxtral_queue *q, vox_error *err);
/* Asks a running queue to stop: requests not yet complete end with VOX_ERR_INTERRUPTED. A
 * cancelled queue stays so: what is submitted or run on it afterwards ends the same way at once
 * (create another queue to go on). Async-signal-safe. */
void voxtral_queue_cancel(voxtral_queue *q);
/* The most sequences in flight, over every device. */
int voxtral_queue_batch_size(const voxtral_queue *q);
/* Totals over the devices. */
void voxtral_queue_get_stats(const voxtral_queue *q, voxtral_queue_stats *out);
int voxtral_queue_device_count(const voxtral_queue *q);
/* One device's figures and name ("cuda:1"); VOX_ERR_INVALID_ARG for a device out of range. */
vox_status voxtral_queue_get_device_stats(const voxtral_queue *q, int device,
                                          voxtral_queue_stats *out, const char **name);
void voxtral_queue_free(voxtral_queue *q);

const char *voxtral_version(void);

#ifdef __cplusplus
}
#endif
#endif
