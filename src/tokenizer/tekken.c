/* The tekken tokenizer: loading and validating tekken.json, encoding, decoding.
 *
 * tekken.json (mistral-common's Tekkenizer is the reference):
 *   config          {pattern, num_vocab_tokens, default_vocab_size, default_num_special_tokens,
 *                    version}
 *   vocab           [{rank, token_bytes (base64), token_str}], rank = position; the first 256
 *                    entries are the single bytes 0..255 in order
 *   special_tokens  [{rank, token_str, is_control}], rank = position (optional up to version v7)
 *   audio, image    read by other modules
 * Ids 0..num_special-1 are special tokens (the listed ones, then "<SPECIAL_i>" fillers); text
 * token id = num_special + rank, for the first default_vocab_size - num_special vocab entries.
 *
 * Encoding splits the text with the file's pattern, iterating matches as tiktoken does (through
 * Rust's regex find_iter semantics), then runs byte-level BPE inside each match (bpe.c). */
#include "tokenizer/tekken.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "common/read_all.h"
#include "common/text.h"
#include "common/utf8.h"
#include "tokenizer/bpe.h"

struct vox_tokenizer {
    vox_tok_vocab vocab;   /* the used text tokens, by rank */
    int32_t num_special;
    char *special_bytes;   /* special token strings, each NUL-terminated */
    uint32_t *special_off; /* special token i starts at special_bytes + special_off[i] */
    pcre2_code *re;        /* the pre-tokenizer, JIT-compiled when the build supports it */
};

/* Special tokens of files without a special_tokens list (allowed up to version v7), as
 * mistral-common's Tekkenizer.DEPRECATED_SPECIAL_TOKENS. */
static const char *const deprecated_special[] = {
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]"};
#define N_DEPRECATED_SPECIAL ((int)(sizeof deprecated_special / sizeof deprecated_special[0]))

/* ---- reading the file ------------------------------------------------------------------------ */

/* Base64 (RFC 4648, standard alphabet, padded). None of our dependencies (cJSON, PCRE2) has a
 * decoder and OpenSSL or GLib would be a new dependency for these few lines. */
static int base64_digit(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Returns the decoded length, or -1 when s is not valid base64. dst must hold 3 * (len / 4)
 * bytes. */
static long base64_decode(const char *s, size_t len, uint8_t *dst) {
    if (len % 4) return -1;
    long o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int pad = 0;
        if (i + 4 == len) pad = (s[i + 3] == '=') + (s[i + 3] == '=' && s[i + 2] == '=');
        uint32_t acc = 0;
        for (int k = 0; k < 4; k++) {
            int d = k < 4 - pad ? base64_digit((unsigned char)s[i + k]) : 0;
            if (d < 0) return -1;
            acc = acc << 6 | (uint32_t)d;
        }
        dst[o++] = (uint8_t)(acc >> 16);
        if (pad < 2) dst[o++] = (uint8_t)(acc >> 8);
        if (pad < 1) dst[o++] = (uint8_t)acc;
    }
    return o;
}

/* ---- typed access to the JSON ---------------------------------------------------------------- */

static vox_status get_int(const char *path, const cJSON *obj, const char *where, const char *key,
                          int64_t lo, int64_t hi, int64_t *out, vox_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) return vox_fail(err, VOX_ERR_FORMAT, "%s: %s%s is missing", path, where, key);
    double d = it->valuedouble;
    if (!cJSON_IsNumber(it) || !isfinite(d) || d != floor(d))
        return vox_fail(err, VOX_ERR_FORMAT, "%s: %s%s is not an integer", path, where, key);
    if (d < (double)lo || d > (double)hi)
        return vox_fail(err, VOX_ERR_FORMAT, "%s: %s%s = %.0f is outside %lld..%lld", path, where,
                        key, d, (long long)lo, (long long)hi);
    *out = (int64_t)d;
    return VOX_OK;
}

static vox_status get_string(const char *path, const cJSON *obj, const char *where,
                             const char *key, const char **out, vox_error *err) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it) return vox_fail(err, VOX_ERR_FORMAT, "%s: %s%s is missing", path, where, key);
    if (!cJSON_IsString(it) || !it->valuestring)
        return vox_fail(err, VOX_ERR_FORMAT, "%s: %s%s is not a string", path, where, key);
    *out = it->valuestring;
    return VOX_OK;
}

/* ---- the pre-tokenizer pattern --------------------------------------------------------------- */

