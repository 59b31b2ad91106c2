/* main() of a harness built without libFuzzer: runs every file named on the command line (a
 * directory: each file in it, in name order) through LLVMFuzzerTestOneInput once. ctest uses it
 * to replay the seed corpus and the regressions in the normal build, sanitizers or not. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 0;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *p = realloc(buf, cap *= 2);
            if (!p) free(buf);
            buf = p;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return 0;
    }
    /* a copy of exactly n bytes, so that AddressSanitizer sees any read past the input */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) abort();
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    size_t runs = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            failed = 1;
            continue;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (!run_file(argv[i])) failed = 1;
            else runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        char **names = NULL;
        size_t n = 0;
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char **p = realloc(names, (n + 1) * sizeof *names);
            if (!p) abort();
            names = p;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            if (!(names[n] = malloc(len))) abort();
            snprintf(names[n++], len, "%s/%s", argv[i], e->d_name);
        }
        if (d) closedir(d);
        qsort(names, n, sizeof *names, by_name);
        for (size_t k = 0; k < n; k++) {
            if (!run_file(names[k])) failed = 1;
            else runs++;
            free(names[k]);
        }
        free(names);
    }
    fprintf(stderr, "%s: %zu inputs replayed%s\n", argv[0], runs,
            failed ? ", some could not be read" : "");
    return failed;
}
