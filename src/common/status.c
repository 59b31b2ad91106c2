#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A message longer than vox_error's buffer keeps its start and its end, the middle replaced by
 * VOX_ELISION: a path of a few thousand bytes still leaves room for the reason after it (cutting
 * the end, as snprintf does, lost the reason behind a long path, or two copies of it). The end
 * gets two thirds of the room: that is where the reason is. Cuts fall between UTF-8 characters. */
static size_t elided_head(void) { return (VOX_ERROR_MSG_MAX - 1 - strlen(VOX_ELISION)) / 3; }

static void store_elided(vox_error *err, const char *text, size_t len) {
    const size_t room = sizeof err->msg - 1;
    if (len <= room) {
        memcpy(err->msg, text, len);
        err->msg[len] = 0;
        return;
    }
    const size_t mark = strlen(VOX_ELISION);
    size_t head = elided_head(), tail_at = len - (room - mark - head);
    while (head > 0 && ((unsigned char)text[head] & 0xC0) == 0x80) head--;
    while (tail_at < len && ((unsigned char)text[tail_at] & 0xC0) == 0x80) tail_at++;
    memcpy(err->msg, text, head);
    memcpy(err->msg + head, VOX_ELISION, mark);
    memcpy(err->msg + head + mark, text + tail_at, len - tail_at);
    err->msg[head + mark + len - tail_at] = 0;
}

/* fmt's text, malloc'ed (NULL: out of memory). */
static char *format_text(const char *fmt, va_list ap, size_t *len) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    *len = text ? (size_t)n : 0;
    return text;
}

vox_status vox_fail(vox_error *err, vox_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        size_t len;
        char *text = format_text(fmt, ap, &len);
        va_end(ap);
        if (text) {
            store_elided(err, text, len);
            free(text);
        } else { /* no memory for the whole text: what fits */
            va_start(ap, fmt);
            vsnprintf(err->msg, sizeof err->msg, fmt, ap);
            va_end(ap);
        }
        err->code = code;
    }
    return code;
}

void vox_error_prefix(vox_error *err, const char *fmt, ...) {
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    size_t plen;
    char *prefix = format_text(fmt, ap, &plen);
    va_end(ap);
    size_t old = strlen(err->msg);
    char *text = prefix ? malloc(plen + 2 + old + 1) : NULL;
    if (!text) { /* no memory: the message stays as it was */
        free(prefix);
        return;
    }
    memcpy(text, prefix, plen);
    memcpy(text + plen, ": ", 2);
    memcpy(text + plen + 2, err->msg, old + 1);
    store_elided(err, text, plen + 2 + old);
    free(text);
    free(prefix);
}

bool vox_message_names(const char *msg, const char *name) {
    size_t n = strlen(name);
    if (strncmp(msg, name, n) == 0) return true;
    /* an elided message whose start is the start of name: the marker where store_elided puts
     * it (up to 3 bytes early, the cut moved back to a character's start) */
    const char *cut = strstr(msg, VOX_ELISION);
    size_t at = cut ? (size_t)(cut - msg) : 0;
    return cut && at <= elided_head() && at + 3 >= elided_head() && at < n &&
           strncmp(msg, name, at) == 0;
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