/* White_Space, the meaning of \s in Rust's regex crate (and so in tiktoken). PCRE2's \s with
 * PCRE2_UCP also matches U+180E, which Unicode 6.3 moved out of White_Space, so \s and \S are
 * spelled out. */
#define WHITE_SPACE_ITEMS                                                                      \
    "\\x09-\\x0D\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"    \
    "\\x{205F}\\x{3000}"

/* Copies pattern with \s and \S replaced by explicit White_Space classes. \S inside a character
 * class cannot be spelled out (PCRE2 has no class subtraction) and stays as PCRE2's \S. */
static char *translate_pattern(const char *p) {
    size_t n = strlen(p), cap = n * (sizeof WHITE_SPACE_ITEMS + 3) + 1, o = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    int in_class = 0, literal = 0; /* inside [...], inside \Q...\E */
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (literal) {
            if (c == '\\' && p[i + 1] == 'E') literal = 0;
        } else if (c == '\\' && i + 1 < n) {
            char e = p[i + 1];
            if (e == 's' || (e == 'S' && !in_class)) {
                const char *open = in_class ? "" : e == 's' ? "[" : "[^";
                const char *close = in_class ? "" : "]";
                o += (size_t)sprintf(out + o, "%s%s%s", open, WHITE_SPACE_ITEMS, close);
                i++;
                continue;
            }
            if (e == 'Q') literal = 1;
            out[o++] = c;
            c = e;
            i++;
        } else if (!in_class && c == '[') {
            in_class = 1;
            out[o++] = c;
            if (p[i + 1] == '^') out[o++] = p[++i];
            if (p[i + 1] == ']') out[o++] = p[++i]; /* a leading ] is literal */
            continue;
        } else if (in_class && c == '[' && p[i + 1] == ':') {
            const char *end = strstr(p + i + 2, ":]");
            if (end) {
                size_t len = (size_t)(end + 2 - (p + i));
                memcpy(out + o, p + i, len);
                o += len;
                i += len - 1;
                continue;
            }
        } else if (in_class && c == ']') {
            in_class = 0;
        }
        out[o++] = c;
    }
    out[o] = 0;
    return out;
}

static vox_status compile_pattern(const char *path, const char *pattern, pcre2_code **out,
                                  vox_error *err) {
    /* An empty pattern matches only empty pieces: every byte of every text would be dropped
     * (a language hint would vanish without a word). Not a tokenizer. */
    if (!*pattern) return vox_fail(err, VOX_ERR_FORMAT, "%s: config.pattern is empty", path);
    char *translated = translate_pattern(pattern);
    if (!translated) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)translated, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    free(translated);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return vox_fail(err, VOX_ERR_FORMAT, "%s: config.pattern does not compile: %s", path,
                        (const char *)msg);
    }
    /* Without JIT support (or memory for it) pcre2_match falls back to the interpreter. */
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    *out = re;
    return VOX_OK;
}

/* ---- loading --------------------------------------------------------------------------------- */

