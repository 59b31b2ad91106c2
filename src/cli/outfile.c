#include "cli/outfile.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/inputs.h"
#include "common/file_out.h"

char *vox_output_path(const char *dir, const char *input, const char *ext) {
    if (strcmp(input, VOX_STDIN_INPUT) == 0) input = "stdin";
    size_t len = strlen(input);
    while (len > 1 && input[len - 1] == '/') len--; /* "a/b/" names b */
    const char *base = input;
    for (size_t i = 0; i < len; i++)
        if (input[i] == '/' && i + 1 < len) base = input + i + 1;
    size_t blen = (size_t)(input + len - base);
    for (size_t i = blen; i-- > 1;) /* the last '.', not a leading one (".wav" stays whole) */
        if (base[i] == '.') {
            blen = i;
            break;
        }
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
    const char *sep = dlen && dir[dlen - 1] == '/' ? "" : "/"; /* dir "/" */
    size_t n = dlen + 1 + blen + 1 + strlen(ext) + 1;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%.*s%s%.*s.%s", (int)dlen, dir, sep, (int)blen, base, ext);
    return out;
}

vox_status vox_output_dir_prepare(const char *dir, vox_error *err) {
    char *p = strdup(dir);
    if (!p) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    /* mkdir -p: each prefix ending before a '/', then the whole */
    for (char *c = p + 1;; c++) {
        if (*c != '/' && *c != 0) continue;
        char saved = *c;
        *c = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            vox_status st = vox_fail(err, VOX_ERR_IO, "--output-dir %s: cannot create %s: %s",
                                     dir, p, strerror(errno));
            free(p);
            return st;
        }
        *c = saved;
        if (!saved) break;
    }
    free(p);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return vox_fail(err, VOX_ERR_IO, "--output-dir %s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return vox_fail(err, VOX_ERR_IO, "--output-dir %s: exists and is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return vox_fail(err, VOX_ERR_IO, "--output-dir %s: cannot write there: %s", dir,
                        strerror(errno));
    return vox_dir_probe_writable("--output-dir", dir, dir, err);
}

static char *const *g_sort_paths;

static int by_path(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int c = strcmp(g_sort_paths[i], g_sort_paths[j]);
    return c ? c : (i > j) - (i < j);
}

int vox_find_duplicate(char *const *paths, size_t n, size_t *a, size_t *b) {
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return 0;
    for (size_t i = 0; i < n; i++) idx[i] = i;
    g_sort_paths = paths;
    qsort(idx, n, sizeof *idx, by_path);
    int found = 0;
    for (size_t k = 1; k < n; k++) {
        /* equal paths sit together, in input order: report the pair whose later one comes first */
        if (strcmp(paths[idx[k - 1]], paths[idx[k]]) == 0 && (!found || idx[k] < *b)) {
            found = 1;
            *a = idx[k - 1];
            *b = idx[k];
        }
    }
    free(idx);
    return found;
}

size_t vox_find_overlong_name(char *const *paths, size_t n, size_t *i) {
    for (size_t k = 0; k < n; k++) {
        const char *slash = strrchr(paths[k], '/');
        const size_t len = strlen(slash ? slash + 1 : paths[k]);
        if (len > NAME_MAX) {
            *i = k;
            return len;
        }
    }
    return 0;
}

typedef struct {
    dev_t dev;
    ino_t ino;
    size_t index;
} file_id;

static int by_file_id(const void *a, const void *b) {
    const file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int vox_find_overwritten_input(char *const *outputs, char *const *inputs, size_t n, size_t *o,
                               size_t *i) {
    file_id *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return 0;
    size_t m = 0;
    struct stat sb;
    for (size_t k = 0; k < n; k++)
        if (strcmp(inputs[k], VOX_STDIN_INPUT) != 0 && stat(inputs[k], &sb) == 0)
            ids[m++] = (file_id){sb.st_dev, sb.st_ino, k};
    qsort(ids, m, sizeof *ids, by_file_id);
    int found = 0;
    for (size_t k = 0; k < n && !found; k++) {
        if (stat(outputs[k], &sb) != 0) continue; /* not there yet: no input */
        const file_id key = {sb.st_dev, sb.st_ino, 0};
        size_t lo = 0, hi = m; /* the first entry of that file: index 0 sorts before any */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (by_file_id(&ids[mid], &key) < 0) lo = mid + 1;
            else hi = mid;
        }
        if (lo < m && ids[lo].dev == key.dev && ids[lo].ino == key.ino) {
            found = 1;
            *o = k;
            *i = ids[lo].index;
        }
    }
    free(ids);
    return found;
}

void vox_output_ignore_size_signal(void) { signal(SIGXFSZ, SIG_IGN); }
