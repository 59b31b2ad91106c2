/* Fuzzes --files-from lists (src/cli/inputs.c). The input is the list file; two FILE arguments
 * come before it. The result is compared with the rule inputs.h states, implemented here
 * independently: a UTF-8 byte order mark at the start dropped, lines split at LF, one CR before
 * the LF (or the end) dropped, empty lines skipped, nothing else changed; a line that holds a NUL byte makes the list an error naming the
 * list and the line (and keeps nothing); without one, two or more lines "-" (audio on standard
 * input, which can be read once) make it a usage error that keeps nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inputs.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file("list.txt", data, size);
    static const char *const files[] = {"first.wav", "dir/second.flac"};
    vox_inputs in;
    vox_error err = {0};
    vox_status s = vox_inputs_build(files, 2, path, &in, &err);

    /* the rule: walk the lines */
    size_t expect_n = 2, line = 0, nul_line = 0, dashes = 0;
    size_t pos = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    int has_nul = 0;
    while (pos < size) {
        line++;
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t end = nl ? (size_t)(nl - data) : size, len = end - pos;
        if (len > 0 && data[pos + len - 1] == '\r') len--;
        if (len > 0) {
            if (!has_nul && memchr(data + pos, 0, len)) has_nul = 1, nul_line = line;
            dashes += len == 1 && data[pos] == '-';
            if (!has_nul && s == VOX_OK) {
                FUZZ_CHECK(expect_n < in.n, "line at byte %zu is missing", pos);
                FUZZ_CHECK(strlen(in.paths[expect_n]) == len &&
                               memcmp(in.paths[expect_n], data + pos, len) == 0,
                           "path %zu differs from its line", expect_n);
            }
            expect_n++;
        }
        pos = end + 1;
    }
    if (has_nul) {
        FUZZ_CHECK(s == VOX_ERR_FORMAT && in.n == 0 && in.paths == NULL,
                   "a list with a NUL byte was read");
        char where[64];
        snprintf(where, sizeof where, "line %zu ", nul_line);
        FUZZ_CHECK(strstr(err.msg, path) && strstr(err.msg, where) && strstr(err.msg, "NUL"),
                   "message: %s (the NUL byte is on line %zu)", err.msg, nul_line);
        return 0;
    }
    if (dashes > 1) {
        FUZZ_CHECK(s == VOX_ERR_INVALID_ARG && in.n == 0 && in.paths == NULL &&
                       strstr(err.msg, "'-' (audio on standard input) is given more than once"),
                   "%zu lines '-' (standard input): status %d, %s", dashes, (int)s, err.msg);
        return 0;
    }
    FUZZ_CHECK(s == VOX_OK, "a list without NUL bytes was refused: %s", err.msg);
    FUZZ_CHECK(in.n == expect_n, "%zu paths, the rule gives %zu", in.n, expect_n);
    FUZZ_CHECK(strcmp(in.paths[0], files[0]) == 0 && strcmp(in.paths[1], files[1]) == 0,
               "the FILE arguments are not first");
    vox_inputs_free(&in);
    return 0;
}
