/* Fuzzes the txt, json, srt and vtt writers (src/cli/output*.c) with hostile transcripts: file
 * names, texts and token pieces of arbitrary bytes (invalid UTF-8, control characters, "-->",
 * markup, NUL bytes inside pieces), odd times and log-probabilities.
 *
 * Every output must be valid UTF-8 without NUL bytes. json: one line that cJSON parses whole into
 * an object whose strings are valid UTF-8, with one id per token and, per logprobs entry, the
 * exact bytes of the piece. srt and vtt: after the header, nothing but well-formed cues (number,
 * times, one line of text, a blank line; vtt text without < > or a bare &). txt: one line per
 * segment, or the text itself.
 *
 * The token pieces come from the input: the harness links with -Wl,--wrap=voxtral_token_text,
 * so that the writers' calls land in __wrap_voxtral_token_text below (no model is loaded).
 *
 * Input layout (fuzz_reader): a flags byte; the file name, the language and each segment text as
 * NUL-terminated strings; per segment two times, its ids and (with logprobs) their numbers; then
 * the pieces, separated by 0xFF bytes (id k is piece k; ids past the last piece have none). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/output.h"
#include "common/utf8.h"
#include "fuzz.h"

#define MAX_SEGS 6
#define MAX_IDS 12
#define MAX_PIECES 64

static struct {
    char *bytes[MAX_PIECES];
    size_t len[MAX_PIECES];
    int n;
} g_pieces;

const char *__wrap_voxtral_token_text(const voxtral_context *ctx, int32_t id, size_t *len);
const char *__wrap_voxtral_token_text(const voxtral_context *ctx, int32_t id, size_t *len) {
    (void)ctx;
    if (id < 0 || id >= g_pieces.n) return NULL;
    if (len) *len = g_pieces.len[id];
    return g_pieces.bytes[id];
}

static int utf8_ok(const char *s, size_t n) {
    return fuzz_utf8_check((const uint8_t *)s, n) == n;
}

/* The bytes of a "bytes" array. */
static int bytes_equal(const cJSON *array, const char *p, size_t len) {
    if (!cJSON_IsArray(array) || (size_t)cJSON_GetArraySize(array) != len) return 0;
    size_t i = 0;
    for (const cJSON *b = array->child; b; b = b->next, i++)
        if (!cJSON_IsNumber(b) || b->valuedouble != (unsigned char)p[i]) return 0;
    return 1;
}

static void check_json_strings(const cJSON *v) {
    for (; v; v = v->next) {
        if (v->string) FUZZ_CHECK(utf8_ok(v->string, strlen(v->string)), "a key is not UTF-8");
        if (cJSON_IsString(v))
            FUZZ_CHECK(utf8_ok(v->valuestring, strlen(v->valuestring)),
                       "\"%s\" is not UTF-8", v->string ? v->string : "");
        check_json_strings(v->child);
    }
}

static void check_json(const char *out, size_t len, const vox_transcript *t) {
    FUZZ_CHECK(len > 0 && out[len - 1] == '\n' && memchr(out, '\n', len) == out + len - 1,
               "json output is not one line");
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(out, len - 1, &end, 0);
    FUZZ_CHECK(o && cJSON_IsObject(o), "json output does not parse: %s", out);
    FUZZ_CHECK(end == out + len - 1, "json output has bytes after the object");
    check_json_strings(o->child);
    FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "file")) &&
                   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "text")),
               "file or text missing");
    size_t n_ids = 0;
    for (size_t i = 0; i < t->n_segs; i++) n_ids += t->segs[i].r->n_ids;
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(o, "tokens");
    FUZZ_CHECK(cJSON_IsArray(tokens) && (size_t)cJSON_GetArraySize(tokens) == n_ids,
               "tokens: %zu ids expected", n_ids);
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(o, "logprobs");
    FUZZ_CHECK((lp != NULL) == t->logprobs, "logprobs present: %d", lp != NULL);
    const cJSON *e = lp ? lp->child : NULL;
    for (size_t i = 0; lp && i < t->n_segs; i++) {
        const voxtral_result *r = t->segs[i].r;
        for (size_t k = 0; k < r->n_ids; k++, e = e->next) {
            FUZZ_CHECK(e && cJSON_IsObject(e), "logprobs entry missing");
            size_t plen = 0;
            const char *p = __wrap_voxtral_token_text(NULL, r->ids[k], &plen);
            FUZZ_CHECK(bytes_equal(cJSON_GetObjectItemCaseSensitive(e, "bytes"), p, p ? plen : 0),
                       "bytes of id %d differ from its piece", r->ids[k]);
        }
    }
    if (t->segmented) {
        const cJSON *segs = cJSON_GetObjectItemCaseSensitive(o, "segments");
        FUZZ_CHECK(cJSON_IsArray(segs) && (size_t)cJSON_GetArraySize(segs) == t->n_segs,
                   "segments");
    }
    cJSON_Delete(o);
}