static vox_status load_vocab(const char *path, const cJSON *vocab, int32_t n_used,
                             vox_tok_vocab *v, vox_error *err) {
    vox_status st = vox_tok_vocab_init(v, n_used);
    if (st != VOX_OK) return vox_fail(err, st, "%s: out of memory for the vocabulary", path);
    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    int32_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (i == n_used) break; /* entries past the used ones are ignored, as the reference does */
        char where[48];
        snprintf(where, sizeof where, "vocab[%d].", (int)i);
        if (!cJSON_IsObject(e)) {
            st = vox_fail(err, VOX_ERR_FORMAT, "%s: vocab[%d] is not an object", path, (int)i);
            break;
        }
        int64_t rank = 0;
        const char *b64 = NULL;
        if ((st = get_int(path, e, where, "rank", 0, INT32_MAX, &rank, err)) != VOX_OK) break;
        if (rank != i) {
            st = vox_fail(err, VOX_ERR_FORMAT, "%s: vocab[%d].rank is %lld, expected %d", path,
                          (int)i, (long long)rank, (int)i);
            break;
        }
        if ((st = get_string(path, e, where, "token_bytes", &b64, err)) != VOX_OK) break;
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "token_str");
        if (!ts || !(cJSON_IsString(ts) || cJSON_IsNull(ts))) {
            st = vox_fail(err, VOX_ERR_FORMAT, "%s: vocab[%d].token_str is %s", path, (int)i,
                          ts ? "neither a string nor null" : "missing");
            break;
        }
        for (const cJSON *k = e->child; k; k = k->next) {
            if (strcmp(k->string, "rank") && strcmp(k->string, "token_bytes") &&
                strcmp(k->string, "token_str")) {
                st = vox_fail(err, VOX_ERR_FORMAT, "%s: vocab[%d] has an unexpected key \"%s\"",
                              path, (int)i, k->string);
                break;
            }
        }
        if (st != VOX_OK) break;
        size_t b64_len = strlen(b64);
        if (b64_len > buf_cap) {
            free(buf);
            buf_cap = 2 * b64_len;
            if (!(buf = malloc(buf_cap))) {
                st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
        }
        long len = base64_decode(b64, b64_len, buf);
        if (len < 0) {
            st = vox_fail(err, VOX_ERR_FORMAT, "%s: vocab[%d].token_bytes is not valid base64",
                          path, (int)i);
            break;
        }
        if (i < 256 && (len != 1 || buf[0] != i)) {
            st = vox_fail(err, VOX_ERR_FORMAT,
                          "%s: vocab[%d] must be the single byte 0x%02x (the first 256 entries "
                          "are the bytes in order)",
                          path, (int)i, (unsigned)i);
            break;
        }
        int32_t dup;
        st = vox_tok_vocab_add(v, buf, (size_t)len, &dup);
        if (st == VOX_ERR_FORMAT) {
            vox_fail(err, st, "%s: vocab[%d] has the same token bytes as vocab[%d]", path, (int)i,
                     (int)dup);
            break;
        }
        if (st != VOX_OK) {
            vox_fail(err, st, "%s: out of memory for the vocabulary", path);
            break;
        }
        i++;
    }
    free(buf);
    if (st == VOX_OK && i < n_used)
        st = vox_fail(err, VOX_ERR_INTERNAL, "%s: vocab ended early", path); /* sizes are checked */
    if (st != VOX_OK) vox_tok_vocab_free(v);
    return st;
}

/* At most this many special ids (default_num_special_tokens): tekken files have 1000. The bound
 * keeps a hostile file from asking for gigabytes of filler names. */
#define MAX_SPECIAL (1 << 16)

typedef struct {
    const char *name;
    int id;
} special_name;

