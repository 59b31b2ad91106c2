/* Weights straight from their files to the device (cuda_upload.h). */
#ifdef VOX_HAVE_CUDA

#include "backend/cuda_upload.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

#define MAX_READERS 64

typedef struct {
    cudaStream_t stream;
    int buf[2]; /* its two staging buffers */
    int next;   /* which of the two acquire lends next */
    int cur;    /* the one lent last (deliver fills from it) */
} reader;

typedef struct {
    const vox_cuda_staging *st;
    const vox_read_plan *plan;
    reader r[MAX_READERS];
    /* per staging buffer: events around the copies it holds, and which span they are */
    cudaEvent_t *copy_start, *copy_end;
    long *span_in; /* -1: none pending */
    cudaEvent_t ref; /* time zero of the copy intervals */
    double (*copy_at)[2]; /* per span: its copies' start and end, ms after ref */
} upload_run;

static vox_status fail(vox_error *err, cudaError_t e, const char *what) {
    cudaGetLastError(); /* clear a non-sticky error */
    return vox_fail(err, VOX_ERR_DEVICE, "weight upload: %s: CUDA error %s (%s)", what,
                    cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Buffer k's copies are complete: keep their interval. */
static void note_copy(upload_run *u, int k) {
    long span = u->span_in[k];
    if (span < 0) return;
    float a = 0, b = 0;
    if (cudaEventElapsedTime(&a, u->ref, u->copy_start[k]) == cudaSuccess &&
        cudaEventElapsedTime(&b, u->ref, u->copy_end[k]) == cudaSuccess) {
        u->copy_at[span][0] = a;
        u->copy_at[span][1] = b;
    }
    u->span_in[k] = -1;
}

static vox_status on_begin(void *user, int w, vox_error *err) {
    upload_run *u = user;
    cudaError_t e = cudaSetDevice(u->st->device);
    if (!e) e = cudaStreamCreateWithFlags(&u->r[w].stream, cudaStreamNonBlocking);
    return e ? fail(err, e, "reader stream") : VOX_OK;
}

static vox_status on_acquire(void *user, int w, void **buf, vox_error *err) {
    upload_run *u = user;
    reader *r = &u->r[w];
    int k = r->buf[r->next];
    r->next ^= 1;
    cudaError_t e = cudaEventSynchronize(u->st->done[k]);
    if (e) return fail(err, e, "staging buffer");
    note_copy(u, k);
    r->cur = k;
    *buf = u->st->buffers[k];
    return VOX_OK;
}

static vox_status on_deliver(void *user, int w, void *buf, const vox_read_span *span,
                             const vox_read_part *parts, vox_error *err) {
    upload_run *u = user;
    reader *r = &u->r[w];
    int k = r->cur;
    cudaError_t e = cudaEventRecord(u->copy_start[k], r->stream);
    for (size_t i = 0; !e && i < span->n_parts; i++)
        e = cudaMemcpyAsync(parts[i].dst, (const char *)buf + parts[i].at, parts[i].nbytes,
                            cudaMemcpyHostToDevice, r->stream);
    if (!e) e = cudaEventRecord(u->copy_end[k], r->stream);
    if (!e) e = cudaEventRecord(u->st->done[k], r->stream);
    if (e) return fail(err, e, "copy");
    u->span_in[k] = (long)(span - u->plan->spans);
    return VOX_OK;
}

static vox_status on_end(void *user, int w, vox_error *err) {
    upload_run *u = user;
    reader *r = &u->r[w];
    cudaError_t e = cudaStreamSynchronize(r->stream);
    if (!e) {
        note_copy(u, r->buf[0]);
        note_copy(u, r->buf[1]);
    }
    cudaStreamDestroy(r->stream);
    return e ? fail(err, e, "copy") : VOX_OK;
}

static int cmp_start(const void *a, const void *b) {
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Length of the union of the intervals, and of its part after `from`. Sorts them. */
static void union_length(double (*iv)[2], size_t n, double from, double *total, double *after) {
    qsort(iv, n, sizeof *iv, cmp_start);
    *total = *after = 0;
    double a = 0, b = -1;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && iv[i][0] <= b) {
            if (iv[i][1] > b) b = iv[i][1];
            continue;
        }
        if (b > a) {
            *total += b - a;
            if (b > from) *after += b - (a > from ? a : from);
        }
        if (i < n) a = iv[i][0], b = iv[i][1];
    }
}

vox_status vox_cuda_upload_pieces(const vox_cuda_staging *staging, const vox_read_piece *pieces,
                                  size_t n_pieces, const vox_read_file *files, int n_files,
                                  int threads, size_t span_bytes, vox_load_stats *stats,
                                  vox_error *err) {
    double t0 = vox_wall_ms();
    if (threads > staging->n_buffers / 2) threads = staging->n_buffers / 2;
    if (threads > MAX_READERS) threads = MAX_READERS;
    if (threads < 1) threads = 1;
    if (span_bytes > staging->buffer_bytes || span_bytes == 0) span_bytes = staging->buffer_bytes;
    vox_read_plan plan;
    vox_status st = vox_read_plan_build(pieces, n_pieces, span_bytes, &plan, err);
    if (st) return st;
    int nb = staging->n_buffers;
    upload_run u = {.st = staging, .plan = &plan};
    u.copy_start = calloc((size_t)nb, sizeof *u.copy_start);
    u.copy_end = calloc((size_t)nb, sizeof *u.copy_end);
    u.span_in = malloc((size_t)nb * sizeof *u.span_in);
    u.copy_at = calloc(plan.n_spans ? plan.n_spans : 1, sizeof *u.copy_at);
    cudaError_t e = cudaSuccess;
    if (!u.copy_start || !u.copy_end || !u.span_in || !u.copy_at) {
        st = vox_fail(err, VOX_ERR_NOMEM, "out of memory for the weight upload");
        goto done;
    }
    for (int k = 0; k < nb; k++) {
        u.span_in[k] = -1;
        if (!e) e = cudaEventCreate(&u.copy_start[k]);
        if (!e) e = cudaEventCreate(&u.copy_end[k]);
    }
    if (!e) e = cudaEventCreate(&u.ref);
    /* time zero: recorded on the legacy stream, which has nothing else to do here */
    if (!e) e = cudaEventRecord(u.ref, 0);
    if (!e) e = cudaEventSynchronize(u.ref);
    if (e) {
        st = fail(err, e, "events");
        goto done;
    }
    double ref_at = vox_wall_ms();
    for (int w = 0; w < threads; w++) u.r[w] = (reader){.buf = {2 * w, 2 * w + 1}};
    vox_read_sink sink = {.user = &u, .begin = on_begin, .acquire = on_acquire,
                          .deliver = on_deliver, .end = on_end};
    vox_read_stats rs;
    st = vox_read_run(&plan, files, n_files, threads, &sink, &rs, err);
    if (!st) {
        double busy = 0, after = 0;
        union_length(u.copy_at, plan.n_spans, rs.last_read_at - ref_at, &busy, &after);
        stats->threads = rs.threads;
        stats->read_ms = rs.read_ms / rs.threads;
        stats->buffer_wait_ms = rs.acquire_ms / rs.threads;
        stats->upload_ms = busy;
        stats->upload_after_reads_ms = after;
        stats->bytes = (double)rs.bytes;
    }
done:
    for (int k = 0; k < nb && u.copy_start; k++) {
        if (u.copy_start[k]) cudaEventDestroy(u.copy_start[k]);
        if (u.copy_end && u.copy_end[k]) cudaEventDestroy(u.copy_end[k]);
    }
    if (u.ref) cudaEventDestroy(u.ref);
    free(u.copy_start);
    free(u.copy_end);
    free(u.span_in);
    free(u.copy_at);
    vox_read_plan_free(&plan);
    stats->bulk_ms = vox_wall_ms() - t0;
    return st;
}

#endif /* VOX_HAVE_CUDA */
