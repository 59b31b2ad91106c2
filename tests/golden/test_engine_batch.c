/* The queue (continuous batching) on the CPU backend, tiny model: every request transcribed
 * inside a batch must give exactly what it gives alone (voxtral_transcribe_*, a queue of one):
 * the same ids and bit-identical log-probabilities and alternatives. The CPU computes each row
 * with the same loops whatever it is batched with, so anything short of equality is a bug in
 * the batching (a row reading another sequence's keys, a block table off by one, a prompt chunk
 * at the wrong position, a slot refilled before its blocks came back).
 *
 * The requests differ in length (1 to several chunks), token budget, stopping (</s> or the
 * budget), language tag, logprobs and teacher forcing; there are more requests than slots (slots
 * are reused), prompts are cut into chunks of awkward sizes (VOX_STEP_ROWS), and one file is
 * segmented; every other file is submitted as its bytes in memory. Completion order is free, so
 * results are matched by tag. Failures stay isolated: an unreadable file inside the batch fails
 * alone. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "harness.h"
#include "voxtral/voxtral.h"

#define N_REQ 11

typedef struct {
    const char *file;      /* under tiny/audio, or NULL: a slice of speech.flac (long.wav when
                              segmenting: it has pauses) */
    size_t slice0, slice_n; /* the slice (samples) */
    int max_new;
    bool ignore_eos;
    int logprobs;
    const char *language;
    bool force;
    bool segment;
} req_spec;

static const req_spec specs[N_REQ] = {
    {"short.wav", 0, 0, 12, false, 3, NULL, false, false},
    {"long.wav", 0, 0, 20, true, 0, NULL, false, false},
    {NULL, 0, 8000, 5, true, 20, "en", false, false},
    {"stereo44k.wav", 0, 0, 9, false, 0, "fr", false, false},
    {NULL, 16000, 5000, 30, false, 2, NULL, false, false}, /* its callback stops it at 3 */
    {"speech.flac", 0, 0, 7, true, 1, NULL, true, false},
    {NULL, 3, 1, 4, true, 0, NULL, false, false},  /* one sample */
    {"speech.ogg", 0, 0, 16, false, 0, NULL, false, false},
    {NULL, 0, 200000, 6, true, 0, NULL, false, true}, /* 12.5 s cut at its pauses */
    {NULL, 1000, 30000, 11, true, 5, NULL, false, false},
    {"short.wav", 0, 0, 1, true, 0, NULL, false, false},
};

static float *g_speech, *g_long;
static size_t g_speech_n, g_long_n;

/* The samples of a slice request. */
static const float *slice_of(const req_spec *s) { return (s->segment ? g_long : g_speech) + s->slice0; }
static int32_t g_force[7] = {1005, 1100, 2, 1013, 1200, 1001, 1042};

/* Stops a request after 3 tokens, as a caller's on_token may (the sequence leaves the batch). */
static bool stop_at_3(int32_t id, void *user) {
    (void)id;
    int *n = user;
    return ++*n < 3;
}
static int g_counts[64];
static int g_count_next;

static voxtral_transcribe_params params_of(const req_spec *s) {
    voxtral_transcribe_params p = voxtral_transcribe_default_params();
    if (s == &specs[4]) {
        p.on_token = stop_at_3;
        p.user_data = &g_counts[g_count_next++ % 64];
    }
    p.max_new_tokens = s->max_new;
    p.ignore_eos = s->ignore_eos;
    p.logprobs = s->logprobs;
    p.language = s->language;
    if (s->force) {
        p.force_ids = g_force;
        p.n_force_ids = 7;
    }
    p.segment = s->segment;
    return p;
}

static void path_of(const req_spec *s, char *buf, size_t n) {
    snprintf(buf, n, "%s/tiny/audio/%s", VOX_FIXTURES, s->file);
}

