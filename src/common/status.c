#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vox_status vox_fail(vox_error *err, vox_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void vox_error_prefix(vox_error *err, const char *fmt, ...) {
    if (!err) return;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[VOX_ERROR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    /* Truncation keeps the message well-formed; the prefix matters more than the tail. */
    size_t n = strlen(prefix);
    if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t room = sizeof err->msg - n - 3, len = strlen(old);
    if (len > room) len = room;
    memcpy(err->msg + n + 2, old, len);
    err->msg[n + 2 + len] = 0;
}

const char *vox_status_name(vox_status code) {
    switch (code) {
    case VOX_OK: return "ok";
    case VOX_ERR_IO: return "I/O error";
    case VOX_ERR_FORMAT: return "format error";
    case VOX_ERR_INVALID_ARG: return "invalid argument";
    case VOX_ERR_NOMEM: return "out of memory";
    case VOX_ERR_UNSUPPORTED: return "unsupported";
    case VOX_ERR_DEVICE: return "device error";
    case VOX_ERR_TOO_LONG: return "input too long";
    case VOX_ERR_INTERRUPTED: return "interrupted";
    case VOX_ERR_INTERNAL: return "internal error";
    }
    return "unknown error";
}

void vox_assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "voxtral: internal error: assertion `%s' failed at %s:%d\n", cond, file, line);
    abort();
}
