/* A minimal test harness shared by the C tests: CHECK-style assertions that count and report
 * failures with file:line, and a closing line in the form ctest and CI read.
 * A test exits 0 when all checks pass, 1 when any failed, 77 when it skipped (with a reason). */
#ifndef VOX_TEST_HARNESS_H
#define VOX_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int vox_test_checks, vox_test_failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        vox_test_checks++;                                                                   \
        if (!(cond)) {                                                                       \
            vox_test_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);         \
        }                                                                                    \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                 \
    do {                                                                                     \
        vox_test_checks++;                                                                   \
        if (!(cond)) {                                                                       \
            vox_test_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);         \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

/* |a - b| <= atol + rtol * |b|, with b the reference. */
#define CHECK_CLOSE(a, b, atol, rtol)                                                        \
    do {                                                                                     \
        double va_ = (a), vb_ = (b);                                                         \
        vox_test_checks++;                                                                   \
        if (!(fabs(va_ - vb_) <= (atol) + (rtol) * fabs(vb_))) {                             \
            vox_test_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK_CLOSE failed: %s = %.9g, %s = %.9g\n", __FILE__,   \
                    __LINE__, #a, va_, #b, vb_);                                             \
        }                                                                                    \
    } while (0)

#define TEST_SKIP(...)                                                                       \
    do {                                                                                     \
        printf("SKIPPED: ");                                                                 \
        printf(__VA_ARGS__);                                                                 \
        printf("\n");                                                                        \
        exit(77);                                                                            \
    } while (0)

/* The whole file, NUL-terminated (malloc'ed), or NULL when it cannot be read. */
static inline char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? (char *)malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    if (s && len) *len = (size_t)n;
    fclose(f);
    return s;
}

static inline int test_finish(const char *name) {
    printf("%s: %d checks, %d failed\n", name, vox_test_checks, vox_test_failures);
    return vox_test_failures ? 1 : 0;
}

#endif
