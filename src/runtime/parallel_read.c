/* Reading many byte ranges of files on several threads (parallel_read.h). */
#include "runtime/parallel_read.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

/* Linux moves at most 0x7ffff000 bytes a read; asking for less keeps every count in range. */
#define READ_MAX ((size_t)1 << 30)

/* ---- the plan -------------------------------------------------------------------------------- */

static int cmp_piece(const void *a, const void *b) {
    const vox_read_piece *x = *(const vox_read_piece *const *)a, *y = *(const vox_read_piece *const *)b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: the caller's order among equals */
}

/* Grows *items (of `size` bytes each) to hold at least n + 1. */
static bool grow(void **items, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return true;
    size_t c = *cap ? 2 * *cap : 64;
    void *p = realloc(*items, c * size);
    if (!p) return false;
    *items = p;
    *cap = c;
    return true;
}

vox_status vox_read_plan_build(const vox_read_piece *pieces, size_t n_pieces, size_t max_span,
                               vox_read_plan *plan, vox_error *err) {
    memset(plan, 0, sizeof *plan);
    VOX_ASSERT(max_span > 0);
    plan->max_span = max_span;
    const vox_read_piece **order = malloc((n_pieces ? n_pieces : 1) * sizeof *order);
    if (!order) return vox_fail(err, VOX_ERR_NOMEM, "out of memory planning the weight reads");
    for (size_t i = 0; i < n_pieces; i++) order[i] = &pieces[i];
    qsort(order, n_pieces, sizeof *order, cmp_piece);
    size_t cap_spans = 0, cap_parts = 0;
    vox_read_span *cur = NULL;
    for (size_t i = 0; i < n_pieces; i++) {
        const vox_read_piece *p = order[i];
        uint64_t off = p->offset;
        char *dst = p->dst;
        for (size_t left = p->nbytes; left > 0;) {
            bool extends = cur && cur->file == p->file && cur->offset + cur->nbytes == off &&
                           cur->nbytes < max_span;
            if (!extends) {
                if (!grow((void **)&plan->spans, &cap_spans, plan->n_spans, sizeof *plan->spans))
                    goto nomem;
                cur = &plan->spans[plan->n_spans++];
                *cur = (vox_read_span){.file = p->file, .offset = off, .first_part = plan->n_parts};
            }
            size_t take = max_span - cur->nbytes < left ? max_span - cur->nbytes : left;
            if (!grow((void **)&plan->parts, &cap_parts, plan->n_parts, sizeof *plan->parts))
                goto nomem;
            plan->parts[plan->n_parts++] = (vox_read_part){.dst = dst, .at = cur->nbytes, .nbytes = take};
            cur->n_parts++;
            cur->nbytes += take;
            off += take;
            dst += take;
            left -= take;
            plan->total_bytes += take;
        }
    }
    free(order);
    return VOX_OK;
nomem:
    free(order);
    vox_read_plan_free(plan);
    return vox_fail(err, VOX_ERR_NOMEM, "out of memory planning the weight reads");
}

void vox_read_plan_free(vox_read_plan *plan) {
    free(plan->spans);
    free(plan->parts);
    memset(plan, 0, sizeof *plan);
}

/* ---- reading --------------------------------------------------------------------------------- */

