/* The parallel reader (runtime/parallel_read.h) on real files, with a sink that copies into host
 * memory the way the CUDA backend's copies into device memory:
 * - the plan: spans in file order, none over max_span, each a contiguous file range; every
 *   piece covered exactly once, in order; neighbours merged, large pieces cut, empty pieces
 *   skipped, an overlapping piece starting a new span;
 * - a run on 1, 3 and 8 threads, with spans of awkward sizes, puts every byte where it belongs
 *   and nothing anywhere else (guard bytes around each destination);
 * - reads cut short (at most 37 bytes) and interrupted (EINTR) give the same bytes;
 * - a file truncated after planning, a read error, a sink that fails: the run stops with
 *   VOX_ERR_IO naming the file (or the sink's error), every worker that began also ends, and
 *   nothing crashes (run it under -DVOX_SANITIZE=ON for the "no leak" half). */
#include "runtime/parallel_read.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define GUARD 16
#define GUARD_BYTE 0xA5

static char tmpdir[200];

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) { /* xorshift64 */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A file of n pseudo-random bytes; returns its contents (malloc'ed). */
static unsigned char *make_file(const char *path, size_t n) {
    unsigned char *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)rnd();
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return p;
}

/* ---- a sink into host memory, two buffers a worker, counting its calls ---------------------- */

#define MAX_WORKERS 16
typedef struct {
    size_t buf_bytes;
    void *bufs[MAX_WORKERS][2];
    int toggle[MAX_WORKERS];
    atomic_int begins, ends, delivered;
    int fail_delivery; /* the n-th delivery fails (0: none) */
} host_sink;

static vox_status hs_begin(void *user, int w, vox_error *err) {
    host_sink *s = user;
    (void)err;
    for (int i = 0; i < 2; i++) {
        s->bufs[w][i] = malloc(s->buf_bytes);
        memset(s->bufs[w][i], 0x5A, s->buf_bytes); /* not the file's bytes */
    }
    atomic_fetch_add(&s->begins, 1);
    return VOX_OK;
}

static vox_status hs_acquire(void *user, int w, void **buf, vox_error *err) {
    host_sink *s = user;
    (void)err;
    *buf = s->bufs[w][s->toggle[w]];
    s->toggle[w] ^= 1;
    return VOX_OK;
}

static vox_status hs_deliver(void *user, int w, void *buf, const vox_read_span *span,
                             const vox_read_part *parts, vox_error *err) {
    host_sink *s = user;
    (void)w;
    size_t covered = 0;
    for (size_t i = 0; i < span->n_parts; i++) {
        CHECK(parts[i].at == covered); /* parts tile the buffer in order */
        memcpy(parts[i].dst, (char *)buf + parts[i].at, parts[i].nbytes);
        covered += parts[i].nbytes;
    }
    CHECK(covered == span->nbytes);
    int n = atomic_fetch_add(&s->delivered, 1) + 1;
    if (s->fail_delivery && n == s->fail_delivery)
        return vox_fail(err, VOX_ERR_DEVICE, "sink: copy %d failed", n);
    return VOX_OK;
}

static vox_status hs_end(void *user, int w, vox_error *err) {
    host_sink *s = user;
    (void)err;
    for (int i = 0; i < 2; i++) free(s->bufs[w][i]);
    atomic_fetch_add(&s->ends, 1);
    return VOX_OK;
}

static vox_read_sink sink_of(host_sink *s) {
    return (vox_read_sink){.user = s, .begin = hs_begin, .acquire = hs_acquire,
                           .deliver = hs_deliver, .end = hs_end};
}

/* ---- pieces over two files, with guarded destinations -------------------------------------- */

typedef struct {
    vox_read_piece pieces[64];
    unsigned char *dst[64]; /* GUARD bytes, nbytes, GUARD bytes */
    size_t n;
} piece_set;

/* Cuts [0, size) of file f into consecutive pieces of random sizes (some empty), leaving a gap
 * now and then (bytes no piece wants). */
static void add_pieces(piece_set *ps, int f, size_t size, size_t max_piece) {
    for (size_t off = 0; off < size && ps->n < 64;) {
        size_t len = (size_t)(rnd() % (max_piece + 1));
        if (len > size - off) len = size - off;
        if (rnd() % 5 == 0) { /* a gap */
            off += len ? len : 1;
            continue;
        }
        unsigned char *d = malloc(len + 2 * GUARD);
        memset(d, GUARD_BYTE, len + 2 * GUARD);
        ps->dst[ps->n] = d;
        ps->pieces[ps->n++] = (vox_read_piece){.file = f, .offset = off, .nbytes = len, .dst = d + GUARD};
        off += len;
    }
}

static void shuffle(piece_set *ps) {
    for (size_t i = ps->n; i > 1; i--) {
        size_t j = (size_t)(rnd() % i);
        vox_read_piece t = ps->pieces[i - 1];
        ps->pieces[i - 1] = ps->pieces[j];
        ps->pieces[j] = t;
        unsigned char *d = ps->dst[i - 1];
        ps->dst[i - 1] = ps->dst[j];
        ps->dst[j] = d;
    }
}

static void free_pieces(piece_set *ps) {
    for (size_t i = 0; i < ps->n; i++) free(ps->dst[i]);
    ps->n = 0;
}

/* Every piece holds its bytes of the file, the guards are intact. */
static bool pieces_hold(const piece_set *ps, unsigned char *const *contents) {
    bool ok = true;
    for (size_t i = 0; i < ps->n; i++) {
        const vox_read_piece *p = &ps->pieces[i];
        const unsigned char *d = ps->dst[i];
        ok &= memcmp(d + GUARD, contents[p->file] + p->offset, p->nbytes) == 0;
        for (size_t g = 0; g < GUARD; g++)
            ok &= d[g] == GUARD_BYTE && d[GUARD + p->nbytes + g] == GUARD_BYTE;
    }
    return ok;
}

static void clear_pieces(piece_set *ps) {
    for (size_t i = 0; i < ps->n; i++) memset(ps->dst[i] + GUARD, 0, ps->pieces[i].nbytes);
}

/* ---- the plan ------------------------------------------------------------------------------- */

static void check_plan(const vox_read_plan *pl, const piece_set *ps) {
    uint64_t total = 0;
    for (size_t i = 0; i < ps->n; i++) total += ps->pieces[i].nbytes;
    CHECK(pl->total_bytes == total);
    size_t parts = 0;
    for (size_t i = 0; i < pl->n_spans; i++) {
        const vox_read_span *s = &pl->spans[i];
        CHECK(s->nbytes >= 1 && s->nbytes <= pl->max_span);
        CHECK(s->first_part == parts);
        parts += s->n_parts;
        if (i > 0) {
            const vox_read_span *p = &pl->spans[i - 1];
            CHECK(p->file < s->file || (p->file == s->file && p->offset + p->nbytes <= s->offset));
        }
        /* a span's parts map its file bytes to their pieces' destinations */
        for (size_t k = 0; k < s->n_parts; k++) {
            const vox_read_part *pt = &pl->parts[s->first_part + k];
            uint64_t file_off = s->offset + pt->at;
            bool found = false;
            for (size_t j = 0; j < ps->n && !found; j++) {
                const vox_read_piece *pc = &ps->pieces[j];
                if (pc->file == s->file && file_off >= pc->offset &&
                    file_off + pt->nbytes <= pc->offset + pc->nbytes)
                    found = (char *)pt->dst == (char *)pc->dst + (file_off - pc->offset);
            }
            CHECK_MSG(found, "span %zu part %zu maps to no piece", i, k);
        }
    }
    CHECK(parts == pl->n_parts);
}

static void test_plan(void) {
    char a[512], b[512]; /* destinations are only compared, never written */
    /* neighbours share a span; the one after a gap does not; a large piece is cut */
    vox_read_piece p[] = {
        {.file = 0, .offset = 100, .nbytes = 50, .dst = b},  /* given out of order */
        {.file = 0, .offset = 0, .nbytes = 60, .dst = a},
        {.file = 0, .offset = 60, .nbytes = 40, .dst = a},
        {.file = 0, .offset = 150, .nbytes = 0, .dst = a},   /* empty: skipped */
        {.file = 0, .offset = 200, .nbytes = 250, .dst = b}, /* after a gap, over max_span */
        {.file = 1, .offset = 0, .nbytes = 10, .dst = a},    /* another file */
    };
    vox_read_plan pl;
    vox_error err = {0};
    CHECK(vox_read_plan_build(p, 6, 100, &pl, &err) == VOX_OK);
    CHECK(pl.total_bytes == 410);
    /* [0,100): parts 60 + 40; [100,150); [200,300) [300,400) [400,450); file 1 [0,10) */
    CHECK(pl.n_spans == 6);
    if (pl.n_spans == 6) {
        CHECK(pl.spans[0].offset == 0 && pl.spans[0].nbytes == 100 && pl.spans[0].n_parts == 2);
        CHECK(pl.spans[1].offset == 100 && pl.spans[1].nbytes == 50 && pl.spans[1].n_parts == 1);
        CHECK(pl.spans[2].offset == 200 && pl.spans[2].nbytes == 100);
        CHECK(pl.spans[3].offset == 300 && pl.spans[3].nbytes == 100);
        CHECK(pl.spans[4].offset == 400 && pl.spans[4].nbytes == 50);
        CHECK(pl.spans[5].file == 1 && pl.spans[5].offset == 0 && pl.spans[5].nbytes == 10);
        /* the cut piece: its parts continue in its destination */
        CHECK(pl.parts[pl.spans[3].first_part].dst == b + 100);
        CHECK(pl.parts[pl.spans[4].first_part].dst == b + 200);
    }
    vox_read_plan_free(&pl);

    /* [100,150) completes a span begun at 60 up to max_span; then [150, 200) starts another */
    vox_read_piece q[] = {{.file = 0, .offset = 60, .nbytes = 40, .dst = a},
                          {.file = 0, .offset = 100, .nbytes = 100, .dst = b}};
    CHECK(vox_read_plan_build(q, 2, 64, &pl, &err) == VOX_OK);
    CHECK(pl.n_spans == 3 && pl.spans[0].nbytes == 64 && pl.spans[0].n_parts == 2);
    CHECK(pl.n_spans == 3 && pl.spans[1].offset == 124 && pl.spans[2].offset == 188);
    vox_read_plan_free(&pl);

    /* overlapping pieces (the same bytes to two places): the second starts its own span */
    vox_read_piece o[] = {{.file = 0, .offset = 0, .nbytes = 30, .dst = a},
                          {.file = 0, .offset = 10, .nbytes = 30, .dst = b}};
    CHECK(vox_read_plan_build(o, 2, 1000, &pl, &err) == VOX_OK);
    CHECK(pl.n_spans == 2 && pl.spans[1].offset == 10 && pl.spans[1].nbytes == 30);
    vox_read_plan_free(&pl);

    /* nothing to read */
    CHECK(vox_read_plan_build(NULL, 0, 100, &pl, &err) == VOX_OK);
    CHECK(pl.n_spans == 0 && pl.total_bytes == 0);
    vox_read_plan_free(&pl);

    /* random pieces, random spans */
    for (int round = 0; round < 20; round++) {
        piece_set ps = {0};
        add_pieces(&ps, 0, 5000, 700);
        add_pieces(&ps, 1, 3000, 900);
        shuffle(&ps);
        size_t max_span = 1 + (size_t)(rnd() % 1500);
        CHECK(vox_read_plan_build(ps.pieces, ps.n, max_span, &pl, &err) == VOX_OK);
        check_plan(&pl, &ps);
        vox_read_plan_free(&pl);
        free_pieces(&ps);
    }
}

/* ---- runs ----------------------------------------------------------------------------------- */

static int short_calls;
/* At most 37 bytes a call, and every third call interrupted. */
static ssize_t short_pread(int fd, void *buf, size_t n, off_t off) {
    static _Thread_local int calls;
    if (++calls % 3 == 0) {
        errno = EINTR;
        return -1;
    }
    __atomic_fetch_add(&short_calls, 1, __ATOMIC_RELAXED);
    return pread(fd, buf, n < 37 ? n : 37, off);
}

static ssize_t failing_pread(int fd, void *buf, size_t n, off_t off) {
    if (off >= 20000) {
        errno = EIO;
        return -1;
    }
    return pread(fd, buf, n, off);
}

typedef struct {
    vox_read_file files[2];
    unsigned char *contents[2];
    char paths[2][256];
} two_files;

static void open_two(two_files *t, size_t size0, size_t size1) {
    size_t sizes[2] = {size0, size1};
    for (int f = 0; f < 2; f++) {
        snprintf(t->paths[f], sizeof t->paths[f], "%s/blob%d.bin", tmpdir, f);
        t->contents[f] = make_file(t->paths[f], sizes[f]);
        t->files[f] = (vox_read_file){.fd = open(t->paths[f], O_RDONLY), .path = t->paths[f]};
        if (t->files[f].fd < 0) {
            fprintf(stderr, "cannot open %s\n", t->paths[f]);
            exit(1);
        }
    }
}

static void close_two(two_files *t) {
    for (int f = 0; f < 2; f++) {
        close(t->files[f].fd);
        unlink(t->paths[f]);
        free(t->contents[f]);
    }
}

static void test_runs(void) {
    two_files t;
    open_two(&t, 40000, 23456);
    piece_set ps = {0};
    add_pieces(&ps, 0, 40000, 3000);
    add_pieces(&ps, 1, 23456, 5000);
    shuffle(&ps);
    const size_t spans[] = {1, 777, 4096, 100000};
    const int threads[] = {1, 3, 8};
    vox_error err = {0};
    for (size_t si = 0; si < sizeof spans / sizeof *spans; si++) {
        vox_read_plan pl;
        CHECK(vox_read_plan_build(ps.pieces, ps.n, spans[si], &pl, &err) == VOX_OK);
        for (size_t ti = 0; ti < sizeof threads / sizeof *threads; ti++) {
            if (spans[si] == 1 && threads[ti] > 1) continue; /* 1-byte spans: slow, once is enough */
            clear_pieces(&ps);
            host_sink s = {.buf_bytes = spans[si]};
            vox_read_sink k = sink_of(&s);
            vox_read_stats stats;
            vox_status st = vox_read_run(&pl, t.files, 2, threads[ti], &k, &stats, &err);
            CHECK_MSG(st == VOX_OK, "span %zu, %d threads: %s", spans[si], threads[ti], err.msg);
            CHECK_MSG(pieces_hold(&ps, t.contents), "span %zu, %d threads: wrong bytes", spans[si],
                      threads[ti]);
            CHECK(stats.bytes == pl.total_bytes);
            CHECK(stats.threads >= 1 && stats.threads <= threads[ti]);
            CHECK(s.begins == stats.threads && s.ends == stats.threads);
            CHECK((size_t)s.delivered == pl.n_spans);
            CHECK(stats.last_read_at >= stats.first_read_at && stats.wall_ms >= 0);
        }
        vox_read_plan_free(&pl);
    }

    /* short and interrupted reads */
    t.files[0].read = t.files[1].read = short_pread;
    vox_read_plan pl;
    CHECK(vox_read_plan_build(ps.pieces, ps.n, 5000, &pl, &err) == VOX_OK);
    clear_pieces(&ps);
    host_sink s = {.buf_bytes = 5000};
    vox_read_sink k = sink_of(&s);
    CHECK_MSG(vox_read_run(&pl, t.files, 2, 4, &k, NULL, &err) == VOX_OK, "%s", err.msg);
    CHECK(pieces_hold(&ps, t.contents));
    CHECK(short_calls > (int)(pl.total_bytes / 37));

    /* a read error names the file and the reason */
    t.files[0].read = failing_pread;
    t.files[1].read = NULL;
    host_sink s2 = {.buf_bytes = 5000};
    k = sink_of(&s2);
    err = (vox_error){0};
    CHECK(vox_read_run(&pl, t.files, 2, 4, &k, NULL, &err) == VOX_ERR_IO);
    CHECK_MSG(strstr(err.msg, t.paths[0]) && strstr(err.msg, strerror(EIO)), "%s", err.msg);
    CHECK(s2.begins == s2.ends);

    /* a sink that fails: its error comes back, every worker ends */
    t.files[0].read = NULL;
    host_sink s3 = {.buf_bytes = 5000, .fail_delivery = 3};
    k = sink_of(&s3);
    err = (vox_error){0};
    CHECK(vox_read_run(&pl, t.files, 2, 3, &k, NULL, &err) == VOX_ERR_DEVICE);
    CHECK_MSG(strstr(err.msg, "copy 3 failed") != NULL, "%s", err.msg);
    CHECK(s3.begins == s3.ends);

    /* the file truncated after the plan was made: an I/O error naming it, no crash */
    CHECK(truncate(t.paths[1], 20000) == 0);
    for (int n = 1; n <= 8; n *= 2) {
        host_sink s4 = {.buf_bytes = 5000};
        k = sink_of(&s4);
        err = (vox_error){0};
        CHECK(vox_read_run(&pl, t.files, 2, n, &k, NULL, &err) == VOX_ERR_IO);
        CHECK_MSG(strstr(err.msg, t.paths[1]) && strstr(err.msg, "truncated"), "%s", err.msg);
        CHECK(s4.begins == s4.ends);
    }
    vox_read_plan_free(&pl);
    free_pieces(&ps);
    close_two(&t);
}

/* ---- vox_read_exact at the edges ------------------------------------------------------------ */

static void test_read_exact(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/small.bin", tmpdir);
    unsigned char *c = make_file(path, 100);
    vox_read_file f = {.fd = open(path, O_RDONLY), .path = path};
    unsigned char buf[100];
    vox_error err = {0};
    CHECK(vox_read_exact(&f, buf, 100, 0, &err) == VOX_OK && memcmp(buf, c, 100) == 0);
    CHECK(vox_read_exact(&f, buf, 0, 100, &err) == VOX_OK); /* nothing, at the end */
    CHECK(vox_read_exact(&f, buf, 1, 100, &err) == VOX_ERR_IO && strstr(err.msg, path));
    CHECK(vox_read_exact(&f, buf, 50, 60, &err) == VOX_ERR_IO && strstr(err.msg, "ends at byte 100"));
    close(f.fd);
    vox_read_file bad = {.fd = -1, .path = "no-such-file"};
    CHECK(vox_read_exact(&bad, buf, 1, 0, &err) == VOX_ERR_IO && strstr(err.msg, "no-such-file"));
    unlink(path);
    free(c);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/vox_test_read_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_plan();
    test_runs();
    test_read_exact();
    rmdir(tmpdir);
    return test_finish("test_runtime_parallel_read");
}
