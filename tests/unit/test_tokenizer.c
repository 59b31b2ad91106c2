/* The tekken tokenizer on small tekken.json files written here, with hand-derived expectations
 * (each checked once against tiktoken), a naive copy of tiktoken's merge loop for random pieces,
 * and the malformed files of tests/fixtures/bad_tekken. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tokenizer/tekken.h"
#include "common/utf8.h"

/* The pre-tokenizer of the released tekken.json. */
static const char *const TEKKEN_PATTERN =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/* One piece a line: BPE sees whole lines. */
static const char *const LINE_PATTERN = "[^\\n]+|\\n";

#define NS 10 /* special ids in the test files */

static char tmp_dir[256];
static int file_counter;

/* ---- writing tekken.json ----------------------------------------------------------------- */

static void put_json_string(FILE *f, const char *s, size_t len) {
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void put_base64(FILE *f, const unsigned char *p, size_t len) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    fputc('"', f);
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < len ? p[i + 2] : 0);
        fputc(abc[v >> 18], f);
        fputc(abc[(v >> 12) & 63], f);
        fputc(i + 1 < len ? abc[(v >> 6) & 63] : '=', f);
        fputc(i + 2 < len ? abc[v & 63] : '=', f);
    }
    fputc('"', f);
}

typedef struct {
    const char *pattern;          /* default: TEKKEN_PATTERN */
    const char *const *extra;     /* tokens after the 256 bytes, by rank; NULL-terminated */
    int n_unused;                 /* how many of the last extra tokens lie past the used ones */
    const char *const *special;   /* listed special tokens, NULL-terminated */
    int no_special_list;          /* leave special_tokens out */
    int num_special;              /* default NS */
    const char *version;          /* default "v11" */
} tekken_spec;

/* Writes a tekken.json under tmp_dir; returns its path (static storage, one per call). */
static const char *write_tekken(const tekken_spec *s) {
    static char paths[64][300];
    char *path = paths[file_counter % 64];
    snprintf(path, 300, "%s/tekken_%d.json", tmp_dir, file_counter++);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    int n_extra = 0;
    while (s->extra && s->extra[n_extra]) n_extra++;
    int ns = s->num_special ? s->num_special : NS;
    const char *pattern = s->pattern ? s->pattern : TEKKEN_PATTERN;
    fprintf(f, "{\"config\": {\"pattern\": ");
    put_json_string(f, pattern, strlen(pattern));
    fprintf(f,
            ", \"num_vocab_tokens\": %d, \"default_vocab_size\": %d, "
            "\"default_num_special_tokens\": %d, \"version\": \"%s\"},\n\"vocab\": [",
            256 + n_extra, ns + 256 + n_extra - s->n_unused, ns, s->version ? s->version : "v11");
    for (int r = 0; r < 256 + n_extra; r++) {
        unsigned char b = (unsigned char)r;
        const unsigned char *p = r < 256 ? &b : (const unsigned char *)s->extra[r - 256];
        size_t len = r < 256 ? 1 : strlen(s->extra[r - 256]);
        fprintf(f, "%s\n{\"rank\": %d, \"token_bytes\": ", r ? "," : "", r);
        put_base64(f, p, len);
        fprintf(f, ", \"token_str\": null}");
    }
    fprintf(f, "]");
    if (!s->no_special_list) {
        fprintf(f, ",\n\"special_tokens\": [");
        for (int i = 0; s->special && s->special[i]; i++) {
            fprintf(f, "%s{\"rank\": %d, \"token_str\": ", i ? ", " : "", i);
            put_json_string(f, s->special[i], strlen(s->special[i]));
            fprintf(f, ", \"is_control\": true}");
        }
        fprintf(f, "]");
    }
    fprintf(f, ",\n\"audio\": {\"sampling_rate\": 16000}}\n");
    fclose(f);
    return path;
}

