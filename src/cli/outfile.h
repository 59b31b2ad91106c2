/* --output-dir: where each input's output goes.
 *
 * DIR/NAME.EXT, NAME being the input's file name without its last extension ("rec/a.b.wav" ->
 * "a.b"), "stdin" for the input "-" (audio on standard input). Two inputs that would write the
 * same file (rec1/talk.wav and rec2/talk.flac) are a usage error found before the model loads:
 * nothing is overwritten silently, and no work is lost. A file of that name from an earlier run is
 * replaced, whole or not at all (common/file_out.h, which writes every output file). */
#ifndef VOX_CLI_OUTFILE_H
#define VOX_CLI_OUTFILE_H

#include <stddef.h>

#include "voxtral/status.h"

/* DIR/NAME.EXT for input (malloc'ed; NULL: out of memory). */
char *vox_output_path(const char *dir, const char *input, const char *ext);

/* Creates dir and its missing parents (mode 0777 less the umask); checks that it is a writable
 * directory. Errors name it. */
vox_status vox_output_dir_prepare(const char *dir, vox_error *err);

/* Finds two of the n paths that are equal: returns 1 and their indices (*a < *b, the first such
 * pair in input order of *b), or 0 when all differ. */
int vox_find_duplicate(char *const *paths, size_t n, size_t *a, size_t *b);

/* Finds a path whose last component (NAME.EXT) is longer than a file name may be (NAME_MAX): an
 * input's own name can fit where its output's does not, when its extension is shorter. Returns
 * that component's length in bytes and the first such path's index *i, or 0 when all fit. */
size_t vox_find_overlong_name(char *const *paths, size_t n, size_t *i);

/* Finds an output path that is an existing input file (the same file, whatever the spelling:
 * device and inode): returns 1 and the first such output's index *o and the input's *i, or 0.
 * outputs and inputs have n entries; inputs that cannot be stat()ed are skipped. */
int vox_find_overwritten_input(char *const *outputs, char *const *inputs, size_t n, size_t *o,
                               size_t *i);

/* A file-size limit (ulimit -f, RLIMIT_FSIZE) ends a process with SIGXFSZ, by default, at the
 * write that passes it: one large output would kill the whole run. With the signal ignored that
 * write fails with EFBIG, like a full disk, and only that file is reported. Called once at
 * start-up. */
void vox_output_ignore_size_signal(void);

#endif
