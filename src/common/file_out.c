/* Writing an output file whole or not at all (file_out.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include "common/file_out.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory that holds path ("." for a bare name, "/" for "/name"; malloc'ed, NULL: out of
 * memory). */
static char *parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, slash > path ? (size_t)(slash - path) : 1) : strdup(".");
}

vox_status vox_dir_probe_writable(const char *option, const char *arg, const char *dir,
                                  vox_error *err) {
    size_t n = strlen(dir) + sizeof "/.voxtral_probe_XXXXXX";
    char *probe = malloc(n);
    if (!probe) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    snprintf(probe, n, "%s/.voxtral_probe_XXXXXX", dir);
    int fd = mkstemp(probe);
    vox_status st = VOX_OK;
    if (fd < 0) {
        st = vox_fail(err, VOX_ERR_IO, "%s %s: cannot write there: %s", option, arg, strerror(errno));
    } else {
        close(fd);
        unlink(probe);
    }
    free(probe);
    return st;
}

/* The standard stream (1 or 2) that already writes to the file sb describes, or 0. */
static int standard_stream_of(const struct stat *sb) {
    for (int fd = 1; fd <= 2; fd++) {
        struct stat s;
        if (fstat(fd, &s) == 0 && s.st_dev == sb->st_dev && s.st_ino == sb->st_ino) return fd;
    }
    return 0;
}

int vox_file_standard_stream(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? standard_stream_of(&sb) : 0;
}

/* How path is written. */
typedef enum {
    OUT_REPLACE,  /* a regular file or nothing: through a temporary file renamed over *target */
    OUT_STREAM,   /* through standard output or error (*stream: 1 or 2) */
    OUT_IN_PLACE, /* opened as it is: a device, a FIFO, a socket, or a dangling link's target */
} out_kind;

/* Decides how path is written; *target (malloc'ed) is what a replacement is renamed over: path,
 * or a link's resolved target. */
static vox_status classify(const char *path, out_kind *kind, int *stream, char **target,
                           vox_error *err) {
    *target = NULL;
    *stream = 0;
    struct stat sb, lsb;
    const bool exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode)) return vox_fail(err, VOX_ERR_IO, "%s: is a directory", path);
    if (exists && (*stream = standard_stream_of(&sb))) {
        *kind = OUT_STREAM;
        return VOX_OK;
    }
    if (exists && !S_ISREG(sb.st_mode)) {
        *kind = OUT_IN_PLACE;
        return VOX_OK;
    }
    const bool link = lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode);
    if (link && !exists) { /* dangling: the target is created through the link */
        *kind = OUT_IN_PLACE;
        return VOX_OK;
    }
    *kind = OUT_REPLACE;
    *target = link ? realpath(path, NULL) : strdup(path);
    if (!*target)
        return link ? vox_fail(err, VOX_ERR_IO, "%s: cannot resolve the link: %s", path, strerror(errno))
                    : vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    return VOX_OK;
}

/* target's hidden temporary file in its directory (malloc'ed; NULL: out of memory). */
static char *temporary_name(const char *target) {
    const char *slash = strrchr(target, '/');
    size_t dlen = slash ? (size_t)(slash - target) + 1 : 0;
    const char *name = target + dlen;
    char suffix[48];
    snprintf(suffix, sizeof suffix, ".%ld.tmp", (long)getpid());
    size_t nlen = strlen(name);
    if (1 + nlen + strlen(suffix) > NAME_MAX) {
        /* a NAME near the file-name limit (255 bytes) has no room for ".", ".PID.tmp": the
         * temporary file takes as much of the name as fits, and a number of its own */
        static atomic_uint serial;
        snprintf(suffix, sizeof suffix, ".%ld.%u.tmp", (long)getpid(), atomic_fetch_add(&serial, 1));
        size_t room = NAME_MAX - 1 - strlen(suffix);
        if (nlen > room) nlen = room;
    }
    size_t tlen = dlen + 1 + nlen + strlen(suffix) + 1;
    char *tmp = malloc(tlen);
    if (tmp) snprintf(tmp, tlen, "%.*s.%.*s%s", (int)dlen, target, (int)nlen, name, suffix);
    return tmp;
}

