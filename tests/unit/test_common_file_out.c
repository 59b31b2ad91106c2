/* common/file_out: a regular file (or nothing) is replaced whole through a temporary file; a
 * symbolic link, a FIFO and the file a standard stream writes to are written as they are and
 * never replaced (before, a --latency-json of /dev/stdout or a link replaced the link, and as
 * root a device node, with a regular file). */
#define _XOPEN_SOURCE 700
#include "common/file_out.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "temp_files.h"

static char dir[64];

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* The whole content of path, in buf (NUL-terminated); its length, or -1. */
static long slurp(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
    return (long)got;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}


static void test_regular(void) {
    char path[128], buf[64];
    path_in(path, sizeof path, "out.txt");
    vox_error err = {0};
    CHECK_MSG(vox_file_write_whole(path, "first\n", 6, &err) == VOX_OK, "%s", err.msg);
    CHECK(slurp(path, buf, sizeof buf) == 6 && strcmp(buf, "first\n") == 0);
    struct stat before, after;
    CHECK(stat(path, &before) == 0);
    /* replaced by a rename: a new inode, so a reader of the old file never sees half of each */
    CHECK_MSG(vox_file_write_whole(path, "second, longer\n", 15, &err) == VOX_OK, "%s", err.msg);
    CHECK(stat(path, &after) == 0 && after.st_ino != before.st_ino);
    CHECK(slurp(path, buf, sizeof buf) == 15 && strcmp(buf, "second, longer\n") == 0);
    CHECK(temporaries_in(dir) == 0);

    /* an aborted file leaves the old one whole and no temporary file */
    vox_file_out f;
    CHECK(vox_file_out_open(&f, path, &err) == VOX_OK);
    CHECK(vox_file_out_write(&f, "partial", 7, &err) == VOX_OK);
    CHECK(temporaries_in(dir) == 1);
    vox_file_out_abort(&f);
    vox_file_out_abort(&f); /* twice is harmless */
    CHECK(slurp(path, buf, sizeof buf) == 15 && temporaries_in(dir) == 0);

    /* a missing directory and a directory as the file: errors naming the path */
    char bad[160];
    path_in(bad, sizeof bad, "missing/out.txt");
    CHECK(vox_file_write_whole(bad, "x", 1, &err) == VOX_ERR_IO && strstr(err.msg, bad) &&
          strstr(err.msg, "No such file"));
    CHECK(vox_file_write_whole(dir, "x", 1, &err) == VOX_ERR_IO && strstr(err.msg, "is a directory"));
    unlink(path);
}

static void test_links(void) {
    char target[128], link[128], dangling[128], created[128], buf[64];
    path_in(target, sizeof target, "target.json");
    path_in(link, sizeof link, "link.json");
    path_in(dangling, sizeof dangling, "dangling.json");
    path_in(created, sizeof created, "created.json");
    put(target, "old\n");
    CHECK(symlink("target.json", link) == 0);
    vox_error err = {0};
    CHECK_MSG(vox_file_write_whole(link, "new\n", 4, &err) == VOX_OK, "%s", err.msg);
    struct stat sb;
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode)); /* the link stays a link */
    CHECK(slurp(target, buf, sizeof buf) == 4 && strcmp(buf, "new\n") == 0);
    CHECK(temporaries_in(dir) == 0);
    /* a link to nothing yet: its target is created through it */
    CHECK(symlink("created.json", dangling) == 0);
    CHECK_MSG(vox_file_write_whole(dangling, "made\n", 5, &err) == VOX_OK, "%s", err.msg);
    CHECK(lstat(dangling, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK(slurp(created, buf, sizeof buf) == 5 && strcmp(buf, "made\n") == 0);
    /* the check made before a run passes both */
    CHECK_MSG(vox_file_out_check("--latency-json", link, &err) == VOX_OK, "%s", err.msg);
    CHECK(vox_file_out_check("--latency-json", dir, &err) == VOX_ERR_IO &&
          strstr(err.msg, "--latency-json ") && strstr(err.msg, "is a directory"));
    unlink(link);
    unlink(dangling);
    unlink(target);
    unlink(created);
}

static void test_fifo(void) {
    char fifo[128];
    path_in(fifo, sizeof fifo, "pipe");
    CHECK(mkfifo(fifo, 0600) == 0);
    vox_error err = {0};
    CHECK_MSG(vox_file_out_check("--latency-json", fifo, &err) == VOX_OK, "%s", err.msg);
    pid_t reader = fork();
    if (reader == 0) { /* reads the FIFO to its end; exits 0 when it got exactly the text */
        alarm(20);     /* a writer that replaced the FIFO never comes: fail, do not hang */
        char buf[64];
        long n = slurp(fifo, buf, sizeof buf);
        _exit(n == 9 && strcmp(buf, "streamed\n") == 0 ? 0 : 1);
    }
    CHECK_MSG(vox_file_write_whole(fifo, "streamed\n", 9, &err) == VOX_OK, "%s", err.msg);
    int status = -1;
    CHECK(reader > 0 && waitpid(reader, &status, 0) == reader && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    struct stat sb;
    CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode)); /* still the FIFO */
    CHECK(temporaries_in(dir) == 0);
    unlink(fifo);
}

/* A path to the file standard error writes to is written through standard error's descriptor,
 * after what was written there, and the file is neither truncated nor replaced. */
static void test_standard_stream(void) {
    char log[128], buf[128];
    path_in(log, sizeof log, "stderr.log");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
    close(fd);
    fputs("before\n", stderr); /* buffered or not: flushed first */
    struct stat before, after;
    CHECK(stat(log, &before) == 0);
    vox_error err = {0};
    vox_status st = vox_file_write_whole(log, "{\"json\": 1}\n", 12, &err);
    CHECK(vox_file_out_check("--latency-json", log, &err) == VOX_OK);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_MSG(st == VOX_OK, "%s", err.msg);
    CHECK(stat(log, &after) == 0 && after.st_ino == before.st_ino);
    CHECK_MSG(slurp(log, buf, sizeof buf) == 19 && strcmp(buf, "before\n{\"json\": 1}\n") == 0,
              "'%s'", buf);
    CHECK(temporaries_in(dir) == 0);
    unlink(log);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/vox_file_out_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_regular();
    test_links();
    test_fifo();
    test_standard_stream();
    rmdir(dir);
    return test_finish("common_file_out");
}