static int cmp_special_name(const void *a, const void *b) {
    const special_name *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Fills tok->special_* with the listed special tokens (or the deprecated list when list is
 * NULL), then "<SPECIAL_i>" fillers up to num_special. */
static vox_status load_special(const char *path, const cJSON *list, vox_tokenizer *tok,
                               vox_error *err) {
    int32_t ns = tok->num_special;
    int n_listed = list ? cJSON_GetArraySize(list) : N_DEPRECATED_SPECIAL;
    if (n_listed > ns)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: %d special tokens are listed but config.default_num_special_tokens "
                        "is %d",
                        path, n_listed, (int)ns);
    const char **names = calloc((size_t)ns + 1, sizeof *names);
    char *fillers = malloc((size_t)ns * 24 + 1);
    special_name *sorted = malloc(((size_t)ns + 1) * sizeof *sorted);
    tok->special_off = malloc(((size_t)ns + 1) * sizeof *tok->special_off);
    vox_status st = VOX_OK;
    if (!names || !fillers || !sorted || !tok->special_off) {
        st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    int i = 0;
    if (list) {
        const cJSON *e;
        cJSON_ArrayForEach(e, list) {
            char where[48];
            snprintf(where, sizeof where, "special_tokens[%d].", i);
            int64_t rank = 0;
            if (!cJSON_IsObject(e)) {
                st = vox_fail(err, VOX_ERR_FORMAT, "%s: special_tokens[%d] is not an object",
                              path, i);
                goto done;
            }
            if ((st = get_int(path, e, where, "rank", 0, INT32_MAX, &rank, err)) != VOX_OK ||
                (st = get_string(path, e, where, "token_str", &names[i], err)) != VOX_OK)
                goto done;
            if (rank != i) {
                st = vox_fail(err, VOX_ERR_FORMAT,
                              "%s: special_tokens[%d].rank is %lld, expected %d", path, i,
                              (long long)rank, i);
                goto done;
            }
            const cJSON *ctl = cJSON_GetObjectItemCaseSensitive(e, "is_control");
            if (ctl && !cJSON_IsBool(ctl)) {
                st = vox_fail(err, VOX_ERR_FORMAT,
                              "%s: special_tokens[%d].is_control is not a boolean", path, i);
                goto done;
            }
            i++;
        }
    } else {
        for (; i < N_DEPRECATED_SPECIAL; i++) names[i] = deprecated_special[i];
    }
    for (size_t o = 0; i < ns; i++) {
        names[i] = fillers + o;
        o += (size_t)sprintf(fillers + o, "<SPECIAL_%d>", i) + 1;
    }
    /* Names must be unique (fillers included): sorted, equal names are neighbours. */
    size_t total = 0;
    for (i = 0; i < ns; i++) {
        sorted[i] = (special_name){names[i], i};
        total += strlen(names[i]) + 1;
    }
    qsort(sorted, (size_t)ns, sizeof *sorted, cmp_special_name);
    for (i = 1; i < ns; i++) {
        if (strcmp(sorted[i - 1].name, sorted[i].name) == 0) {
            st = vox_fail(err, VOX_ERR_FORMAT, "%s: special tokens %d and %d are both \"%s\"",
                          path, sorted[i - 1].id, sorted[i].id, sorted[i].name);
            goto done;
        }
    }
    if (!(tok->special_bytes = malloc(total + 1))) {
        st = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    size_t o = 0;
    for (i = 0; i < ns; i++) {
        tok->special_off[i] = (uint32_t)o;
        size_t len = strlen(names[i]) + 1;
        memcpy(tok->special_bytes + o, names[i], len);
        o += len;
    }
    tok->special_off[ns] = (uint32_t)o;
done:
    free(names);
    free(fillers);
    free(sorted);
    return st;
}

static vox_status load_json(const char *path, const cJSON *root, vox_tokenizer *tok,
                            vox_error *err) {
    if (!cJSON_IsObject(root))
        return vox_fail(err, VOX_ERR_FORMAT, "%s: the top level is not a JSON object", path);
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (!cJSON_IsObject(config))
        return vox_fail(err, VOX_ERR_FORMAT, "%s: config is %s", path,
                        config ? "not an object" : "missing");
    const char *pattern = NULL, *version = NULL;
    int64_t num_vocab_tokens = 0, vocab_size = 0, num_special = 0;
    vox_status st;
    if ((st = get_string(path, config, "config.", "pattern", &pattern, err)) != VOX_OK ||
        (st = get_string(path, config, "config.", "version", &version, err)) != VOX_OK ||
        (st = get_int(path, config, "config.", "num_vocab_tokens", 0, INT32_MAX,
                      &num_vocab_tokens, err)) != VOX_OK ||
        (st = get_int(path, config, "config.", "default_vocab_size", 0, INT32_MAX, &vocab_size,
                      err)) != VOX_OK ||
        (st = get_int(path, config, "config.", "default_num_special_tokens", 0, MAX_SPECIAL,
                      &num_special, err)) != VOX_OK)
        return st;
    /* mistral-common knows v1, v2, v3, v7, v11, v13, ...; accept any "v<number>". */
    char *end = NULL;
    long vnum = version[0] == 'v' && version[1] >= '0' && version[1] <= '9'
                    ? strtol(version + 1, &end, 10)
                    : -1;
    if (vnum < 0 || *end)
        return vox_fail(err, VOX_ERR_FORMAT, "%s: config.version \"%s\" is not a tokenizer version "
                        "(v1, v3, v7, v11, ...)", path, version);

    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(root, "vocab");
    if (!cJSON_IsArray(vocab))
        return vox_fail(err, VOX_ERR_FORMAT, "%s: vocab is %s", path,
                        vocab ? "not a list" : "missing");
    int64_t n_vocab = cJSON_GetArraySize(vocab);
    int64_t n_used = vocab_size - num_special;
    if (n_used < 256)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: config.default_vocab_size (%lld) minus "
                        "config.default_num_special_tokens (%lld) leaves %lld text tokens, fewer "
                        "than the 256 single bytes",
                        path, (long long)vocab_size, (long long)num_special, (long long)n_used);
    if (n_used > n_vocab)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: config.default_vocab_size (%lld) needs %lld vocab entries after "
                        "%lld special tokens but vocab has %lld",
                        path, (long long)vocab_size, (long long)n_used, (long long)num_special,
                        (long long)n_vocab);

    const cJSON *special = cJSON_GetObjectItemCaseSensitive(root, "special_tokens");
    if (cJSON_IsNull(special)) special = NULL;
    if (special && !cJSON_IsArray(special))
        return vox_fail(err, VOX_ERR_FORMAT, "%s: special_tokens is not a list", path);
    if (!special && vnum > 7)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: special_tokens is missing (required from tokenizer version v7 on, "
                        "this file is %s)",
                        path, version);

    tok->num_special = (int32_t)num_special;
    if ((st = load_special(path, special, tok, err)) != VOX_OK) return st;
    if ((st = compile_pattern(path, pattern, &tok->re, err)) != VOX_OK) return st;
    return load_vocab(path, vocab, (int32_t)n_used, &tok->vocab, err);
}

