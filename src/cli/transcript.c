/* Transcribing one file for the CLI: decode (audio/), cut (segment/), one request per piece
 * through the public API, texts joined and timings summed. */
#include "cli/transcript.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audio/audio.h"
#include "cli/interrupt.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

char *vox_cli_trim_dup(const char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    char *t = malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = 0;
    }
    return t;
}

void vox_transcript_free(vox_transcript *t) {
    for (size_t i = 0; i < t->n_segs; i++) voxtral_result_free(t->segs[i].r);
    free(t->segs);
    free(t->text);
    memset(t, 0, sizeof *t);
}

/* What the on_token callback needs: where the request sits in the file, for the progress. */
typedef struct {
    const vox_cli_run_params *p;
    double done_s, total_s;
    int tokens;
} token_state;

static bool on_token(int32_t id, void *user) {
    (void)id;
    token_state *s = user;
    s->tokens++;
    if (s->p->progress) s->p->progress(s->done_s, s->total_s, s->tokens, s->p->user);
    return !vox_interrupted();
}

static void add_timings(voxtral_timings *sum, const voxtral_timings *x) {
    sum->mel_ms += x->mel_ms;
    sum->audio_encoder_ms += x->audio_encoder_ms;
    sum->token_embedding_ms += x->token_embedding_ms;
    sum->prefill_ms += x->prefill_ms;
    sum->decode_ms += x->decode_ms;
    sum->total_ms += x->total_ms;
    sum->n_prompt_tokens += x->n_prompt_tokens;
    sum->n_generated += x->n_generated;
    sum->load_ms = x->load_ms;
    if (x->peak_device_bytes > sum->peak_device_bytes) sum->peak_device_bytes = x->peak_device_bytes;
}

/* The pieces to transcribe: the segmenter's, or the whole file as one. */
static vox_status plan(const vox_audio *a, const vox_cli_run_params *p, vox_segment **segs,
                       size_t *n, vox_error *err) {
    if (p->segment) return vox_segment_find(a->samples, a->n_samples, VOX_SAMPLE_RATE, &p->seg, segs, n, err);
    *segs = malloc(sizeof **segs);
    if (!*segs) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    (*segs)[0] = (vox_segment){.start = 0, .end = a->n_samples, .audio_start = 0,
                               .audio_end = a->n_samples};
    *n = 1;
    return VOX_OK;
}

/* The texts of the pieces, trimmed, joined by one space (segmented), or the text as it is. */
static char *join_texts(const vox_transcript *t) {
    if (!t->segmented) return strdup(t->n_segs ? t->segs[0].r->text : "");
    size_t cap = 1;
    for (size_t i = 0; i < t->n_segs; i++) cap += strlen(t->segs[i].r->text) + 1;
    char *out = malloc(cap), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < t->n_segs; i++) {
        char *s = vox_cli_trim_dup(t->segs[i].r->text);
        if (!s) {
            free(out);
            return NULL;
        }
        if (*s && o > out) *o++ = ' ';
        size_t len = strlen(s);
        memcpy(o, s, len);
        o += len;
        free(s);
    }
    *o = 0;
    return out;
}

vox_status vox_cli_transcribe(voxtral_context *ctx, const char *path, const vox_cli_run_params *p,
                              vox_transcript *t, vox_error *err) {
    memset(t, 0, sizeof *t);
    t->path = path;
    t->language = p->tp.language;
    t->logprobs = p->tp.logprobs > 0 || p->tp.n_force_ids > 0;
    t->segmented = p->segment;
    double t0 = now_ms();
    vox_audio a;
    vox_status st = vox_audio_load(path, p->segment ? VOX_CLI_SEGMENTED_MAX_SECONDS : 0, &a, err);
    if (st == VOX_ERR_TOO_LONG && !p->segment) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof err->msg - len, "; or use --segment to transcribe it in "
                 "pieces cut at pauses");
    }
    if (st) return st;
    t->timings.audio_ms = now_ms() - t0;
    t->audio_seconds = (double)a.n_samples / VOX_SAMPLE_RATE;

    vox_segment *plan_segs = NULL;
    size_t n_plan = 0;
    st = plan(&a, p, &plan_segs, &n_plan, err);
    if (!st && n_plan && !(t->segs = calloc(n_plan, sizeof *t->segs)))
        st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    token_state ts = {.p = p, .total_s = t->audio_seconds};
    voxtral_transcribe_params tp = p->tp;
    tp.on_token = on_token;
    tp.user_data = &ts;
    for (size_t i = 0; !st && i < n_plan; i++) {
        if (vox_interrupted()) { /* before the encoder, which no signal can stop */
            st = vox_fail(err, VOX_ERR_INTERRUPTED, "interrupted");
            break;
        }
        const vox_segment *s = &plan_segs[i];
        ts.done_s = (double)s->audio_start / VOX_SAMPLE_RATE;
        ts.tokens = 0;
        if (p->progress) p->progress(ts.done_s, ts.total_s, 0, p->user);
        voxtral_result *r = NULL;
        st = voxtral_transcribe_pcm(ctx, a.samples + s->audio_start, s->audio_end - s->audio_start,
                                    &tp, &r, err);
        if (st) break;
        t->segs[t->n_segs++] = (vox_cli_segment){.start = (double)s->start / VOX_SAMPLE_RATE,
                                                 .end = (double)s->end / VOX_SAMPLE_RATE, .r = r};
        add_timings(&t->timings, &r->timings);
        if (vox_interrupted()) st = vox_fail(err, VOX_ERR_INTERRUPTED, "interrupted");
    }
    free(plan_segs);
    vox_audio_free(&a);
    if (!st && vox_interrupted()) st = vox_fail(err, VOX_ERR_INTERRUPTED, "interrupted");
    if (!st && !(t->text = join_texts(t))) st = vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    if (st) {
        if (st != VOX_ERR_INTERRUPTED) vox_error_prefix(err, "%s", path);
        vox_transcript_free(t);
        return st;
    }
    if (p->progress) p->progress(t->audio_seconds, t->audio_seconds, 0, p->user);
    t->timings.total_ms = now_ms() - t0;
    if (!t->timings.load_ms) t->timings.load_ms = voxtral_load_ms(ctx);
    return VOX_OK;
}