/* Same ids, same token statistics, bit for bit. */
static void same_result(const char *what, const voxtral_result *a, const voxtral_result *b) {
    CHECK_MSG(a->n_ids == b->n_ids, "%s: %zu ids batched, %zu alone", what, a->n_ids, b->n_ids);
    size_t n = a->n_ids < b->n_ids ? a->n_ids : b->n_ids;
    CHECK_MSG(n == 0 || memcmp(a->ids, b->ids, n * sizeof *a->ids) == 0, "%s: ids differ", what);
    CHECK_MSG(!a->tokens == !b->tokens, "%s: token statistics on one side only", what);
    for (size_t i = 0; a->tokens && b->tokens && i < n; i++) {
        const voxtral_token *x = &a->tokens[i], *y = &b->tokens[i];
        CHECK_MSG(x->id == y->id && x->logprob == y->logprob && x->margin == y->margin &&
                      x->n_top == y->n_top &&
                      memcmp(x->top_ids, y->top_ids, sizeof(int32_t) * (size_t)x->n_top) == 0 &&
                      memcmp(x->top_logprobs, y->top_logprobs, sizeof(float) * (size_t)x->n_top) == 0,
                  "%s: token %zu differs (logprob %.9g vs %.9g)", what, i, x->logprob, y->logprob);
    }
    CHECK_MSG(strcmp(a->text, b->text) == 0, "%s: text differs", what);
    CHECK_MSG(a->segmented == b->segmented && a->n_segments == b->n_segments,
              "%s: %zu segments batched, %zu alone", what, a->n_segments, b->n_segments);
    for (size_t i = 0; i < a->n_segments && i < b->n_segments; i++) {
        char w[300];
        snprintf(w, sizeof w, "%s segment %zu", what, i);
        CHECK(a->segments[i].start == b->segments[i].start && a->segments[i].end == b->segments[i].end);
        same_result(w, a->segments[i].r, b->segments[i].r);
    }
}

typedef struct {
    voxtral_result *r[N_REQ + 1];
    vox_status st[N_REQ + 1];
    int calls[N_REQ + 1];
    char err[N_REQ + 1][512];
    char path[N_REQ + 1][1024]; /* the completion's */
} batch_out;

static void on_complete(const voxtral_completion *c, void *user) {
    batch_out *o = user;
    CHECK(c->tag <= N_REQ);
    if (c->tag > N_REQ) return;
    o->calls[c->tag]++;
    o->r[c->tag] = c->result;
    o->st[c->tag] = c->status;
    if (c->error) snprintf(o->err[c->tag], sizeof o->err[c->tag], "%s", c->error);
    snprintf(o->path[c->tag], sizeof o->path[c->tag], "%s", c->path ? c->path : "(null)");
}

/* A whole file's bytes (malloc'ed), for voxtral_queue_submit_encoded. */
static unsigned char *file_bytes(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    *size = buf ? (size_t)n : 0;
    return buf;
}

/* Every request through one queue of max_batch slots; tag N_REQ is a file that does not exist.
 * Every other file goes in as its bytes in memory (voxtral_queue_submit_encoded, named by its
 * path): the same result as the file, and the completion names it. */