static vox_tokenizer *load_spec(const tekken_spec *s) {
    const char *path = write_tekken(s);
    vox_tokenizer *tok = NULL;
    vox_error err = {0};
    vox_status st = vox_tokenizer_load(path, &tok, &err);
    CHECK_MSG(st == VOX_OK, "%s", err.msg);
    if (st != VOX_OK) {
        fprintf(stderr, "cannot continue without %s\n", path);
        exit(1);
    }
    return tok;
}

/* ---- checking encodings ------------------------------------------------------------------- */

/* Text token id of byte b. */
#define B(b) (NS + (unsigned char)(b))
/* Text token id of the extra token of rank 256 + i. */
#define X(i) (NS + 256 + (i))

/* Encodes text and compares with want; with roundtrip, also decodes back to text. */
static int encodes_to_(vox_tokenizer *tok, const char *text, size_t len, const int32_t *want,
                       size_t n_want, int roundtrip, const char *file, int line) {
    int32_t *ids = NULL;
    size_t n = 0;
    vox_error err = {0};
    vox_status st = vox_tokenizer_encode(tok, text, len, &ids, &n, &err);
    int ok = st == VOX_OK && n == n_want && (n == 0 || memcmp(ids, want, n * sizeof *ids) == 0);
    if (!ok) {
        fprintf(stderr, "%s:%d: encoding \"%.*s\": status %d (%s), got", file, line, (int)len,
                text, (int)st, err.msg);
        for (size_t i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n_want && i < 40; i++) fprintf(stderr, " %d", (int)want[i]);
        fprintf(stderr, "\n");
    }
    char *back = NULL;
    if (roundtrip && st == VOX_OK && vox_tokenizer_decode(tok, ids, n, &back, &err) == VOX_OK) {
        ok = ok && strlen(back) == len && memcmp(back, text, len) == 0;
        if (strlen(back) != len || memcmp(back, text, len) != 0)
            fprintf(stderr, "%s:%d: \"%.*s\" decodes back to \"%s\"\n", file, line, (int)len, text,
                    back);
    }
    free(back);
    free(ids);
    return ok;
}

#define ENCODES_AS(roundtrip, tok, text, len, ...)                                            \
    do {                                                                                      \
        const int32_t want_[] = {__VA_ARGS__};                                                \
        CHECK(encodes_to_(tok, text, len, want_, sizeof want_ / sizeof want_[0], roundtrip,   \
                          __FILE__, __LINE__));                                               \
    } while (0)
/* The text encodes to the ids and decodes back. */
#define ENCODES_TO(tok, text, ...) ENCODES_AS(1, tok, text, strlen(text), __VA_ARGS__)

static void check_decode(vox_tokenizer *tok, const int32_t *ids, size_t n, const char *want) {
    char *text = NULL;
    vox_error err = {0};
    vox_status st = vox_tokenizer_decode(tok, ids, n, &text, &err);
    CHECK_MSG(st == VOX_OK && strcmp(text, want) == 0, "decoded \"%s\" (%s), want \"%s\"",
              text ? text : "", err.msg, want);
    free(text);
}

/* ---- the tests ---------------------------------------------------------------------------- */

