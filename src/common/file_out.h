/* Writing an output file so that it appears whole or not at all, without ever replacing what is
 * not a plain file: the CLI's outputs (-O), its --latency-json and --dump-tensors files, and an
 * exported model's files all go through here.
 *
 * Where the path names a regular file, or nothing yet, the bytes go to a hidden temporary file in
 * the same directory (.NAME.PID.tmp; a NAME near the 255-byte limit is cut to fit, with a number:
 * .NAMEPREFIX.PID.N.tmp), which is flushed to disk (fsync) and renamed over the path, and the
 * directory is synced: an interrupted or killed run never leaves a partial file, and an old file
 * stays whole until the new one replaces it. Only SIGKILL inside that short write can leave the
 * temporary file.
 *
 * What is not a regular file is written as it is, never replaced:
 *  - a symbolic link: its target is written (replaced through a temporary file beside the target
 *    when the target is a regular file; created through the link when it does not exist yet), and
 *    the link stays;
 *  - a device, a FIFO or a socket (/dev/null, a named pipe): opened and written in place;
 *  - the file this process's standard output or standard error writes to (/dev/stdout,
 *    /dev/stderr, or the very file the shell redirected them to): written through that
 *    descriptor after what the process has written there, never truncated or replaced. */
#ifndef VOX_COMMON_FILE_OUT_H
#define VOX_COMMON_FILE_OUT_H

#include <stddef.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One file being written: open, write as often as needed, then commit or abort. */
typedef struct {
    int fd;       /* -1 when not open */
    char *path;   /* the path given, named in errors */
    char *target; /* the regular file the temporary one is renamed over (a link's target) */
    char *tmp;    /* the temporary file; NULL when the file is written in place */
} vox_file_out;

/* Opens path for writing as above. Errors name path and give the reason. */
vox_status vox_file_out_open(vox_file_out *f, const char *path, vox_error *err);

/* Appends n bytes; a failure ("No space left on device", "File too large") aborts the file. */
vox_status vox_file_out_write(vox_file_out *f, const void *data, size_t n, vox_error *err);

/* Finishes the file: flushed to disk and renamed into place (or, in place, flushed and closed).
 * A failure aborts it. */
vox_status vox_file_out_commit(vox_file_out *f, vox_error *err);

/* Gives up the file: the temporary one is removed, so what was at the path is as it was (a
 * file written in place keeps what it was given). f may be aborted twice, or when never opened. */
void vox_file_out_abort(vox_file_out *f);

/* open + write + commit of n bytes. */
vox_status vox_file_write_whole(const char *path, const void *data, size_t n, vox_error *err);

/* 1 or 2 when path names the file standard output or standard error writes to now (/dev/stdout,
 * or the file the shell redirected it to), else 0: such a path is written through that stream. */
int vox_file_standard_stream(const char *path);

/* Before the work: that path (an option's, named in errors as "OPTION PATH: ...") can be written
 * when the run ends: a file written in place can be opened for writing, and a file to replace has
 * a directory that exists and takes a new file; a directory is refused. Nothing is left behind. */
vox_status vox_file_out_check(const char *option, const char *path, vox_error *err);

/* Makes and removes a file in dir: errors are "OPTION ARG: cannot write there: reason". access()
 * answers from the permission bits, which root passes everywhere: where the file system itself
 * refuses (sysfs, procfs, a full or read-only mount) only making a file tells. */
vox_status vox_dir_probe_writable(const char *option, const char *arg, const char *dir,
                                  vox_error *err);

#ifdef __cplusplus
}
#endif
#endif
