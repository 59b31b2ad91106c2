#include "cli/confidence.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* Control tokens ("<s>", "[INST]", "<SPECIAL_12>") are dropped by the decoder; the public API
 * gives their names as their text. A piece of the form <...> or [...] is taken for one; the
 * check against the decoded text below catches the rare text token of that form. */
static int is_control(const char *p, size_t n) {
    if (n < 3 || !((p[0] == '<' && p[n - 1] == '>') || (p[0] == '[' && p[n - 1] == ']'))) return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (p[i] == ' ' || p[i] == p[0] || p[i] == p[n - 1]) return 0;
    return 1;
}

/* Rebuilds the decoded text from the pieces (control tokens dropped, invalid UTF-8 replaced as
 * the decoder does) and records in prob_at[k] the lowest probability of the tokens that made
 * byte k of it. Returns 0 when the result is not `text` (the tokens do not line up). */
static int line_up(const char *text, size_t len, const char *const *pieces, const size_t *lens,
                   const float *prob, size_t n, float *prob_at) {
    size_t raw_n = 0;
    for (size_t i = 0; i < n; i++)
        if (pieces[i] && !is_control(pieces[i], lens[i])) raw_n += lens[i];
    unsigned char *raw = malloc(raw_n ? raw_n : 1);
    float *raw_p = malloc((raw_n ? raw_n : 1) * sizeof *raw_p);
    int ok = raw && raw_p;
    size_t r = 0;
    for (size_t i = 0; ok && i < n; i++) {
        if (!pieces[i] || is_control(pieces[i], lens[i])) continue;
        memcpy(raw + r, pieces[i], lens[i]);
        for (size_t k = 0; k < lens[i]; k++) raw_p[r + k] = prob[i];
        r += lens[i];
    }
    size_t o = 0;
    for (size_t i = 0; ok && i < raw_n && raw[i];) { /* a NUL piece ends the C string */
        int valid;
        size_t u = vox_utf8_unit(raw + i, raw_n - i, &valid);
        float low = 1.0f;
        for (size_t k = 0; k < u; k++) low = fminf(low, raw_p[i + k]);
        const char *bytes = valid ? (const char *)raw + i : VOX_UTF8_REPLACEMENT;
        size_t nb = valid ? u : 3;
        if (o + nb > len || memcmp(text + o, bytes, nb) != 0) ok = 0;
        for (size_t k = 0; ok && k < nb; k++) prob_at[o + k] = low;
        o += nb;
        i += u;
    }
    free(raw);
    free(raw_p);
    return ok && o == len;
}

static char *append(char *o, const char *s, size_t n) {
    memcpy(o, s, n);
    return o + n;
}

char *vox_mark_words(const char *text, const char *const *pieces, const size_t *lens,
                     const float *prob, size_t n, double threshold, vox_mark_style style) {
    const char *open = style == VOX_MARK_COLOUR ? VOX_MARK_COLOUR_OPEN : VOX_MARK_PLAIN_OPEN;
    const char *close = style == VOX_MARK_COLOUR ? VOX_MARK_COLOUR_CLOSE : VOX_MARK_PLAIN_CLOSE;
    size_t len = strlen(text), lo = strlen(open), lc = strlen(close);
    float *prob_at = malloc((len ? len : 1) * sizeof *prob_at);
    /* at most one marker pair per word, and a word takes at least two bytes with its space */
    char *out = malloc(len + (len / 2 + 1) * (lo + lc) + 1);
    if (!prob_at || !out) {
        free(prob_at);
        free(out);
        return NULL;
    }
    if (!line_up(text, len, pieces, lens, prob, n, prob_at)) {
        memcpy(out, text, len + 1);
        free(prob_at);
        return out;
    }
    char *o = out;
    size_t k = 0;
    while (k < len) {
        if (isspace((unsigned char)text[k])) {
            *o++ = text[k++];
            continue;
        }
        size_t end = k;
        float low = 1.0f;
        while (end < len && !isspace((unsigned char)text[end])) low = fminf(low, prob_at[end++]);
        int mark = low < threshold;
        if (mark) o = append(o, open, lo);
        o = append(o, text + k, end - k);
        if (mark) o = append(o, close, lc);
        k = end;
    }
    *o = 0;
    free(prob_at);
    return out;
}

char *vox_mark_result(const voxtral_context *ctx, const voxtral_result *r, double threshold,
                      vox_mark_style style) {
    if (!r->tokens || r->n_ids == 0) return strdup(r->text);
    const char **pieces = malloc(r->n_ids * sizeof *pieces);
    size_t *lens = malloc(r->n_ids * sizeof *lens);
    float *prob = malloc(r->n_ids * sizeof *prob);
    char *out = NULL;
    if (pieces && lens && prob) {
        for (size_t i = 0; i < r->n_ids; i++) {
            lens[i] = 0;
            pieces[i] = voxtral_token_text(ctx, r->ids[i], &lens[i]);
            prob[i] = expf(r->tokens[i].logprob);
        }
        out = vox_mark_words(r->text, pieces, lens, prob, r->n_ids, threshold, style);
    }
    free(pieces);
    free(lens);
    free(prob);
    return out;
}
