/* Reading a stream (standard input, a pipe, a FIFO) whole into memory, in waits that a stop
 * function can end: audio that arrives through a pipe is decoded from memory, where libsndfile
 * can seek. */
#ifndef VOX_COMMON_READ_ALL_H
#define VOX_COMMON_READ_ALL_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything readable from fd up to its end, in *data (malloc'ed; *size bytes), at most
 * max_bytes (more: VOX_ERR_TOO_LONG, so an endless pipe ends with a message, not out of
 * memory). A terminal is refused (VOX_ERR_IO: nobody types audio); VOX_ERR_INTERRUPTED as soon
 * as stop(stop_arg) (stop may be NULL) says so, waiting or not: it is asked every 100 ms while
 * nothing arrives. fd may be non-blocking (a FIFO opened without waiting for its writer: it
 * waits for one here). Errors name `name`. */
vox_status vox_read_all(int fd, const char *name, size_t max_bytes, bool (*stop)(void *),
                        void *stop_arg, unsigned char **data, size_t *size, vox_error *err);

/* Opens path for reading when it is a regular file (*fd, and its size in *size). A FIFO, a
 * device or a directory is refused ("not a regular file", VOX_ERR_IO) without waiting for a
 * FIFO's writer: model files and their like are never streams. */
vox_status vox_open_regular(const char *path, int *fd, size_t *size, vox_error *err);

/* The whole of the regular file at path (vox_open_regular), at most max_bytes (more:
 * VOX_ERR_FORMAT, "larger than N bytes"), in *data (malloc'ed, NUL-terminated; *size bytes). */
vox_status vox_read_regular(const char *path, size_t max_bytes, char **data, size_t *size,
                            vox_error *err);

#ifdef __cplusplus
}
#endif
#endif