vox_status vox_file_out_open(vox_file_out *f, const char *path, vox_error *err) {
    *f = (vox_file_out){.fd = -1};
    out_kind kind;
    int stream;
    char *target;
    vox_status st = classify(path, &kind, &stream, &target, err);
    if (st) return st;
    if (!(f->path = strdup(path))) {
        free(target);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    f->target = target;
    if (kind == OUT_STREAM) {
        fflush(stream == 1 ? stdout : stderr); /* what was printed comes first */
        f->fd = fcntl(stream, F_DUPFD_CLOEXEC, 3);
    } else if (kind == OUT_IN_PLACE) {
        /* a FIFO waits here for its reader, as any writer would */
        f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    } else if (!(f->tmp = temporary_name(target))) {
        vox_file_out_abort(f);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    } else {
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    }
    if (f->fd < 0) {
        int e = errno;
        st = f->tmp ? vox_fail(err, VOX_ERR_IO, "%s: cannot create %s: %s", path, f->tmp, strerror(e))
                    : vox_fail(err, VOX_ERR_IO, "%s: cannot open for writing: %s", path, strerror(e));
        free(f->tmp); /* nothing was created */
        f->tmp = NULL;
        vox_file_out_abort(f);
    }
    return st;
}

vox_status vox_file_out_write(vox_file_out *f, const void *data, size_t n, vox_error *err) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            vox_status st = vox_fail(err, VOX_ERR_IO, "%s: cannot write: %s", f->path,
                                     w < 0 ? strerror(errno) : "nothing written");
            vox_file_out_abort(f);
            return st;
        }
        p += w;
        n -= (size_t)w;
    }
    return VOX_OK;
}

/* Syncs the directory that holds path, so that a rename into it is on disk. */
static void sync_parent(const char *path) {
    char *dir = parent_dir(path);
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* best effort: some file systems refuse directory fsync */
        close(fd);
    }
    free(dir);
}

vox_status vox_file_out_commit(vox_file_out *f, vox_error *err) {
    struct stat sb;
    const char *what = NULL;
    int e = 0;
    /* a pipe or a terminal has nothing to flush (fsync would fail with EINVAL) */
    if (fstat(f->fd, &sb) == 0 && S_ISREG(sb.st_mode) && fsync(f->fd) != 0) {
        what = "cannot flush to disk";
        e = errno;
    }
    if (close(f->fd) != 0 && !what) {
        what = "cannot write";
        e = errno;
    }
    f->fd = -1;
    if (!what && f->tmp && rename(f->tmp, f->target) != 0) {
        what = "cannot rename the temporary file";
        e = errno;
    }
    if (what) {
        vox_status st = vox_fail(err, VOX_ERR_IO, "%s: %s: %s", f->path, what, strerror(e));
        vox_file_out_abort(f);
        return st;
    }
    if (f->tmp) sync_parent(f->target);
    free(f->tmp);
    f->tmp = NULL;
    vox_file_out_abort(f); /* frees the rest */
    return VOX_OK;
}

void vox_file_out_abort(vox_file_out *f) {
    if (f->fd >= 0) close(f->fd);
    if (f->tmp) unlink(f->tmp);
    free(f->tmp);
    free(f->target);
    free(f->path);
    *f = (vox_file_out){.fd = -1};
}

vox_status vox_file_write_whole(const char *path, const void *data, size_t n, vox_error *err) {
    vox_file_out f;
    vox_status st = vox_file_out_open(&f, path, err);
    if (!st) st = vox_file_out_write(&f, data, n, err);
    if (!st) st = vox_file_out_commit(&f, err);
    return st;
}

vox_status vox_file_out_check(const char *option, const char *path, vox_error *err) {
    out_kind kind;
    int stream;
    char *target;
    vox_error why = {0};
    if (classify(path, &kind, &stream, &target, &why)) {
        if (why.code == VOX_ERR_NOMEM) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        return vox_fail(err, VOX_ERR_IO, "%s %s", option, why.msg); /* "is a directory", ... */
    }
    if (kind == OUT_STREAM) return VOX_OK;
    struct stat sb;
    if (kind == OUT_IN_PLACE && stat(path, &sb) == 0) { /* a device, a FIFO, a socket */
        if (access(path, W_OK) != 0)
            return vox_fail(err, VOX_ERR_IO, "%s %s: cannot write there: %s", option, path,
                            strerror(errno));
        return VOX_OK;
    }
    /* a file to replace, or a dangling link (the directory checked is the link's own) */
    char *dir = parent_dir(target ? target : path);
    free(target);
    if (!dir) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    vox_status st;
    if (stat(dir, &sb) != 0)
        st = vox_fail(err, VOX_ERR_IO, "%s %s: %s: %s", option, path, dir, strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = vox_fail(err, VOX_ERR_IO, "%s %s: %s is not a directory", option, path, dir);
    else
        st = vox_dir_probe_writable(option, path, dir, err);
    free(dir);
    return st;
}