/* Merges by rank, not position or length; the whole piece first; leftmost on ties. */
static void test_merges(void) {
    {
        const char *extra[] = {"ab", "abc", NULL};
        vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = extra});
        ENCODES_TO(tok, "abc", X(1));
        ENCODES_TO(tok, "abcd", X(1), B('d')); /* ab, then ab+c */
        ENCODES_TO(tok, "xab", B('x'), X(0));
        ENCODES_TO(tok, "a", B('a'));
        vox_tokenizer_free(tok);
    }
    {   /* the lowest-rank pair is not the leftmost one */
        const char *extra[] = {"cd", "bc", NULL};
        vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = extra});
        ENCODES_TO(tok, "bcd", B('b'), X(0));
        ENCODES_TO(tok, "bcbc", X(1), X(1));
        vox_tokenizer_free(tok);
    }
    {   /* "abc" ranks before its own parts: rank order is not length order */
        const char *extra[] = {"abc", "bc", "ab", NULL};
        vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = extra});
        ENCODES_TO(tok, "abcd", X(0), B('d')); /* bc first, then a+bc */
        ENCODES_TO(tok, "abab", X(2), X(2));
        vox_tokenizer_free(tok);
    }
    {   /* ties go to the leftmost pair */
        const char *extra[] = {"aa", "aaa", NULL};
        vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = extra});
        ENCODES_TO(tok, "aaaaa", X(0), X(1));
        ENCODES_TO(tok, "aaaa", X(0), X(0));
        vox_tokenizer_free(tok);
    }
    {   /* a piece that is a token is one id even when no merge path leads to it */
        const char *extra[] = {"ab", "xyz", NULL};
        vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = extra});
        ENCODES_TO(tok, "xyz", X(1));
        ENCODES_TO(tok, "xyzx", B('x'), B('y'), B('z'), B('x'));
        vox_tokenizer_free(tok);
    }
}

/* The released pattern splits the text; merges never cross pieces. */
static void test_pretokenizer(void) {
    const char *extra[] = {"o ", "go", " w", "es", " wes", "  ", "    ",
                           "\xe1\xa0\x8e\xe1\xa0\x8e", /* U+180E U+180E */
                           "\xe1\xa0\x8ey",            /* U+180E y */
                           "12", "\n\n", "  \n", NULL};
    vox_tokenizer *tok = load_spec(&(tekken_spec){.extra = extra});
    ENCODES_TO(tok, "go west", X(1), X(4), B('t'));
    ENCODES_TO(tok, "a   b", B('a'), X(5), B(' '), B('b'));
    ENCODES_TO(tok, "12", B('1'), B('2')); /* \p{N} takes one digit at a time */
    ENCODES_TO(tok, "\n\n  x", X(10), B(' '), B(' '), B('x')); /* "\n\n", " ", " x" */
    ENCODES_TO(tok, "a  \n\nb", B('a'), X(5), X(10), B('b'));   /* "  \n" ranks after "\n\n" */
    /* U+180E is not White_Space (tiktoken's \s) although PCRE2's \s matches it: the pieces are
     * "x", U+180E U+180E, "y" (with PCRE2's \s they would be "x", U+180E, U+180E "y"). */
    ENCODES_TO(tok, "x\xe1\xa0\x8e\xe1\xa0\x8ey", B('x'), X(7), B('y'));
    /* special tokens are text like any other */
    ENCODES_TO(tok, "<s>", B('<'), B('s'), B('>'));
    CHECK(encodes_to_(tok, "", 0, NULL, 0, 1, __FILE__, __LINE__));
    /* 100000 spaces are one piece: "  " merges 50000 times, then "    " 25000 times */
    size_t n = 100000;
    char *spaces = malloc(n + 1);
    memset(spaces, ' ', n);
    spaces[n] = 0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    vox_error err = {0};
    CHECK(vox_tokenizer_encode(tok, spaces, n, &ids, &n_ids, &err) == VOX_OK);
    CHECK(n_ids == n / 4);
    int all = 1;
    for (size_t i = 0; i < n_ids; i++) all &= ids[i] == X(6);
    CHECK(all);
    free(ids);
    free(spaces);
    /* a long mixed text round-trips */
    const char *unit = "Ünïcödé 日本語 the 42 cats, \t\r\n  naïve\xcc\x81 🎉🎉 ";
    size_t ul = strlen(unit), reps = 2000;
    char *text = malloc(ul * reps + 1);
    for (size_t i = 0; i < reps; i++) memcpy(text + i * ul, unit, ul);
    text[ul * reps] = 0;
    char *back = NULL;
    CHECK(vox_tokenizer_encode(tok, text, ul * reps, &ids, &n_ids, &err) == VOX_OK);
    CHECK(vox_tokenizer_decode(tok, ids, n_ids, &back, &err) == VOX_OK);
    CHECK(back && strcmp(back, text) == 0);
    free(back);
    free(ids);
    free(text);
    vox_tokenizer_free(tok);
}

