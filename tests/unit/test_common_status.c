/* common/status: messages longer than vox_error's buffer keep their start and their end (the
 * reason after a long path), their middle elided at a UTF-8 character boundary; a message that
 * fits is stored as it is; vox_message_names tells a message that already names a file, elided
 * or not. (Before, a path of ~1000 bytes pushed the reason out of the message, and a file whose
 * message did not seem to name it was named again and again.) */
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* Whether s is well-formed UTF-8 (no sequence cut in two). */
static int utf8_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0) return 0;
        p++;
        for (int i = 0; i < n; i++, p++)
            if ((*p & 0xC0) != 0x80) return 0;
    }
    return 1;
}

/* A path of `len` bytes: "dir/", then `unit` repeated (ASCII or a multi-byte character). */
static char *long_path(size_t len, const char *unit) {
    char *p = malloc(len + 1);
    size_t u = strlen(unit), n = 0;
    memcpy(p, "dir/", 4);
    for (n = 4; n + u <= len; n += u) memcpy(p + n, unit, u);
    p[n] = 0;
    return p;
}

static void test_fits(void) {
    vox_error err = {0};
    CHECK(vox_fail(&err, VOX_ERR_IO, "%s: cannot open: %s", "a.wav", "No such file") == VOX_ERR_IO);
    CHECK(err.code == VOX_ERR_IO && strcmp(err.msg, "a.wav: cannot open: No such file") == 0);
    vox_error_prefix(&err, "batch %d", 3);
    CHECK(strcmp(err.msg, "batch 3: a.wav: cannot open: No such file") == 0);
    /* exactly the buffer's room: stored whole, no elision */
    char *p = long_path(VOX_ERROR_MSG_MAX - 1, "x");
    vox_fail(&err, VOX_ERR_IO, "%s", p);
    CHECK(strcmp(err.msg, p) == 0 && !strstr(err.msg, VOX_ELISION));
    free(p);
}

static void test_elided(void) {
    const char *units[] = {"d", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x8e\xa4"}; /* 1-4 bytes */
    for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
        for (size_t len = 1000; len <= 4000; len += 1500) {
            char *path = long_path(len, units[u]);
            vox_error err = {0};
            vox_fail(&err, VOX_ERR_FORMAT, "%s: cannot open: %s", path, "File name too long");
            size_t n = strlen(err.msg);
            const char *cut = strstr(err.msg, VOX_ELISION);
            CHECK_MSG(n <= VOX_ERROR_MSG_MAX - 1 && n >= VOX_ERROR_MSG_MAX - 7, "unit %zu len %zu: %zu bytes", u, len, n);
            CHECK_MSG(cut && strncmp(err.msg, path, (size_t)(cut - err.msg)) == 0 && cut - err.msg > 200,
                      "unit %zu len %zu: the start of the path", u, len);
            const char *end = ": cannot open: File name too long";
            CHECK_MSG(n > strlen(end) && strcmp(err.msg + n - strlen(end), end) == 0,
                      "unit %zu len %zu: the reason is kept: ...%s", u, len, err.msg + n - 40);
            CHECK_MSG(utf8_ok(err.msg), "unit %zu len %zu: cut inside a character", u, len);
            /* the end before the reason is the end of the path */
            size_t tail = n - strlen(end) - (size_t)(cut + strlen(VOX_ELISION) - err.msg);
            CHECK(strncmp(cut + strlen(VOX_ELISION), path + strlen(path) - tail, tail) == 0);
            /* it names the path; it does not name another one */
            CHECK(vox_message_names(err.msg, path));
            char *other = strdup(path);
            other[5] = 'X' == other[5] ? 'Y' : 'X';
            CHECK(!vox_message_names(err.msg, other));
            free(other);
            /* a prefix over an elided message: still the start, the reason at the end */
            vox_error_prefix(&err, "%s", path);
            n = strlen(err.msg);
            CHECK(strncmp(err.msg, path, 200) == 0 && strcmp(err.msg + n - strlen(end), end) == 0 &&
                  utf8_ok(err.msg));
            free(path);
        }
    }
    CHECK(vox_message_names("a.wav: cannot open", "a.wav"));
    CHECK(!vox_message_names("cannot open", "a.wav"));
    /* an elision marker in a short message is not an elided message */
    CHECK(!vox_message_names("a[...]b: x", "a.wav"));
}

int main(void) {
    test_fits();
    test_elided();
    return test_finish("common_status");
}