/* Skips "HH:MM:SS<sep>mmm" (two or more hour digits); NULL when it is not there. */
static const char *timestamp(const char *p, char sep) {
    size_t h = strspn(p, "0123456789");
    if (h < 2) return NULL;
    p += h;
    static const char shape[] = ":99:99.999";
    for (size_t i = 0; shape[i]; i++, p++) {
        char want = shape[i] == '.' ? sep : shape[i];
        if (want == '9' ? !(*p >= '0' && *p <= '9') : *p != want) return NULL;
    }
    return p;
}

/* srt/vtt cues: [number LF] time --> time LF text LF LF, repeated. */
static void check_cues(const char *p, bool vtt) {
    const char sep = vtt ? '.' : ',';
    for (int cue = 1; *p; cue++) {
        if (!vtt) {
            char num[16];
            int n = snprintf(num, sizeof num, "%d\n", cue);
            FUZZ_CHECK(strncmp(p, num, (size_t)n) == 0, "cue %d: bad number: %.40s", cue, p);
            p += n;
        }
        const char *q = timestamp(p, sep);
        FUZZ_CHECK(q && strncmp(q, " --> ", 5) == 0, "cue %d: bad times: %.40s", cue, p);
        q = timestamp(q + 5, sep);
        FUZZ_CHECK(q && *q == '\n', "cue %d: bad end time: %.40s", cue, p);
        p = q + 1;
        const char *nl = strchr(p, '\n');
        FUZZ_CHECK(nl && nl > p && nl[1] == '\n', "cue %d: text is not one line", cue);
        for (const char *c = p; c < nl; c++) {
            FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f, "cue %d: control byte", cue);
            if (vtt) {
                FUZZ_CHECK(*c != '<' && *c != '>', "cue %d: markup in vtt text", cue);
                FUZZ_CHECK(*c != '&' || strncmp(c, "&amp;", 5) == 0 || strncmp(c, "&lt;", 4) == 0 ||
                               strncmp(c, "&gt;", 4) == 0,
                           "cue %d: a bare & in vtt text", cue);
            }
        }
        FUZZ_CHECK(p[0] != ' ' && nl[-1] != ' ', "cue %d: text is not trimmed", cue);
        p = nl + 2;
    }
}

static void check_txt(const char *p, const vox_transcript *t, bool marked) {
    if (!t->segmented) {
        /* unmarked, the text itself (as UTF-8) and a newline */
        const char *text = t->n_segs ? t->segs[0].r->text : "";
        char *want = vox_utf8_repair_dup(text, strlen(text));
        size_t n = strlen(want);
        FUZZ_CHECK(marked || (strncmp(p, want, n) == 0 && strcmp(p + n, "\n") == 0),
                   "txt is not the text");
        FUZZ_CHECK(strlen(p) > 0 && p[strlen(p) - 1] == '\n', "txt does not end its line");
        free(want);
        return;
    }
    while (*p) {
        FUZZ_CHECK(*p == '[', "txt segment line does not start with a time: %.40s", p);
        const char *q = timestamp(p + 1, '.');
        FUZZ_CHECK(q && strncmp(q, " --> ", 5) == 0, "bad txt times: %.40s", p);
        q = timestamp(q + 5, '.');
        FUZZ_CHECK(q && strncmp(q, "]  ", 3) == 0, "bad txt end time: %.40s", p);
        const char *nl = strchr(q, '\n');
        FUZZ_CHECK(nl && !memchr(q, '\r', (size_t)(nl - q)), "txt segment is not one line");
        p = nl + 1;
    }
}