static void run_batched(voxtral_context *ctx, int max_batch, const char *step_rows,
                        voxtral_result **alone) {
    batch_out out;
    memset(&out, 0, sizeof out);
    if (step_rows) setenv("VOX_STEP_ROWS", step_rows, 1);
    else unsetenv("VOX_STEP_ROWS");
    voxtral_queue_params qp = voxtral_queue_default_params();
    qp.max_batch = max_batch;
    qp.reader_threads = 3;
    qp.read_ahead = 2;
    qp.on_complete = on_complete;
    qp.user_data = &out;
    voxtral_queue *q = NULL;
    vox_error err = {0};
    CHECK_MSG(voxtral_queue_create(ctx, &qp, &q, &err) == VOX_OK, "%s", err.msg);
    if (!q) return;
    unsigned char *encoded[N_REQ] = {0};
    char paths[N_REQ][1024] = {{0}};
    for (int i = 0; i < N_REQ; i++) {
        voxtral_transcribe_params p = params_of(&specs[i]);
        char *path = paths[i];
        if (specs[i].file && i % 2) {
            path_of(&specs[i], path, sizeof paths[i]);
            size_t size = 0;
            encoded[i] = file_bytes(path, &size);
            CHECK_MSG(encoded[i], "cannot read %s", path);
            CHECK(voxtral_queue_submit_encoded(q, encoded[i], size, path, &p, (uint64_t)i, &err) == VOX_OK);
        } else if (specs[i].file) {
            path_of(&specs[i], path, sizeof paths[i]);
            CHECK(voxtral_queue_submit_file(q, path, &p, (uint64_t)i, &err) == VOX_OK);
        } else {
            CHECK(voxtral_queue_submit_pcm(q, slice_of(&specs[i]), specs[i].slice_n, &p,
                                           (uint64_t)i, &err) == VOX_OK);
        }
        if (i == 4) { /* a bad file in the middle of the batch */
            voxtral_transcribe_params bp = voxtral_transcribe_default_params();
            CHECK(voxtral_queue_submit_file(q, VOX_FIXTURES "/no/such/file.wav", &bp, N_REQ, &err) == VOX_OK);
        }
    }
    CHECK_MSG(voxtral_queue_run(q, &err) == VOX_OK, "run: %s", err.msg);
    voxtral_queue_stats qs;
    voxtral_queue_get_stats(q, &qs);
    printf("batch %d, step rows %s: %ld steps, %.2f sequences a decode step, KV pool %.1f KiB, "
           "%.1f%% of the held blocks unwritten at the peak\n", max_batch,
           step_rows ? step_rows : "default", qs.steps, qs.mean_batch, qs.kv_bytes / 1024.0,
           100.0 * qs.kv_waste);
    if (max_batch > 1) CHECK_MSG(qs.mean_batch > 1.0, "batch %d: no step ran more than one sequence", max_batch);
    voxtral_queue_free(q);
    for (int i = 0; i < N_REQ; i++) {
        if (specs[i].file) CHECK_MSG(strcmp(out.path[i], paths[i]) == 0, "request %d: completion path '%s', want '%s'", i, out.path[i], paths[i]);
        free(encoded[i]);
    }
    for (int i = 0; i <= N_REQ; i++)
        CHECK_MSG(out.calls[i] == 1, "request %d completed %d times", i, out.calls[i]);
    CHECK_MSG(out.st[N_REQ] == VOX_ERR_IO && strstr(out.err[N_REQ], "no/such/file.wav"),
              "the missing file: status %d, '%s'", out.st[N_REQ], out.err[N_REQ]);
    for (int i = 0; i < N_REQ; i++) {
        char what[200];
        snprintf(what, sizeof what, "batch %d rows %s request %d (%s)", max_batch,
                 step_rows ? step_rows : "default", i, specs[i].file ? specs[i].file : "pcm");
        CHECK_MSG(out.st[i] == VOX_OK && out.r[i], "%s: %s", what, out.err[i]);
        if (out.r[i] && alone[i]) same_result(what, out.r[i], alone[i]);
        voxtral_result_free(out.r[i]);
    }
}

