/* Helpers of the fuzz harnesses (see fuzz.h). */
#define _XOPEN_SOURCE 700
#include "fuzz.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    fprintf(stderr, "%s:%d: check failed: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

static char g_dir[512];

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(void) {
    if (g_dir[0]) nftw(g_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_temp_dir(void) {
    if (g_dir[0]) return g_dir;
    const char *fixed = getenv("VOX_FUZZ_TMP");
    if (fixed && *fixed) {
        snprintf(g_dir, sizeof g_dir, "%s", fixed);
        mkdir(g_dir, 0700);
        return g_dir;
    }
    const char *tmp = getenv("TMPDIR");
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmp && *tmp ? tmp : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/vox-fuzz-XXXXXX", base);
    if (!mkdtemp(g_dir)) {
        perror(g_dir);
        abort();
    }
    atexit(remove_dir);
    return g_dir;
}

const char *fuzz_write_file(const char *name, const void *data, size_t size) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", fuzz_temp_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

size_t fuzz_utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC0 && c < 0xE0) {
            len = 2, cp = c & 0x1F;
        } else if (c >= 0xE0 && c < 0xF0) {
            len = 3, cp = c & 0x0F;
        } else if (c >= 0xF0 && c < 0xF8) {
            len = 4, cp = c & 0x07;
        } else {
            return i;
        }
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += len;
    }
    return n;
}

uint8_t fuzz_u8(fuzz_reader *r) {
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

uint32_t fuzz_u32(fuzz_reader *r) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | fuzz_u8(r);
    return v;
}

char *fuzz_piece(fuzz_reader *r, uint8_t sep, size_t *len) {
    const uint8_t *end = r->n ? memchr(r->p, sep, r->n) : NULL;
    size_t k = end ? (size_t)(end - r->p) : r->n;
    char *s = malloc(k + 1);
    if (!s) abort();
    if (k) memcpy(s, r->p, k);
    s[k] = 0;
    r->p += k + (end != NULL);
    r->n -= k + (end != NULL);
    if (len) *len = k;
    return s;
}