/* A pattern that matches the empty string: Rust's find_iter moves one character on after an
 * empty match and skips an empty match right after a match; text no match covers is dropped. */
static void test_empty_matches(void) {
    const char *extra[] = {"xx", NULL};
    vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = "x*", .extra = extra});
    ENCODES_AS(0, tok, "axxb", 4, X(0));
    ENCODES_AS(0, tok, "xx\xc3\xa9xx", 6, X(0), X(0)); /* the search steps over é's 2 bytes */
    vox_tokenizer_free(tok);
}

/* Entries past default_vocab_size are never produced nor decoded. */
static void test_truncation(void) {
    const char *extra[] = {"ab", "abc", "abcd", NULL};
    vox_tokenizer *tok =
        load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = extra, .n_unused = 2});
    CHECK(vox_tokenizer_vocab_size(tok) == NS + 257);
    CHECK(vox_tokenizer_num_special(tok) == NS);
    ENCODES_TO(tok, "abc", X(0), B('c'));
    ENCODES_TO(tok, "abcd", X(0), B('c'), B('d'));
    int32_t beyond[] = {X(1)};
    char *text = NULL;
    vox_error err = {0};
    CHECK(vox_tokenizer_decode(tok, beyond, 1, &text, &err) == VOX_ERR_INVALID_ARG);
    CHECK(text == NULL && strstr(err.msg, "outside the vocabulary") != NULL);
    int32_t negative[] = {B('a'), -1};
    CHECK(vox_tokenizer_decode(tok, negative, 2, &text, &err) == VOX_ERR_INVALID_ARG);
    CHECK(vox_tokenizer_piece(tok, X(1), NULL) == NULL);
    CHECK(vox_tokenizer_piece(tok, -1, NULL) == NULL);
    size_t len = 0;
    const char *p = vox_tokenizer_piece(tok, X(0), &len);
    CHECK(p && len == 2 && memcmp(p, "ab", 2) == 0 && p[2] == 0);
    p = vox_tokenizer_piece(tok, B(0), &len);
    CHECK(p && len == 1 && p[0] == 0);
    vox_tokenizer_free(tok);
}

/* Special ids: lookup by name, fillers, skipped by decode; the deprecated list of old files. */
static void test_special(void) {
    const char *special[] = {"<unk>", "<s>", "</s>", "[INST]", "[AUDIO]", NULL};
    const char *extra[] = {"ab", NULL};
    vox_tokenizer *tok = load_spec(&(tekken_spec){.extra = extra, .special = special});
    CHECK(vox_tokenizer_special_id(tok, "<s>") == 1);
    CHECK(vox_tokenizer_special_id(tok, "[AUDIO]") == 4);
    CHECK(vox_tokenizer_special_id(tok, "<SPECIAL_5>") == 5);
    CHECK(vox_tokenizer_special_id(tok, "<SPECIAL_9>") == 9);
    CHECK(vox_tokenizer_special_id(tok, "<SPECIAL_10>") == -1);
    CHECK(vox_tokenizer_special_id(tok, "[TRANSCRIBE]") == -1);
    CHECK(vox_tokenizer_special_id(tok, "") == -1);
    size_t len = 0;
    const char *p = vox_tokenizer_piece(tok, 4, &len);
    CHECK(p && len == 7 && strcmp(p, "[AUDIO]") == 0);
    p = vox_tokenizer_piece(tok, 7, &len);
    CHECK(p && strcmp(p, "<SPECIAL_7>") == 0 && len == 11);
    int32_t ids[] = {1, B('h'), 4, B('i'), 2};
    check_decode(tok, ids, 5, "hi");
    check_decode(tok, ids, 0, "");
    vox_tokenizer_free(tok);

    /* files up to v7 may leave special_tokens out and get mistral-common's deprecated list */
    tok = load_spec(&(tekken_spec){.extra = extra, .no_special_list = 1, .num_special = 100,
                                    .version = "v3"});
    CHECK(vox_tokenizer_special_id(tok, "<unk>") == 0);
    CHECK(vox_tokenizer_special_id(tok, "</s>") == 2);
    CHECK(vox_tokenizer_special_id(tok, "[INST]") == 3);
    CHECK(vox_tokenizer_special_id(tok, "[TOOL_CONTENT]") == 19);
    CHECK(vox_tokenizer_special_id(tok, "<SPECIAL_20>") == 20);
    CHECK(vox_tokenizer_vocab_size(tok) == 100 + 257);
    vox_tokenizer_free(tok);
}

