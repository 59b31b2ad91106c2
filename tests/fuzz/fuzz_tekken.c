/* Fuzzes tekken.json loading (src/tokenizer/tekken.c): config, vocab (base64 token bytes),
 * special tokens, the pre-tokenizer pattern (translated for PCRE2 and compiled). The input is
 * either refused with a format error that names the file, or gives a tokenizer whose tables hold
 * together (every id has a piece, each special token is found by its name) and that encodes and
 * decodes a sample text: ids inside the vocabulary, decoded text valid UTF-8. With the file's
 * own pattern nothing says the text is covered, so the round trip itself is checked by
 * fuzz_tokenizer on the real pattern. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tokenizer/tekken.h"

static const char k_sample[] = "Hello, World! It's 2025: 3.14 x 10 = 31.4\n\n\t  "
                               "caf\xC3\xA9 na\xC3\xAFve \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E "
                               "\xF0\x9F\x98\x80 <s> [INST] \xE2\x80\xA8 \xC2\xA0" "end  ";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file("tekken.json", data, size);
    vox_tokenizer *tok = NULL;
    vox_error err = {0};
    vox_status s = vox_tokenizer_load(path, &tok, &err);
    if (s != VOX_OK) {
        FUZZ_CHECK(tok == NULL, "a failed load returned a tokenizer");
        FUZZ_CHECK(s == VOX_ERR_FORMAT || s == VOX_ERR_NOMEM, "status %d: %s", (int)s, err.msg);
        FUZZ_CHECK(strstr(err.msg, path) != NULL, "the message does not name the file: %s",
                   err.msg);
        return 0;
    }
    int32_t n_special = vox_tokenizer_num_special(tok), vocab = vox_tokenizer_vocab_size(tok);
    FUZZ_CHECK(n_special >= 0 && vocab - n_special >= 256, "%d ids, %d special", vocab,
               n_special);
    for (int32_t id = 0; id < vocab; id++) {
        size_t len = 0;
        const char *p = vox_tokenizer_piece(tok, id, &len);
        FUZZ_CHECK(p != NULL && p[len] == '\0', "id %d has no piece", id);
        if (id < n_special) {
            if (id < 1024 || id >= n_special - 8) /* the lookup is a linear search */
                FUZZ_CHECK(vox_tokenizer_special_id(tok, p) == id, "special %d is not found by "
                           "its name", id);
        } else if (id - n_special < 256) {
            FUZZ_CHECK(len == 1 && (uint8_t)p[0] == id - n_special, "id %d is not its byte", id);
        }
    }
    FUZZ_CHECK(vox_tokenizer_piece(tok, vocab, NULL) == NULL &&
                   vox_tokenizer_piece(tok, -1, NULL) == NULL,
               "pieces outside the vocabulary");

    int32_t *ids = NULL;
    size_t n = 0;
    s = vox_tokenizer_encode(tok, k_sample, sizeof k_sample - 1, &ids, &n, &err);
    /* a hostile pattern may hit PCRE2's match or heap limit: an error, never a crash */
    FUZZ_CHECK(s == VOX_OK || s == VOX_ERR_UNSUPPORTED || s == VOX_ERR_NOMEM, "encode: %s",
               err.msg);
    size_t total = 0;
    for (size_t i = 0; s == VOX_OK && i < n; i++) {
        FUZZ_CHECK(ids[i] >= n_special && ids[i] < vocab, "encode gave id %d", ids[i]);
        size_t len = 0;
        vox_tokenizer_piece(tok, ids[i], &len);
        total += len;
    }
    /* matches do not overlap, and BPE keeps the bytes of each */
    FUZZ_CHECK(total <= sizeof k_sample - 1, "encoding made %zu bytes of %zu", total,
               sizeof k_sample - 1);
    char *text = NULL;
    if (s == VOX_OK) {
        s = vox_tokenizer_decode(tok, ids, n, &text, &err);
        FUZZ_CHECK(s == VOX_OK, "decode of encoded ids: %s", err.msg);
        size_t len = strlen(text);
        FUZZ_CHECK(fuzz_utf8_check((const uint8_t *)text, len) == len, "decode: not UTF-8");
    }
    free(text);
    free(ids);
    vox_tokenizer_free(tok);
    return 0;
}
