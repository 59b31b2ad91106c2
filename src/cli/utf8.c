#include "cli/utf8.h"

#include <stdlib.h>
#include <string.h>

size_t vox_utf8_unit(const unsigned char *s, size_t n, int *valid) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
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
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    for (size_t k = 1; k <= need; k++)
        if (k >= n || s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xBF)) return k;
    *valid = 1;
    return need + 1;
}

char *vox_utf8_repair_dup(const char *s, size_t n) {
    char *out = malloc(3 * n + 1), *o = out;
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int valid;
        size_t u = vox_utf8_unit(p + i, n - i, &valid);
        valid = valid && p[i] != 0; /* the result is a C string: a NUL byte would end it */
        memcpy(o, valid ? s + i : VOX_UTF8_REPLACEMENT, valid ? u : 3);
        o += valid ? u : 3;
        i += u;
    }
    *o = 0;
    return out;
}
