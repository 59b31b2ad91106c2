#include "cli/inputs.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int append(vox_inputs *in, const char *s, size_t len) {
    if ((in->n & (in->n + 1)) == 0) { /* capacity is the next power of two minus one */
        char **p = realloc(in->paths, (2 * in->n + 1) * sizeof *p);
        if (!p) return 0;
        in->paths = p;
    }
    char *copy = malloc(len + 1);
    if (!copy) return 0;
    memcpy(copy, s, len);
    copy[len] = 0;
    in->paths[in->n++] = copy;
    return 1;
}

vox_status vox_inputs_read(vox_inputs *in, FILE *f, const char *name, vox_error *err) {
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t len;
    errno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        line_no++;
        /* a UTF-8 byte order mark (lists saved by Windows editors) is not part of the first path */
        if (line_no == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
            memmove(line, line + 3, (size_t)len - 2);
            len -= 3;
        }
        if (len > 0 && line[len - 1] == '\n') len--;
        if (len > 0 && line[len - 1] == '\r') len--;
        if (len == 0) continue;
        if (memchr(line, 0, (size_t)len)) {
            free(line);
            return vox_fail(err, VOX_ERR_FORMAT, "%s: line %zu holds a NUL byte: not a list of "
                            "paths", name, line_no);
        }
        if (!append(in, line, (size_t)len)) {
            free(line);
            return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", name);
        }
    }
    free(line);
    if (ferror(f)) return vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", name, strerror(errno));
    return VOX_OK;
}

/* Standard input can be read once: as the audio of one input "-", or as the list. */
static vox_status check_stdin_uses(vox_inputs *in, bool list_from_stdin, vox_error *err) {
    size_t dashes = 0;
    for (size_t i = 0; i < in->n; i++) dashes += strcmp(in->paths[i], VOX_STDIN_INPUT) == 0;
    const char *clash = dashes > 1 ? "the input '-' (audio on standard input) is given more than "
                                     "once; a file named '-' is './-'"
                        : dashes && list_from_stdin
                            ? "--files-from - and the input '-' both read standard input; a "
                              "file named '-' is './-'"
                            : NULL;
    if (!clash) return VOX_OK;
    vox_inputs_free(in);
    return vox_fail(err, VOX_ERR_INVALID_ARG, "%s", clash);
}

vox_status vox_inputs_build(const char *const *files, size_t n, const char *list_path,
                            vox_inputs *out, vox_error *err) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++)
        if (!append(out, files[i], strlen(files[i]))) {
            vox_inputs_free(out);
            return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        }
    if (!list_path) return check_stdin_uses(out, false, err);
    int from_stdin = strcmp(list_path, "-") == 0;
    FILE *f = from_stdin ? stdin : fopen(list_path, "r");
    if (!f) {
        vox_inputs_free(out);
        return vox_fail(err, VOX_ERR_IO, "--files-from %s: cannot open: %s", list_path,
                        strerror(errno));
    }
    char name[64 + PATH_MAX];
    snprintf(name, sizeof name, "--files-from %s", from_stdin ? "(standard input)" : list_path);
    vox_status st = vox_inputs_read(out, f, name, err);
    if (!from_stdin) fclose(f);
    if (st) vox_inputs_free(out);
    return st ? st : check_stdin_uses(out, from_stdin, err);
}

void vox_inputs_free(vox_inputs *in) {
    for (size_t i = 0; i < in->n; i++) free(in->paths[i]);
    free(in->paths);
    memset(in, 0, sizeof *in);
}

size_t vox_shard_paths(char **paths, size_t count, int k, int n) {
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (i % (size_t)n == (size_t)k) paths[kept++] = paths[i];
        else free(paths[i]);
    }
    return kept;
}

void vox_inputs_shard(vox_inputs *in, int k, int n) { in->n = vox_shard_paths(in->paths, in->n, k, n); }