int main(int argc, char **argv) {
    /* the model: the tiny fixture model, or the directory given (ctest's NAME_fp8: its FP8 export) */
    const char *model = argc > 1 ? argv[1] : VOX_TINY_MODEL;
    voxtral_context_params cp = voxtral_context_default_params();
    cp.model_dir = model;
    cp.device = "cpu";
    voxtral_context *ctx = NULL;
    vox_error err = {0};
    if (voxtral_init(&cp, &ctx, &err)) {
        fprintf(stderr, "cannot load the tiny model: %s\n", err.msg);
        return 1;
    }
    vox_audio speech, longer;
    CHECK_MSG(vox_audio_load(VOX_FIXTURES "/tiny/audio/speech.flac", 0, &speech, &err) == VOX_OK, "%s", err.msg);
    CHECK_MSG(vox_audio_load(VOX_FIXTURES "/tiny/audio/long.wav", 0, &longer, &err) == VOX_OK, "%s", err.msg);
    g_speech = speech.samples;
    g_speech_n = speech.n_samples;
    g_long = longer.samples;
    g_long_n = longer.n_samples;
    for (int i = 0; i < N_REQ; i++)
        if (!specs[i].file)
            CHECK(specs[i].slice0 + specs[i].slice_n <= (specs[i].segment ? g_long_n : g_speech_n));

    /* each request alone */
    voxtral_result *alone[N_REQ] = {0};
    unsetenv("VOX_STEP_ROWS");
    int stopped_early = 0;
    for (int i = 0; i < N_REQ; i++) {
        voxtral_transcribe_params p = params_of(&specs[i]);
        char path[1024];
        vox_status st;
        if (specs[i].file) {
            path_of(&specs[i], path, sizeof path);
            st = voxtral_transcribe_file(ctx, path, &p, &alone[i], &err);
        } else {
            st = voxtral_transcribe_pcm(ctx, slice_of(&specs[i]), specs[i].slice_n, &p, &alone[i], &err);
        }
        CHECK_MSG(st == VOX_OK, "request %d alone: %s", i, err.msg);
        if (alone[i] && !specs[i].ignore_eos && !specs[i].segment &&
            (int)alone[i]->n_ids < specs[i].max_new)
            stopped_early++;
    }
    printf("%d requests; %d of those that may stop at </s> did\n", N_REQ, stopped_early);

    /* a file's bytes through voxtral_transcribe_encoded: the file's result; bad bytes fail, named */
    for (int i = 0; i < N_REQ; i++) {
        if (!specs[i].file || !alone[i]) continue;
        voxtral_transcribe_params p = params_of(&specs[i]);
        char path[1024];
        path_of(&specs[i], path, sizeof path);
        size_t size = 0;
        unsigned char *bytes = file_bytes(path, &size);
        voxtral_result *r = NULL;
        CHECK_MSG(bytes && voxtral_transcribe_encoded(ctx, bytes, size, path, &p, &r, &err) == VOX_OK,
                  "%s as bytes: %s", path, err.msg);
        if (r) same_result("voxtral_transcribe_encoded", r, alone[i]);
        voxtral_result_free(r);
        free(bytes);
        r = NULL;
        vox_status st = voxtral_transcribe_encoded(ctx, "RIFF not audio", 14, "bytes.bin", &p, &r, &err);
        CHECK_MSG(st == VOX_ERR_FORMAT && !r && strstr(err.msg, "bytes.bin"),
                  "bad bytes: status %d, '%s'", (int)st, err.msg);
        break; /* one file is enough: the batch below submits the others as bytes */
    }
    /* misuse is an argument error, not a crash */
    voxtral_transcribe_params dp = voxtral_transcribe_default_params();
    voxtral_result *none = NULL;
    CHECK(voxtral_transcribe_pcm(ctx, NULL, 16, &dp, &none, &err) == VOX_ERR_INVALID_ARG && !none);
    CHECK(voxtral_transcribe_pcm(ctx, g_speech, 0, &dp, &none, &err) == VOX_ERR_INVALID_ARG && !none);
    CHECK(voxtral_transcribe_file(ctx, NULL, &dp, &none, &err) == VOX_ERR_INVALID_ARG && !none);
    voxtral_context *no_ctx = (voxtral_context *)1;
    voxtral_context_params no_dir = voxtral_context_default_params();
    no_dir.model_dir = NULL;
    CHECK(voxtral_init(&no_dir, &no_ctx, &err) == VOX_ERR_INVALID_ARG && !no_ctx);
    CHECK(voxtral_init(NULL, &no_ctx, &err) == VOX_ERR_INVALID_ARG && !no_ctx);
    /* err may be NULL where only the status is wanted (these crashed when a message was made) */
    no_dir.model_dir = VOX_FIXTURES "/no/such/model";
    CHECK(voxtral_init(&no_dir, &no_ctx, NULL) != VOX_OK && !no_ctx);
    CHECK(voxtral_transcribe_file(ctx, VOX_FIXTURES "/no/such/file.wav", &dp, &none, NULL) == VOX_ERR_IO && !none);
    {
        /* one context given twice to a multi-device queue: refused (two engines on one backend
         * gave wrong transcripts or broke an assertion) */
        voxtral_queue_params qp = voxtral_queue_default_params();
        qp.on_complete = on_complete;
        voxtral_context *twice[2] = {ctx, ctx};
        voxtral_queue *q = (voxtral_queue *)1;
        CHECK(voxtral_queue_create_multi(twice, 2, &qp, &q, &err) == VOX_ERR_INVALID_ARG && !q &&
              strstr(err.msg, "context 1 is context 0 again"));
    }
    {
        voxtral_queue_params qp = voxtral_queue_default_params();
        voxtral_queue *q = (voxtral_queue *)1;
        CHECK(voxtral_queue_create(ctx, NULL, &q, &err) == VOX_ERR_INVALID_ARG && !q);
        qp.on_complete = on_complete;
        q = (voxtral_queue *)1;
        CHECK(voxtral_queue_create(NULL, &qp, &q, &err) == VOX_ERR_INVALID_ARG && !q);
        batch_out *o = calloc(1, sizeof *o);
        qp.user_data = o;
        CHECK(o && voxtral_queue_create(ctx, &qp, &q, &err) == VOX_OK);
        CHECK(voxtral_queue_submit_file(q, NULL, &dp, 0, &err) == VOX_ERR_INVALID_ARG);
        CHECK(voxtral_queue_submit_file(q, "x.wav", NULL, 0, &err) == VOX_ERR_INVALID_ARG);
        /* a count whose bytes would wrap: refused at submission, nothing copied */
        CHECK(voxtral_queue_submit_pcm(q, g_speech, SIZE_MAX / 4 + 2, &dp, 0, &err) == VOX_ERR_INVALID_ARG);
        /* non-finite samples and more than 30 min fail the request through the callback, named,
         * as a decoded file's do; the good request beside them is transcribed */
        float *bad = malloc(16000 * sizeof *bad);
        const size_t long_n = (size_t)VOX_MAX_AUDIO_SECONDS * VOX_SAMPLE_RATE + 1;
        float *longest = calloc(long_n, sizeof *longest);
        CHECK(bad && longest);
        if (bad && longest) {
            memcpy(bad, g_speech, 16000 * sizeof *bad);
            bad[1234] = NAN;
            dp.max_new_tokens = 3;
            CHECK(voxtral_queue_submit_pcm(q, bad, 16000, &dp, 1, &err) == VOX_OK);
            CHECK(voxtral_queue_submit_pcm(q, longest, long_n, &dp, 2, &err) == VOX_OK);
            CHECK(voxtral_queue_submit_pcm(q, g_speech, 16000, &dp, 3, &err) == VOX_OK);
            CHECK_MSG(voxtral_queue_run(q, &err) == VOX_OK, "%s", err.msg);
            CHECK_MSG(o->st[1] == VOX_ERR_FORMAT && strstr(o->err[1], "the PCM samples: sample at frame 1234 is NaN"),
                      "NaN samples: status %d, '%s'", (int)o->st[1], o->err[1]);
            CHECK_MSG(o->st[2] == VOX_ERR_TOO_LONG && strstr(o->err[2], "the PCM samples: audio is longer than 30 min"),
                      "31 min of samples: status %d, '%s'", (int)o->st[2], o->err[2]);
            CHECK_MSG(o->st[3] == VOX_OK && o->r[3] && o->r[3]->n_ids > 0, "the good request: status %d",
                      (int)o->st[3]);
        }
        for (int i = 0; i <= N_REQ; i++) voxtral_result_free(o ? o->r[i] : NULL);
        free(bad), free(longest), free(o);
        voxtral_queue_free(q);
        dp = voxtral_transcribe_default_params();
    }

    CHECK_MSG(alone[4] && alone[4]->n_ids == 3, "the request its callback stops has %zu ids",
              alone[4] ? alone[4]->n_ids : 0);
    CHECK_MSG(alone[8] && alone[8]->n_segments >= 2, "the segmented request has %zu segments",
              alone[8] ? alone[8]->n_segments : 0);
    run_batched(ctx, 16, NULL, alone);   /* all at once */
    run_batched(ctx, 3, "23", alone);    /* slots reused as sequences leave; prompts cut into
                                            chunks of 23 rows and less */

    for (int i = 0; i < N_REQ; i++) voxtral_result_free(alone[i]);
    vox_audio_free(&speech);
    vox_audio_free(&longer);
    voxtral_free(ctx);
    return test_finish("engine_batch");
}
