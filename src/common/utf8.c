/* UTF-8 validation and U+FFFD repair (see utf8.h). */
#include "common/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t vox_utf8_unit(const uint8_t *s, size_t n, int *valid) {
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    *valid = 0;
    if (c < 0x80) {
        *valid = 1;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) need = 2;
    else if (c >= 0xF0 && c <= 0xF4) need = 3;
    else return 1;
    /* the second byte's narrower ranges (table 3-7): no overlongs, surrogates or > U+10FFFF */
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    for (size_t k = 1; k <= need; k++)
        if (k >= n || s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xBF)) return k;
    *valid = 1;
    return need + 1;
}

size_t vox_utf8_seq_len(const uint8_t *s, size_t n) {
    if (n == 0) return 0;
    int valid;
    size_t len = vox_utf8_unit(s, n, &valid);
    return valid ? len : 0;
}

size_t vox_utf8_check(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int valid;
        size_t len = vox_utf8_unit(s + i, n - i, &valid);
        if (!valid) return i;
        i += len;
    }
    return n;
}

size_t vox_utf8_repair(const uint8_t *s, size_t n, uint8_t *dst) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int valid;
        size_t len = vox_utf8_unit(s + i, n - i, &valid);
        valid = valid && s[i] != 0;
        memcpy(dst + o, valid ? (const char *)s + i : VOX_UTF8_REPLACEMENT, valid ? len : 3);
        o += valid ? len : 3;
        i += len;
    }
    return o;
}

char *vox_utf8_repair_dup(const char *s, size_t n) {
    char *out = malloc(3 * n + 1);
    if (!out) return NULL;
    out[vox_utf8_repair((const uint8_t *)s, n, (uint8_t *)out)] = 0;
    return out;
}
