/* Status codes and error messages, shared by the public API and every module.
 *
 * Functions that can fail return a vox_status and, on failure, fill a vox_error with a message
 * that names the file (or object) and the problem. Nothing below src/tools prints: the tools
 * decide what to show the user. */
#ifndef VOXTRAL_STATUS_H
#define VOXTRAL_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VOX_OK = 0,
    VOX_ERR_IO,          /* a file could not be opened, read or written */
    VOX_ERR_FORMAT,      /* a file's contents are malformed or inconsistent */
    VOX_ERR_INVALID_ARG, /* a caller passed a value outside the documented range */
    VOX_ERR_NOMEM,       /* a host allocation failed */
    VOX_ERR_UNSUPPORTED, /* valid input that this build cannot handle */
    VOX_ERR_DEVICE,      /* a GPU call failed or the device ran out of memory */
    VOX_ERR_TOO_LONG,    /* input longer than the model's context */
    VOX_ERR_INTERRUPTED, /* stopped on request (SIGINT) */
    VOX_ERR_INTERNAL     /* an invariant broke: a bug */
} vox_status;

#define VOX_ERROR_MSG_MAX 1024

typedef struct {
    vox_status code;
    char msg[VOX_ERROR_MSG_MAX];
} vox_error;

/* Records code and a printf-style message in err (err may be NULL); returns code, so that
 * `return vox_fail(err, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));` reads well. */
vox_status vox_fail(vox_error *err, vox_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Prepends "prefix: " to an error already recorded (adds context on the way up). */
void vox_error_prefix(vox_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A short constant name for a status ("I/O error", "format error", ...). */
const char *vox_status_name(vox_status code);

/* Aborts with file:line when an invariant that must never break is broken. Stays on in release
 * builds (SQLite-style): a silent wrong transcript is worse than a crash with a location. */
#define VOX_ASSERT(cond)                                                                     \
    do {                                                                                     \
        if (!(cond)) vox_assert_fail(#cond, __FILE__, __LINE__);                             \
    } while (0)
void vox_assert_fail(const char *cond, const char *file, int line);

#ifdef __cplusplus
}
#endif
#endif
