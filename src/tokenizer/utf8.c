/* UTF-8 validation and U+FFFD repair (see utf8.h). */
#include "tokenizer/utf8.h"

#include <string.h>

/* The byte range allowed right after lead byte c (Unicode table 3-7), and how many continuation
 * bytes follow in all; 0 for a byte that cannot start a multi-byte sequence. */
static int lead_info(uint8_t c, uint8_t *lo, uint8_t *hi) {
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) return 1;
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
    if (c >= 0xE0 && c <= 0xEF) return 2;
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
    if (c >= 0xF0 && c <= 0xF4) return 3;
    return 0;
}

/* The length of the longest prefix of s[0..n) that is a well-formed sequence or the start of one
 * (at least 1), and whether that prefix is complete. */
static size_t maximal_subpart(const uint8_t *s, size_t n, int *complete) {
    *complete = 0;
    if (s[0] < 0x80) {
        *complete = 1;
        return 1;
    }
    uint8_t lo, hi;
    int need = lead_info(s[0], &lo, &hi);
    if (need == 0) return 1;
    size_t i = 1;
    if (i >= n || s[i] < lo || s[i] > hi) return 1;
    for (i = 2; i <= (size_t)need; i++)
        if (i >= n || s[i] < 0x80 || s[i] > 0xBF) return i;
    *complete = 1;
    return (size_t)need + 1;
}

size_t vox_tok_utf8_seq_len(const uint8_t *s, size_t n) {
    if (n == 0) return 0;
    int complete;
    size_t len = maximal_subpart(s, n, &complete);
    return complete ? len : 0;
}

size_t vox_tok_utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = vox_tok_utf8_seq_len(s + i, n - i);
        if (len == 0) return i;
        i += len;
    }
    return n;
}

size_t vox_tok_utf8_repair(const uint8_t *s, size_t n, uint8_t *dst) {
    size_t i = 0, o = 0;
    while (i < n) {
        int complete;
        size_t len = maximal_subpart(s + i, n - i, &complete);
        if (complete && s[i] != 0) {
            memcpy(dst + o, s + i, len);
            o += len;
        } else {
            dst[o++] = 0xEF;
            dst[o++] = 0xBF;
            dst[o++] = 0xBD;
        }
        i += len;
    }
    return o;
}