/* Decoding bytes that are not UTF-8: one U+FFFD per maximal subpart, as Python does (each
 * expectation is bytes.decode("utf-8", "replace")). */
static void test_decode_invalid_utf8(void) {
    vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN});
#define FFFD "\xef\xbf\xbd"
    static const struct {
        const char *bytes, *want;
    } cases[] = {
        {"\xff", FFFD},
        {"\xe2\x82", FFFD},
        {"\xe2\x82" "a", FFFD "a"},
        {"\xf0\x9f\x98", FFFD},
        {"\xed\xa0\x80", FFFD FFFD FFFD},           /* a surrogate */
        {"\xc0\xaf", FFFD FFFD},                    /* overlong */
        {"\xe0\x80\xaf", FFFD FFFD FFFD},           /* overlong */
        {"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD},  /* above U+10FFFF */
        {"\x80\x80", FFFD FFFD},
        {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},   /* valid */
        {"a\xf1\x80\x80\xe1\x80\xc2" "b", "a" FFFD FFFD FFFD "b"},
        {"\xe0\xa0", FFFD},
        {"\xf5\x80", FFFD FFFD},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int32_t ids[8];
        size_t n = strlen(cases[c].bytes);
        for (size_t i = 0; i < n; i++) ids[i] = B(cases[c].bytes[i]);
        check_decode(tok, ids, n, cases[c].want);
    }
    /* a character split over two tokens, with a special id between, comes out whole */
    int32_t split[] = {B(0xc3), 1, B(0xa9)};
    check_decode(tok, split, 3, "\xc3\xa9");
#undef FFFD
    /* encoding refuses text that is not UTF-8 */
    int32_t dummy, *ids = &dummy;
    size_t n = 99;
    vox_error err = {0};
    CHECK(vox_tokenizer_encode(tok, "ab\xff", 3, &ids, &n, &err) == VOX_ERR_INVALID_ARG);
    CHECK(ids == NULL && n == 0 && strstr(err.msg, "UTF-8") && strstr(err.msg, "byte 2"));
    CHECK(vox_tokenizer_encode(tok, "\xed\xa0\x80", 3, &ids, &n, &err) == VOX_ERR_INVALID_ARG);
    CHECK(vox_tokenizer_encode(tok, "\xe2\x82", 2, &ids, &n, &err) == VOX_ERR_INVALID_ARG);
    /* the length is explicit: a NUL inside the text is text */
    ENCODES_AS(0, tok, "a\0b", 3, B('a'), B(0), B('b'));
    vox_tokenizer_free(tok);
}

/* The heap-based merge against a direct transcription of tiktoken's _byte_pair_merge (scan for
 * the lowest rank, leftmost on ties, merge, repeat) on random vocabularies and pieces. */
static int naive_rank(const char *const *tokens, int n, const char *p, size_t len) {
    if (len == 1) return (unsigned char)p[0];
    for (int i = 0; i < n; i++)
        if (strlen(tokens[i]) == len && memcmp(tokens[i], p, len) == 0) return 256 + i;
    return -1;
}