vox_status vox_tokenizer_load(const char *path, vox_tokenizer **out, vox_error *err) {
    if (!path || !out) return vox_fail(err, VOX_ERR_INVALID_ARG, "tokenizer: no path given");
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    vox_status st = vox_read_regular(path, VOX_TEKKEN_MAX_BYTES, &text, &len, err);
    if (st != VOX_OK) return st;
    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &parse_end, 0);
    if (!root) {
        size_t at = parse_end && parse_end >= text ? (size_t)(parse_end - text) : 0;
        free(text);
        return vox_fail(err, VOX_ERR_FORMAT, "%s: not valid JSON (error near byte %zu)", path, at);
    }
    /* Nothing but whitespace may follow the value (cJSON stops at its end). */
    const size_t at = vox_json_space_end(text, len, (size_t)(parse_end - text));
    free(text);
    if (at != len) {
        cJSON_Delete(root);
        return vox_fail(err, VOX_ERR_FORMAT, "%s: not valid JSON (data after the value at byte %zu)",
                        path, at);
    }
    vox_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) {
        cJSON_Delete(root);
        return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    }
    st = load_json(path, root, tok, err);
    cJSON_Delete(root);
    if (st != VOX_OK) {
        vox_tokenizer_free(tok);
        return st;
    }
    *out = tok;
    return VOX_OK;
}

void vox_tokenizer_free(vox_tokenizer *tok) {
    if (!tok) return;
    vox_tok_vocab_free(&tok->vocab);
    free(tok->special_bytes);
    free(tok->special_off);
    pcre2_code_free(tok->re);
    free(tok);
}

/* ---- queries --------------------------------------------------------------------------------- */

int32_t vox_tokenizer_vocab_size(const vox_tokenizer *tok) {
    return tok->num_special + tok->vocab.n;
}

int32_t vox_tokenizer_num_special(const vox_tokenizer *tok) { return tok->num_special; }

int32_t vox_tokenizer_special_id(const vox_tokenizer *tok, const char *name) {
    if (!name) return -1;
    for (int32_t i = 0; i < tok->num_special; i++)
        if (strcmp(tok->special_bytes + tok->special_off[i], name) == 0) return i;
    return -1;
}

const char *vox_tokenizer_piece(const vox_tokenizer *tok, int32_t id, size_t *len) {
    size_t n;
    const char *p;
    if (id < 0 || id >= vox_tokenizer_vocab_size(tok)) return NULL;
    if (id < tok->num_special) {
        p = tok->special_bytes + tok->special_off[id];
        n = tok->special_off[id + 1] - tok->special_off[id] - 1;
    } else {
        p = (const char *)vox_tok_vocab_bytes(&tok->vocab, id - tok->num_special, &n);
    }
    if (len) *len = n;
    return p;
}

/* ---- encoding -------------------------------------------------------------------------------- */

/* One regex search from start: *found is 0 when nothing matches, else *s and *e are the match.
 * Long runs of one character class can exhaust the JIT stack: the interpreter, whose memory is
 * on the heap, then retries. */