vox_status vox_read_exact(const vox_read_file *f, void *buf, size_t n, uint64_t offset,
                          vox_error *err) {
    vox_pread_fn rd = f->read ? f->read : pread;
    char *p = buf;
    while (n > 0) {
        ssize_t got = rd(f->fd, p, n < READ_MAX ? n : READ_MAX, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            return vox_fail(err, VOX_ERR_IO, "%s: cannot read %zu bytes at byte %llu: %s", f->path,
                            n, (unsigned long long)offset, strerror(errno));
        if (got == 0)
            return vox_fail(err, VOX_ERR_IO,
                            "%s: the file ends at byte %llu, %zu bytes short of what its header "
                            "promised (truncated while the model was loading?)",
                            f->path, (unsigned long long)offset, n);
        p += got;
        n -= (size_t)got;
        offset += (uint64_t)got;
    }
    return VOX_OK;
}

typedef struct {
    const vox_read_plan *plan;
    const vox_read_file *files;
    const vox_read_sink *sink;
    atomic_size_t next;   /* the next span to take */
    atomic_bool failed;   /* a worker failed: the others stop at their next span */
    pthread_mutex_t mu;   /* guards err, st and the stats below */
    vox_error err;
    vox_status st;
    double read_ms, acquire_ms, first_read_at, last_read_at;
} run_state;

typedef struct {
    run_state *r;
    int id;
} worker_arg;

static void record_failure(run_state *r, vox_status st, const vox_error *e) {
    pthread_mutex_lock(&r->mu);
    if (r->st == VOX_OK) {
        r->st = st;
        r->err = *e;
    }
    pthread_mutex_unlock(&r->mu);
    atomic_store(&r->failed, true);
}

static void *worker(void *arg) {
    run_state *r = ((worker_arg *)arg)->r;
    int id = ((worker_arg *)arg)->id;
    const vox_read_sink *k = r->sink;
    vox_error e = {0};
    double read_ms = 0, acquire_ms = 0, first = 0, last = 0;
    vox_status st = k->begin ? k->begin(k->user, id, &e) : VOX_OK;
    if (st) {
        record_failure(r, st, &e);
        return NULL;
    }
    while (!st && !atomic_load(&r->failed)) {
        size_t i = atomic_fetch_add(&r->next, 1);
        if (i >= r->plan->n_spans) break;
        const vox_read_span *s = &r->plan->spans[i];
        void *buf = NULL;
        double t0 = vox_wall_ms();
        if ((st = k->acquire(k->user, id, &buf, &e))) break;
        double t1 = vox_wall_ms();
        if ((st = vox_read_exact(&r->files[s->file], buf, s->nbytes, s->offset, &e))) break;
        double t2 = vox_wall_ms();
        acquire_ms += t1 - t0;
        read_ms += t2 - t1;
        if (first == 0) first = t1;
        last = t2;
        st = k->deliver(k->user, id, buf, s, &r->plan->parts[s->first_part], &e);
    }
    if (st) record_failure(r, st, &e);
    if (k->end && (st = k->end(k->user, id, &e))) record_failure(r, st, &e);
    pthread_mutex_lock(&r->mu);
    r->read_ms += read_ms;
    r->acquire_ms += acquire_ms;
    if (first && (r->first_read_at == 0 || first < r->first_read_at)) r->first_read_at = first;
    if (last > r->last_read_at) r->last_read_at = last;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

vox_status vox_read_run(const vox_read_plan *plan, const vox_read_file *files, int n_files,
                        int n_threads, const vox_read_sink *sink, vox_read_stats *stats,
                        vox_error *err) {
    double t0 = vox_wall_ms();
    for (size_t i = 0; i < plan->n_spans; i++) VOX_ASSERT(plan->spans[i].file >= 0 && plan->spans[i].file < n_files);
    if ((size_t)n_threads > plan->n_spans) n_threads = (int)plan->n_spans;
    if (n_threads < 1) n_threads = 1;
    run_state r = {.plan = plan, .files = files, .sink = sink};
    atomic_init(&r.next, 0);
    atomic_init(&r.failed, false);
    pthread_mutex_init(&r.mu, NULL);
    worker_arg *args = calloc((size_t)n_threads, sizeof *args);
    pthread_t *threads = calloc((size_t)n_threads, sizeof *threads);
    if (!args || !threads) {
        free(args);
        free(threads);
        pthread_mutex_destroy(&r.mu);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory starting the weight readers");
    }
    /* worker 0 is this thread; a thread that cannot be started leaves its share to the others */
    int started = 1;
    for (int w = 1; w < n_threads; w++) {
        args[w] = (worker_arg){&r, w};
        if (pthread_create(&threads[w], NULL, worker, &args[w]) != 0) break;
        started++;
    }
    args[0] = (worker_arg){&r, 0};
    worker(&args[0]);
    for (int w = 1; w < started; w++) pthread_join(threads[w], NULL);
    free(args);
    free(threads);
    pthread_mutex_destroy(&r.mu);
    if (stats) {
        *stats = (vox_read_stats){.threads = started, .wall_ms = vox_wall_ms() - t0,
                                  .read_ms = r.read_ms, .acquire_ms = r.acquire_ms,
                                  .first_read_at = r.first_read_at, .last_read_at = r.last_read_at,
                                  .bytes = r.st ? 0 : plan->total_bytes};
    }
    if (r.st) {
        if (err) *err = r.err;
        return r.st;
    }
    return VOX_OK;
}