static size_t naive_encode(const char *const *tokens, int n, const char *p, size_t len,
                           int32_t *out) {
    int whole = naive_rank(tokens, n, p, len);
    if (whole >= 0) {
        out[0] = NS + whole;
        return 1;
    }
    size_t start[64], parts = len; /* part i spans start[i] .. start[i + 1] */
    for (size_t i = 0; i <= len; i++) start[i] = i;
    for (;;) {
        int best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < parts; i++) {
            int r = naive_rank(tokens, n, p + start[i], start[i + 2] - start[i]);
            if (r >= 0 && (best < 0 || r < best)) {
                best = r;
                at = i;
            }
        }
        if (best < 0) break;
        memmove(start + at + 1, start + at + 2, (parts - at - 1) * sizeof start[0]);
        parts--;
    }
    for (size_t i = 0; i < parts; i++)
        out[i] = NS + naive_rank(tokens, n, p + start[i], start[i + 1] - start[i]);
    return parts;
}

static void test_random_merges(void) {
    uint64_t seed = 12345;
#define RAND() ((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 33)
    int mismatches = 0;
    for (int v = 0; v < 6; v++) {
        char store[48][8];
        const char *tokens[49];
        int n = 0;
        while (n < 48) { /* distinct strings of 2..6 letters over "abc" */
            size_t len = 2 + RAND() % 5;
            for (size_t i = 0; i < len; i++) store[n][i] = (char)('a' + RAND() % 3);
            store[n][len] = 0;
            int dup = 0;
            for (int j = 0; j < n; j++) dup |= strcmp(store[j], store[n]) == 0;
            if (!dup) {
                tokens[n] = store[n];
                n++;
            }
        }
        tokens[n] = NULL;
        vox_tokenizer *tok = load_spec(&(tekken_spec){.pattern = LINE_PATTERN, .extra = tokens});
        for (int t = 0; t < 500; t++) {
            char text[41];
            size_t len = 1 + RAND() % 40;
            for (size_t i = 0; i < len; i++) text[i] = (char)('a' + RAND() % 3);
            int32_t want[64];
            size_t n_want = naive_encode(tokens, n, text, len, want);
            if (!encodes_to_(tok, text, len, want, n_want, 1, __FILE__, __LINE__)) mismatches++;
        }
        vox_tokenizer_free(tok);
    }
    CHECK(mismatches == 0);
#undef RAND
}