/* What the writers produced for t in one format. */
static void check_output(const vox_transcript *t, const vox_output_style *s, const char *header) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    FUZZ_CHECK(f != NULL, "open_memstream");
    int rc = vox_write_transcript(f, (const voxtral_context *)&g_pieces, t, s);
    fclose(f);
    FUZZ_CHECK(rc == 0, "the writer failed");
    FUZZ_CHECK(strlen(out) == len, "output holds a NUL byte");
    FUZZ_CHECK(utf8_ok(out, len), "%s output is not UTF-8", vox_cli_format_ext(s->format));
    if (s->format == VOX_OUT_JSON) {
        check_json(out, len, t);
    } else {
        const char *p = out;
        if (s->header) {
            size_t hl = strlen(header);
            FUZZ_CHECK(strncmp(p, "==> ", 4) == 0 && strncmp(p + 4, header, hl) == 0 &&
                           strncmp(p + 4 + hl, " <==\n", 5) == 0,
                       "the header is not the file name: %.60s", p);
            p += 4 + hl + 5;
        }
        if (s->format == VOX_OUT_VTT) {
            FUZZ_CHECK(strncmp(p, "WEBVTT\n\n", 8) == 0, "vtt without its header");
            p += 8;
        }
        if (s->format == VOX_OUT_TXT) check_txt(p, t, s->confidence);
        else check_cues(p, s->format == VOX_OUT_VTT);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_reader r = {data, size};
    uint8_t flags = fuzz_u8(&r);
    vox_transcript t;
    memset(&t, 0, sizeof t);
    t.segmented = flags & 1;
    t.logprobs = flags & 2;
    char *path = fuzz_piece(&r, 0, NULL);
    char *language = fuzz_piece(&r, 0, NULL);
    t.path = path;
    t.language = flags & 4 ? language : NULL;
    t.audio_seconds = fuzz_u32(&r) / 1000.0;
    t.timings.total_ms = flags & 8 ? NAN : fuzz_u32(&r) / 7.0;

    size_t n_segs = t.segmented ? fuzz_u8(&r) % (MAX_SEGS + 1) : 1;
    vox_cli_segment segs[MAX_SEGS];
    voxtral_result results[MAX_SEGS];
    int32_t ids[MAX_SEGS][MAX_IDS];
    voxtral_token tokens[MAX_SEGS][MAX_IDS];
    memset(results, 0, sizeof results);
    memset(tokens, 0, sizeof tokens);
    size_t text_cap = 1;
    for (size_t i = 0; i < n_segs; i++) {
        voxtral_result *res = &results[i];
        res->text = fuzz_piece(&r, 0, NULL);
        text_cap += strlen(res->text) + 1;
        double a = fuzz_u32(&r) / 1000.0, b = fuzz_u32(&r) / 1000.0;
        segs[i].start = a < b ? a : b;
        segs[i].end = a < b ? b : a;
        segs[i].r = res;
        res->n_ids = fuzz_u8(&r) % (MAX_IDS + 1);
        res->ids = ids[i];
        res->tokens = t.logprobs ? tokens[i] : NULL;
        for (size_t k = 0; k < res->n_ids; k++) {
            ids[i][k] = (int32_t)fuzz_u8(&r) - 2; /* a few ids have no piece */
            voxtral_token *tk = &tokens[i][k];
            tk->id = ids[i][k];
            if (!t.logprobs) continue;
            uint8_t lp = fuzz_u8(&r);
            tk->logprob = lp == 255 ? -INFINITY : lp == 254 ? NAN : -(float)lp / 16.0f;
            tk->n_top = fuzz_u8(&r) % 4;
            for (int j = 0; j < tk->n_top; j++) {
                tk->top_ids[j] = (int32_t)fuzz_u8(&r) - 2;
                tk->top_logprobs[j] = -(float)fuzz_u8(&r) / 8.0f;
            }
        }
    }
    t.segs = segs;
    t.n_segs = n_segs;
    /* the whole-file text: the segments' texts joined by spaces, as transcript.c does */
    t.text = malloc(text_cap);
    t.text[0] = 0;
    for (size_t i = 0; i < n_segs; i++) {
        if (i) strcat(t.text, " ");
        strcat(t.text, results[i].text);
    }
    for (g_pieces.n = 0; r.n > 0 && g_pieces.n < MAX_PIECES; g_pieces.n++)
        g_pieces.bytes[g_pieces.n] = fuzz_piece(&r, 0xFF, &g_pieces.len[g_pieces.n]);

    /* the header the writers must show: the file name, as valid UTF-8 */
    char *header = vox_utf8_repair_dup(path, strlen(path));
    static const vox_output_format formats[] = {VOX_OUT_TXT, VOX_OUT_JSON, VOX_OUT_SRT,
                                                VOX_OUT_VTT};
    for (size_t k = 0; k < 4; k++) {
        vox_output_style s = {.format = formats[k],
                              .header = flags & 16 ? path : NULL,
                              .confidence = formats[k] == VOX_OUT_TXT && (flags & 32),
                              .threshold = (flags >> 6) / 3.0,
                              .mark = flags & 128 ? VOX_MARK_COLOUR : VOX_MARK_PLAIN};
        bool subtitles = s.format == VOX_OUT_SRT || s.format == VOX_OUT_VTT;
        if (subtitles && !t.segmented) continue; /* the CLI always segments for subtitles */
        check_output(&t, &s, header);
    }
    free(header);
    for (int i = 0; i < g_pieces.n; i++) free(g_pieces.bytes[i]);
    for (size_t i = 0; i < n_segs; i++) free(results[i].text);
    free(t.text);
    free(path);
    free(language);
    return 0;
}
