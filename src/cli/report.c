#include "cli/report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

void vox_run_totals_add(vox_run_totals *t, const voxtral_result *r) {
    const voxtral_timings *x = &r->timings;
    voxtral_timings *s = &t->sum;
    s->audio_ms += x->audio_ms;
    s->mel_ms += x->mel_ms;
    s->audio_encoder_ms += x->audio_encoder_ms;
    s->token_embedding_ms += x->token_embedding_ms;
    s->prefill_ms += x->prefill_ms;
    s->decode_ms += x->decode_ms;
    s->total_ms += x->total_ms;
    s->n_prompt_tokens += x->n_prompt_tokens;
    s->n_generated += x->n_generated;
    if (x->peak_device_bytes > s->peak_device_bytes) s->peak_device_bytes = x->peak_device_bytes;
    t->audio_seconds += r->audio_seconds;
    t->n_files++;
}

static cJSON *timings_json(const voxtral_timings *x) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "audio", x->audio_ms);
    cJSON_AddNumberToObject(o, "mel", x->mel_ms);
    cJSON_AddNumberToObject(o, "audio_encoder", x->audio_encoder_ms);
    cJSON_AddNumberToObject(o, "token_embedding", x->token_embedding_ms);
    cJSON_AddNumberToObject(o, "text_decoder_prefill", x->prefill_ms);
    cJSON_AddNumberToObject(o, "text_decoder_decode", x->decode_ms);
    cJSON_AddNumberToObject(o, "total", x->total_ms);
    return o;
}

/* A token's text as a JSON string (invalid UTF-8 pieces are kept as bytes by cJSON; tokens can
 * be partial characters, so this is the raw piece). */
static cJSON *piece_json(const voxtral_context *ctx, int32_t id) {
    size_t len = 0;
    const char *p = voxtral_token_text(ctx, id, &len);
    char *s = malloc(len + 1);
    if (!s) return cJSON_CreateNull();
    if (p) memcpy(s, p, len);
    s[p ? len : 0] = 0;
    cJSON *j = cJSON_CreateString(s);
    free(s);
    return j;
}

void vox_write_json_result(FILE *out, const voxtral_context *ctx, const char *file,
                           const voxtral_result *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddStringToObject(o, "text", r->text);
    cJSON *ids = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; i < r->n_ids; i++) cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->ids[i]));
    if (r->language) cJSON_AddStringToObject(o, "language", r->language);
    else cJSON_AddNullToObject(o, "language");
    cJSON_AddNumberToObject(o, "audio_seconds", r->audio_seconds);
    cJSON_AddItemToObject(o, "latency_ms", timings_json(&r->timings));
    if (r->tokens) {
        cJSON *lp = cJSON_AddArrayToObject(o, "logprobs");
        for (size_t i = 0; i < r->n_ids; i++) {
            const voxtral_token *t = &r->tokens[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "id", t->id);
            cJSON_AddItemToObject(e, "token", piece_json(ctx, t->id));
            cJSON_AddNumberToObject(e, "logprob", t->logprob);
            cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (int k = 0; k < t->n_top; k++) {
                cJSON *a = cJSON_CreateObject();
                cJSON_AddNumberToObject(a, "id", t->top_ids[k]);
                cJSON_AddItemToObject(a, "token", piece_json(ctx, t->top_ids[k]));
                cJSON_AddNumberToObject(a, "logprob", t->top_logprobs[k]);
                cJSON_AddItemToArray(top, a);
            }
            cJSON_AddItemToArray(lp, e);
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    if (s) fprintf(out, "%s\n", s);
    free(s);
    cJSON_Delete(o);
}

void vox_write_latency_table(FILE *out, const vox_run_totals *t, const char *device) {
    const voxtral_timings *s = &t->sum;
    int decoded = s->n_generated - t->n_files; /* the first token of each file comes from prefill */
    if (decoded < 0) decoded = 0;
    double tok_s = s->total_ms > 0 ? s->n_generated / (s->total_ms / 1e3) : 0;
    double rtfx = s->total_ms > 0 ? t->audio_seconds / (s->total_ms / 1e3) : 0;
    fprintf(out, "Run latency (ms):\n");
    fprintf(out, "  %-22s %10.2f\n", "load", t->load_ms);
    fprintf(out, "  %-22s %10.2f\n", "audio", s->audio_ms);
    fprintf(out, "  %-22s %10.2f\n", "mel", s->mel_ms);
    fprintf(out, "  %-22s %10.2f\n", "audio_encoder", s->audio_encoder_ms);
    fprintf(out, "  %-22s %10.2f\n", "token_embedding", s->token_embedding_ms);
    fprintf(out, "  %-22s %10.2f   (%d prompt tokens)\n", "text_decoder prefill", s->prefill_ms,
            s->n_prompt_tokens);
    fprintf(out, "  %-22s %10.2f   (%d tokens, %.3f ms/token)\n", "text_decoder decode",
            s->decode_ms, decoded, decoded ? s->decode_ms / decoded : 0.0);
    fprintf(out, "  %-22s %10.2f   (%d files, %.2f s of audio)\n", "total", s->total_ms,
            t->n_files, t->audio_seconds);
    fprintf(out, "  %-22s %10.2f\n", "tokens/s", tok_s);
    fprintf(out, "  %-22s %10.2f   (RTFx: seconds of audio per second)\n", "real-time factor", rtfx);
    fprintf(out, "  %-22s %10.1f MiB on %s\n", "peak device memory",
            s->peak_device_bytes / (1024.0 * 1024.0), device);
}

int vox_write_latency_json(const char *path, const vox_run_totals *t, const char *device) {
    const voxtral_timings *s = &t->sum;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", device);
    cJSON_AddNumberToObject(o, "files", t->n_files);
    cJSON_AddNumberToObject(o, "failed", t->n_failed);
    cJSON_AddNumberToObject(o, "audio_seconds", t->audio_seconds);
    cJSON_AddNumberToObject(o, "load_ms", t->load_ms);
    cJSON *ms = timings_json(s);
    cJSON_AddItemToObject(o, "latency_ms", ms);
    cJSON_AddNumberToObject(o, "prompt_tokens", s->n_prompt_tokens);
    cJSON_AddNumberToObject(o, "generated_tokens", s->n_generated);
    int decoded = s->n_generated - t->n_files;
    cJSON_AddNumberToObject(o, "decode_ms_per_token", decoded > 0 ? s->decode_ms / decoded : 0);
    cJSON_AddNumberToObject(o, "tokens_per_second", s->total_ms > 0 ? s->n_generated / (s->total_ms / 1e3) : 0);
    cJSON_AddNumberToObject(o, "rtfx", s->total_ms > 0 ? t->audio_seconds / (s->total_ms / 1e3) : 0);
    cJSON_AddNumberToObject(o, "peak_device_bytes", (double)s->peak_device_bytes);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text) return -1;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (f) {
        rc = fprintf(f, "%s\n", text) < 0 ? -1 : 0;
        if (fclose(f) != 0) rc = -1;
        if (rc == 0) rc = rename(tmp, path);
        if (rc != 0) remove(tmp);
    }
    free(text);
    return rc;
}
