/* The json line of a file (output.h lists its fields). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/output.h"
#include "common/utf8.h"
#include "common/text.h"

/* Writes one JSON document as one line. The Unicode line separators U+0085, U+2028 and U+2029
 * may stand raw in a JSON string, but readers of JSON Lines that split on every Unicode line
 * break (Python's str.splitlines) would cut the document there: they are written as \u escapes.
 * The text is valid UTF-8 (utf8.c), so their byte sequences are never parts of other
 * characters. */
static int write_json_line(FILE *out, const char *s) {
    for (const char *p = s; *p; p++) {
        const unsigned char *u = (const unsigned char *)p;
        int n = 0;
        unsigned cp = 0;
        if (u[0] == 0xC2 && u[1] == 0x85)
            n = 2, cp = 0x85;
        else if (u[0] == 0xE2 && u[1] == 0x80 && (u[2] == 0xA8 || u[2] == 0xA9))
            n = 3, cp = 0x2000u + u[2] - 0x80u;
        if (n) {
            if (fprintf(out, "\\u%04x", cp) < 0) return -1;
            p += n - 1;
        } else if (fputc(*p, out) == EOF) {
            return -1;
        }
    }
    return fputc('\n', out) == EOF ? -1 : 0;
}

/* A string member. JSON is UTF-8, and a file name can hold any bytes: each ill-formed sequence
 * becomes U+FFFD. */
static void add_text(cJSON *o, const char *key, const char *s) {
    char *utf8 = vox_utf8_repair_dup(s, strlen(s));
    cJSON_AddItemToObject(o, key, utf8 ? cJSON_CreateString(utf8) : cJSON_CreateNull());
    free(utf8);
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

/* A token's text: pieces can be parts of characters, and JSON must be UTF-8, so "token" holds
 * the piece with its ill-formed bytes as U+FFFD and "bytes" its exact bytes (as OpenAI's
 * logprobs do). */
static void add_piece(cJSON *e, const voxtral_context *ctx, int32_t id) {
    size_t len = 0;
    const char *p = voxtral_token_text(ctx, id, &len);
    if (!p) len = 0;
    char *s = vox_utf8_repair_dup(p ? p : "", len);
    cJSON_AddItemToObject(e, "token", s ? cJSON_CreateString(s) : cJSON_CreateNull());
    free(s);
    cJSON *bytes = cJSON_AddArrayToObject(e, "bytes");
    for (size_t i = 0; i < len; i++)
        cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)p[i]));
}

static void add_ids(cJSON *array, const voxtral_result *r) {
    for (size_t i = 0; i < r->n_ids; i++) cJSON_AddItemToArray(array, cJSON_CreateNumber(r->ids[i]));
}

static void add_logprobs(cJSON *array, const voxtral_context *ctx, const voxtral_result *r) {
    for (size_t i = 0; r->tokens && i < r->n_ids; i++) {
        const voxtral_token *t = &r->tokens[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "id", t->id);
        add_piece(e, ctx, t->id);
        cJSON_AddNumberToObject(e, "logprob", t->logprob);
        cJSON *top = cJSON_AddArrayToObject(e, "top_logprobs");
        for (int k = 0; k < t->n_top; k++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", t->top_ids[k]);
            add_piece(a, ctx, t->top_ids[k]);
            cJSON_AddNumberToObject(a, "logprob", t->top_logprobs[k]);
            cJSON_AddItemToArray(top, a);
        }
        cJSON_AddItemToArray(array, e);
    }
}

static double ms_round(double s) { return round(s * 1000.0) / 1000.0; }

int vox_write_json_transcript(FILE *out, const voxtral_context *ctx, const vox_transcript *t) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return -1;
    add_text(o, "file", t->path);
    add_text(o, "text", t->text);
    cJSON *ids = cJSON_AddArrayToObject(o, "tokens");
    for (size_t i = 0; i < t->n_segs; i++) add_ids(ids, t->segs[i].r);
    if (t->language) add_text(o, "language", t->language);
    else cJSON_AddNullToObject(o, "language");
    cJSON_AddNumberToObject(o, "audio_seconds", t->audio_seconds);
    cJSON_AddItemToObject(o, "latency_ms", timings_json(&t->timings));
    if (t->logprobs) {
        cJSON *lp = cJSON_AddArrayToObject(o, "logprobs");
        for (size_t i = 0; i < t->n_segs; i++) add_logprobs(lp, ctx, t->segs[i].r);
    }
    if (t->segmented) {
        cJSON *segs = cJSON_AddArrayToObject(o, "segments");
        for (size_t i = 0; i < t->n_segs; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "start", ms_round(t->segs[i].start));
            cJSON_AddNumberToObject(e, "end", ms_round(t->segs[i].end));
            char *text = vox_trim_dup(t->segs[i].r->text);
            add_text(e, "text", text ? text : "");
            free(text);
            add_ids(cJSON_AddArrayToObject(e, "tokens"), t->segs[i].r);
            cJSON_AddItemToArray(segs, e);
        }
    }
    cJSON *warnings = cJSON_AddArrayToObject(o, "warnings");
    if (t->warning) cJSON_AddItemToArray(warnings, cJSON_CreateString(t->warning));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int rc = s && write_json_line(out, s) == 0 ? 0 : -1;
    free(s);
    return rc;
}
