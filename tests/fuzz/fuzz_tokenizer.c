/* Fuzzes encoding and decoding (src/tokenizer/) with the fixture tokenizer
 * (tests/fixtures/tiny/tekken.json: the real tekken pattern, 256 bytes and merges).
 * - The input as text: valid UTF-8 encodes to text ids whose pieces, joined, are the input byte
 *   for byte (the pattern covers every character: nothing may be dropped or reordered), and
 *   decodes back to it (a NUL byte as U+FFFD: the text is a C string); anything else is refused
 *   as not UTF-8.
 * - The input as ids (16 bits each, some outside the vocabulary): decoding either refuses an id
 *   outside the vocabulary or gives valid UTF-8, equal to the joined text pieces when those are
 *   valid UTF-8 themselves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tokenizer/tekken.h"

static vox_tokenizer *g_tok;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    vox_error err = {0};
    if (vox_tokenizer_load(VOX_FIXTURES "/tiny/tekken.json", &g_tok, &err) != VOX_OK) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        exit(1);
    }
    return 0;
}

/* s[0..n) with each NUL byte as U+FFFD (EF BF BD), NUL-terminated: what decode gives for valid
 * UTF-8 */
static char *nul_as_replacement(const uint8_t *s, size_t n) {
    char *out = malloc(3 * n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (s[i]) *o++ = (char)s[i];
        else memcpy(o, "\xEF\xBF\xBD", 3), o += 3;
    }
    *o = 0;
    return out;
}

static void check_text(const uint8_t *data, size_t size) {
    int32_t n_special = vox_tokenizer_num_special(g_tok), vocab = vox_tokenizer_vocab_size(g_tok);
    int32_t *ids = NULL;
    size_t n = 0;
    vox_error err = {0};
    vox_status s = vox_tokenizer_encode(g_tok, (const char *)data, size, &ids, &n, &err);
    if (fuzz_utf8_check(data, size) != size) {
        FUZZ_CHECK(s == VOX_ERR_INVALID_ARG && ids == NULL, "invalid UTF-8 was encoded");
        FUZZ_CHECK(strstr(err.msg, "UTF-8") != NULL, "message: %s", err.msg);
        return;
    }
    FUZZ_CHECK(s == VOX_OK, "encode: %s", err.msg);
    FUZZ_CHECK((n == 0) == (size == 0), "%zu bytes gave %zu ids", size, n);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(ids[i] >= n_special && ids[i] < vocab, "encode gave id %d", ids[i]);
        size_t len = 0;
        const char *p = vox_tokenizer_piece(g_tok, ids[i], &len);
        FUZZ_CHECK(len > 0 && len <= size - o && memcmp(p, data + o, len) == 0,
                   "the piece of token %zu (id %d) is not the text at byte %zu", i, ids[i], o);
        o += len;
    }
    FUZZ_CHECK(o == size, "the pieces hold %zu of %zu bytes", o, size);

    char *text = NULL;
    s = vox_tokenizer_decode(g_tok, ids, n, &text, &err);
    FUZZ_CHECK(s == VOX_OK, "decode of encoded ids: %s", err.msg);
    char *want = nul_as_replacement(data, size); /* decode's text is a C string */
    FUZZ_CHECK(strcmp(text, want) == 0, "decode(encode(text)) is not the text");
    free(want);
    free(text);
    free(ids);
}

static void check_ids(const uint8_t *data, size_t size) {
    int32_t n_special = vox_tokenizer_num_special(g_tok), vocab = vox_tokenizer_vocab_size(g_tok);
    size_t n = size / 2;
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t raw_len = 0, outside = 0;
    for (size_t i = 0; i < n; i++) {
        /* mostly ids of the vocabulary, a few just outside it on either side */
        ids[i] = (int32_t)((data[2 * i] << 8 | data[2 * i + 1]) % (vocab + 8)) - 4;
        size_t len = 0;
        if (ids[i] < 0 || ids[i] >= vocab) outside++;
        else if (ids[i] >= n_special && vox_tokenizer_piece(g_tok, ids[i], &len)) raw_len += len;
    }
    char *text = NULL;
    vox_error err = {0};
    vox_status s = vox_tokenizer_decode(g_tok, ids, n, &text, &err);
    if (outside) {
        FUZZ_CHECK(s == VOX_ERR_INVALID_ARG && text == NULL, "an id outside was decoded");
        free(ids);
        return;
    }
    FUZZ_CHECK(s == VOX_OK, "decode: %s", err.msg);
    size_t len = strlen(text);
    FUZZ_CHECK(fuzz_utf8_check((const uint8_t *)text, len) == len, "decode gave invalid UTF-8");

    uint8_t *raw = malloc(raw_len + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < n_special) continue;
        size_t plen = 0;
        const char *p = vox_tokenizer_piece(g_tok, ids[i], &plen);
        memcpy(raw + o, p, plen);
        o += plen;
    }
    if (fuzz_utf8_check(raw, o) == o) {
        char *want = nul_as_replacement(raw, o);
        FUZZ_CHECK(strcmp(text, want) == 0, "decode changed valid UTF-8");
        free(want);
    } else {
        FUZZ_CHECK(strstr(text, "\xEF\xBF\xBD") != NULL || len < o,
                   "invalid bytes were decoded without U+FFFD");
    }
    free(raw);
    free(text);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_text(data, size);
    check_ids(data, size);
    return 0;
}