/* Every malformed file fails with a message that names it and the problem. */
static void test_bad_files(void) {
    static const struct {
        const char *file, *problem;
        vox_status code;
    } cases[] = {
        {"not_json.json", "not valid JSON", VOX_ERR_FORMAT},
        {"top_not_object.json", "not a JSON object", VOX_ERR_FORMAT},
        {"missing_config.json", "config is missing", VOX_ERR_FORMAT},
        {"missing_vocab.json", "vocab is missing", VOX_ERR_FORMAT},
        {"vocab_not_list.json", "vocab is not a list", VOX_ERR_FORMAT},
        {"missing_pattern.json", "config.pattern is missing", VOX_ERR_FORMAT},
        {"vocab_size_not_int.json", "default_vocab_size is not an integer", VOX_ERR_FORMAT},
        {"vocab_size_fraction.json", "default_vocab_size is not an integer", VOX_ERR_FORMAT},
        {"bad_version.json", "config.version", VOX_ERR_FORMAT},
        {"rank_not_position.json", "vocab[200].rank is 201, expected 200", VOX_ERR_FORMAT},
        {"rank_missing.json", "vocab[257].rank is missing", VOX_ERR_FORMAT},
        {"vocab_entry_not_object.json", "vocab[3] is not an object", VOX_ERR_FORMAT},
        {"token_str_missing.json", "vocab[10].token_str is missing", VOX_ERR_FORMAT},
        {"unexpected_key.json", "unexpected key \"score\"", VOX_ERR_FORMAT},
        {"first_256_not_bytes.json", "vocab[65] must be the single byte 0x41", VOX_ERR_FORMAT},
        {"first_256_multibyte.json", "vocab[97] must be the single byte 0x61", VOX_ERR_FORMAT},
        {"duplicate_token.json", "vocab[257] has the same token bytes as vocab[256]",
         VOX_ERR_FORMAT},
        {"bad_base64.json", "vocab[256].token_bytes is not valid base64", VOX_ERR_FORMAT},
        {"base64_bad_length.json", "vocab[256].token_bytes is not valid base64", VOX_ERR_FORMAT},
        {"vocab_size_too_small.json", "fewer than the 256 single bytes", VOX_ERR_FORMAT},
        {"vocab_too_short.json", "but vocab has 258", VOX_ERR_FORMAT},
        {"special_rank_mismatch.json", "special_tokens[1].rank is 2, expected 1", VOX_ERR_FORMAT},
        {"special_duplicate.json", "are both \"<s>\"", VOX_ERR_FORMAT},
        {"special_too_many.json", "3 special tokens are listed", VOX_ERR_FORMAT},
        {"special_filler_clash.json", "are both \"<SPECIAL_3>\"", VOX_ERR_FORMAT},
        {"special_not_list.json", "special_tokens is not a list", VOX_ERR_FORMAT},
        {"special_missing_v11.json", "special_tokens is missing", VOX_ERR_FORMAT},
        {"special_is_control_not_bool.json", "is_control is not a boolean", VOX_ERR_FORMAT},
        {"bad_pattern.json", "config.pattern does not compile", VOX_ERR_FORMAT},
        {"does_not_exist.json", "cannot open", VOX_ERR_IO},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[512];
        snprintf(path, sizeof path, "%s/bad_tekken/%s", VOX_FIXTURES, cases[c].file);
        static char sentinel;
        vox_tokenizer *tok = (vox_tokenizer *)&sentinel; /* load must reset it */
        vox_error err = {0};
        vox_status st = vox_tokenizer_load(path, &tok, &err);
        CHECK_MSG(st == cases[c].code && tok == NULL, "%s: status %d, want %d", cases[c].file,
                  (int)st, (int)cases[c].code);
        CHECK_MSG(strstr(err.msg, path) != NULL, "%s: message \"%s\" lacks the path",
                  cases[c].file, err.msg);
        CHECK_MSG(strstr(err.msg, cases[c].problem) != NULL, "%s: message \"%s\" lacks \"%s\"",
                  cases[c].file, err.msg, cases[c].problem);
        if (st == VOX_OK) vox_tokenizer_free(tok);
    }
}

/* The UTF-8 helpers directly: validation agrees with the repair (valid text comes out as is). */
static void test_utf8_helpers(void) {
    const uint8_t ok[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf";
    size_t n = sizeof ok - 1;
    CHECK(vox_utf8_check(ok, n) == n);
    uint8_t out[3 * sizeof ok];
    CHECK(vox_utf8_repair(ok, n, out) == n && memcmp(out, ok, n) == 0);
    CHECK(vox_utf8_repair((const uint8_t *)"a\0b", 3, out) == 5 && memcmp(out, "a\xef\xbf\xbd" "b", 5) == 0);
    CHECK(vox_utf8_check((const uint8_t *)"ab\xc3", 3) == 2);
    CHECK(vox_utf8_check((const uint8_t *)"\xf4\x90\x80\x80", 4) == 0);
    CHECK(vox_utf8_seq_len((const uint8_t *)"\xe2\x82\xac", 3) == 3);
    CHECK(vox_utf8_seq_len((const uint8_t *)"\xe2\x82", 2) == 0);
}

static void remove_tmp_dir(void) {
    for (int i = 0; i < file_counter; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/tekken_%d.json", tmp_dir, i);
        remove(path);
    }
    rmdir(tmp_dir);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/vox_test_tokenizer_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror(tmp_dir);
        return 1;
    }
    test_merges();
    test_pretokenizer();
    test_empty_matches();
    test_truncation();
    test_special();
    test_decode_invalid_utf8();
    test_random_merges();
    test_bad_files();
    test_utf8_helpers();
    remove_tmp_dir();
    return test_finish("test_tokenizer");
}
