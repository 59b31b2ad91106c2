/* Reading a stream to its end (read_all.h). */
#include "common/read_all.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

vox_status vox_open_regular(const char *path, int *fd, size_t *size, vox_error *err) {
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0) return vox_fail(err, VOX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    vox_status st = VOX_OK;
    if (fstat(*fd, &sb) != 0)
        st = vox_fail(err, VOX_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = vox_fail(err, VOX_ERR_IO, "%s: not a regular file", path);
    else if (fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK) != 0)
        st = vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    if (st) {
        close(*fd);
        *fd = -1;
        return st;
    }
    *size = (size_t)sb.st_size;
    return VOX_OK;
}

vox_status vox_read_regular(const char *path, size_t max_bytes, char **data, size_t *size,
                            vox_error *err) {
    int fd;
    size_t n_file;
    vox_status st = vox_open_regular(path, &fd, &n_file, err);
    if (st) return st;
    char *buf = n_file > max_bytes ? NULL : malloc(n_file + 1);
    if (!buf) {
        close(fd);
        return n_file > max_bytes
                   ? vox_fail(err, VOX_ERR_FORMAT, "%s: larger than %zu bytes", path, max_bytes)
                   : vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    size_t n = 0;
    while (n < n_file) { /* a file that changes meanwhile is read as far as stat said */
        ssize_t got = read(fd, buf + n, n_file - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", path, strerror(e));
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return VOX_OK;
}

vox_status vox_read_all(int fd, const char *name, size_t max_bytes, bool (*stop)(void *),
                        void *stop_arg, unsigned char **data, size_t *size, vox_error *err) {
    if (isatty(fd))
        return vox_fail(err, VOX_ERR_IO, "%s: standard input is a terminal, not audio: pipe or "
                        "redirect a file into it (cmd | voxtral_runner -)", name);
    size_t cap = (size_t)1 << 20, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", name);
    for (;;) {
        /* wait in slices, so that a signal (SIGINT: SA_RESTART would resume a blocked read) ends
         * a read from a writer that sends nothing */
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = poll(&pfd, 1, 100);
        if (stop && stop(stop_arg)) {
            free(buf);
            return vox_fail(err, VOX_ERR_INTERRUPTED, "%s: interrupted while reading", name);
        }
        if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
        if (n >= max_bytes) { /* full: accepted if the input ends here */
            unsigned char probe;
            ssize_t more = read(fd, &probe, 1);
            if (more == 0) break;
            if (more < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            int e = errno;
            free(buf);
            if (more < 0) return vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", name, strerror(e));
            return vox_fail(err, VOX_ERR_TOO_LONG, "%s: more than %zu bytes of input, more than the "
                            "longest audio taken needs: write it to a file, or cut it", name,
                            max_bytes);
        }
        if (n == cap) {
            unsigned char *grown = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!grown) {
                free(buf);
                return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory after %zu bytes", name, n);
            }
            buf = grown, cap *= 2;
        }
        ssize_t got = read(fd, buf + n, (cap < max_bytes ? cap : max_bytes) - n);
        if (got == 0) break;
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue; /* EAGAIN: a non-blocking fd */
            int e = errno;
            free(buf);
            return vox_fail(err, VOX_ERR_IO, "%s: cannot read: %s", name, strerror(e));
        }
        n += (size_t)got;
    }
    *data = buf;
    *size = n;
    return VOX_OK;
}