static vox_status find_match(const vox_tokenizer *tok, const uint8_t *text, size_t len,
                             size_t start, pcre2_match_data *md, pcre2_match_context *mc,
                             int *found, size_t *s, size_t *e, vox_error *err) {
    int rc = pcre2_match(tok->re, text, len, start, PCRE2_NO_UTF_CHECK, md, mc);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(tok->re, text, len, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, mc);
    *found = 0;
    if (rc == PCRE2_ERROR_NOMATCH) return VOX_OK;
    if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return vox_fail(err, rc == PCRE2_ERROR_NOMEMORY ? VOX_ERR_NOMEM : VOX_ERR_UNSUPPORTED,
                        "tokenizer: the pre-tokenizer pattern failed at byte %zu: %s", start,
                        (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    if (ov[0] > ov[1]) /* only \K inside a lookahead can do this */
        return vox_fail(err, VOX_ERR_UNSUPPORTED,
                        "tokenizer: the pattern gave a match that ends before it starts");
    *found = 1;
    *s = ov[0];
    *e = ov[1];
    return VOX_OK;
}

vox_status vox_tokenizer_encode(const vox_tokenizer *tok, const char *text, size_t len,
                                int32_t **ids, size_t *n_ids, vox_error *err) {
    if (!tok || !ids || !n_ids || (!text && len))
        return vox_fail(err, VOX_ERR_INVALID_ARG, "tokenizer: encode called with a NULL argument");
    *ids = NULL;
    *n_ids = 0;
    const uint8_t *t = (const uint8_t *)text;
    size_t bad = vox_utf8_check(t, len);
    if (bad != len)
        return vox_fail(err, VOX_ERR_INVALID_ARG,
                        "tokenizer: the text is not valid UTF-8 (byte %zu is 0x%02x)", bad, t[bad]);
    if (len > INT32_MAX)
        return vox_fail(err, VOX_ERR_TOO_LONG, "tokenizer: the text is longer than 2 GiB");
    if (len == 0) return VOX_OK;

    vox_status st = VOX_OK;
    vox_tok_ranks out = {0};
    vox_tok_bpe_scratch scratch = {0};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(tok->re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_jit_stack *js = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, NULL);
    if (!md || !mc) {
        st = vox_fail(err, VOX_ERR_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    if (js) pcre2_jit_stack_assign(mc, NULL, js);

    /* Rust's find_iter: after an empty match, search again one character later, and skip an
     * empty match that ends where the previous match ended. Text no match covers is dropped,
     * as tiktoken does (the tekken pattern covers everything). */
    size_t pos = 0, last_end = SIZE_MAX;
    while (pos <= len) {
        size_t s = 0, e = 0;
        int found;
        if ((st = find_match(tok, t, len, pos, md, mc, &found, &s, &e, err)) != VOX_OK) goto done;
        if (!found) break;
        if (s == e) {
            pos = e + (e < len ? vox_utf8_seq_len(t + e, len - e) : 1);
            if (e == last_end) continue;
        } else {
            pos = e;
        }
        last_end = e;
        if (vox_tok_bpe_encode(&tok->vocab, t + s, e - s, &scratch, &out) != VOX_OK) {
            st = vox_fail(err, VOX_ERR_NOMEM, "tokenizer: out of memory");
            goto done;
        }
    }
    for (size_t i = 0; i < out.n; i++) out.v[i] += tok->num_special;
    *ids = out.v;
    *n_ids = out.n;
    out.v = NULL;
done:
    free(out.v);
    vox_tok_bpe_scratch_free(&scratch);
    pcre2_jit_stack_free(js);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    return st;
}

/* ---- decoding -------------------------------------------------------------------------------- */

vox_status vox_tokenizer_decode(const vox_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                char **text, vox_error *err) {
    if (!tok || !text || (!ids && n_ids))
        return vox_fail(err, VOX_ERR_INVALID_ARG, "tokenizer: decode called with a NULL argument");
    *text = NULL;
    int32_t size = vox_tokenizer_vocab_size(tok);
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= size)
            return vox_fail(err, VOX_ERR_INVALID_ARG,
                            "tokenizer: id %d (position %zu) is outside the vocabulary 0..%d",
                            (int)ids[i], i, (int)size - 1);
        if (ids[i] >= tok->num_special) {
            size_t len;
            vox_tok_vocab_bytes(&tok->vocab, ids[i] - tok->num_special, &len);
            total += len;
        }
    }
    uint8_t *raw = malloc(total + 1), *out = malloc(3 * total + 1);
    if (!raw || !out) {
        free(raw);
        free(out);
        return vox_fail(err, VOX_ERR_NOMEM, "tokenizer: out of memory");
    }
    size_t o = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < tok->num_special) continue;
        size_t len;
        const uint8_t *p = vox_tok_vocab_bytes(&tok->vocab, ids[i] - tok->num_special, &len);
        memcpy(raw + o, p, len);
        o += len;
    }
    size_t n = vox_utf8_repair(raw, o, out);
    free(raw);
    out[n] = 0;
    *text = (char *)out;
    return VOX_OK;
}
