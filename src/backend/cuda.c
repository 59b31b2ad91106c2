/* The CUDA backend: BF16 weights and activations, fp32 accumulation, everything on one stream.
 *
 * Memory comes from a stream-ordered pool (cudaMallocFromPoolAsync / cudaFreeAsync on the
 * compute stream) whose release threshold keeps freed memory reserved, so that steady-state
 * allocation costs no driver call and no synchronisation. VOX_CUDA_PLAIN_MALLOC=1 makes every
 * tensor a plain cudaMalloc/cudaFree instead, so compute-sanitizer sees out-of-bounds accesses
 * that would land inside a larger pool block.
 *
 * GEMMs go to cuBLASLt (bias fused in the epilogue, rounded once, as torch's addmm); every other
 * operation is a kernel from kernels/. F8_E4M3 weights (the text decoder's linear layers under
 * the fp8_dynamic scheme, common/fp8.h) stay FP8 on the device with their row scales: decode
 * projections run kernels/fp8_matvec.cu, other GEMMs quantize their input rows
 * (kernels/fp8.cu) and run cuBLASLt's FP8 GEMM with the scales as outer vectors, or apply the
 * scales in a kernel after it where this cuBLASLt has no outer-vector scaling (sm_89). Compute operations cannot fail synchronously: launch
 * errors, cuBLASLt refusals (with their status) and asynchronous faults surface at the next
 * sync() with an operation named: the one that failed to start, or for a fault inside a kernel
 * the last kernel, GEMM or graph enqueued before the sync. */
#ifdef VOX_HAVE_CUDA

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/cublaslt_loader.h"
#include "backend/cublaslt_setup.h"
#include "backend/cuda_initcheck.h"
#include "backend/cuda_upload.h"
#include "common/clock.h"
#include "common/env.h"
#include "common/fp8.h"
#include "kernels.h"
#include "mel/mel.h"

#define CUDA_MAX_MARKS 512
/* Pinned host staging: one allocation cut into buffers. upload_staged double-buffers through the
 * first two; loading weights gives each reader thread two (so at most STAGING_BUFFERS / 2
 * readers). 8 MiB a copy is past the size where a host-to-device copy reaches full speed; 128
 * MiB in all is what two 64 MiB buffers took before, and pinning more costs load time. */
#define STAGING_BUFFERS 16
#define STAGING_BYTES (8u << 20)
#define GEMM_WORKSPACE_BYTES (32u << 20)
#define GEMM_NO_SPLIT_FROM 48 /* cuda_state.no_split_from */
#define GEMM_NO_SPLIT_ROWS 128 /* cuda_state.no_split_rows */
#define GEMM_CACHE_SIZE 256

typedef struct {
    int64_t m, n, k;
    int tag; /* 0/1: bf16 without/with bias, 2: bf16 in f32 out, 3: all f32 (see lt_matmul) */
    int valid;
    cublasLtMatmulAlgo_t algo;
} gemm_plan;

/* How FP8 GEMMs apply the row scales on this device (decided once, at the first FP8 weight). */
typedef enum { FP8_GEMM_UNKNOWN, FP8_GEMM_OUTER_VEC, FP8_GEMM_EPILOGUE } fp8_gemm_mode;

typedef struct {
    int device;
    char name[32];
    char product[256];       /* cudaDeviceProp.name */
    char gpu[320];          /* the device's name and compute capability, for messages */
    int cc;                 /* compute capability, major * 10 + minor */
    fp8_gemm_mode fp8_gemm;
    /* FP8 GEMMs of at most this many rows run as plain FP8 products (float32 out) whose scales the
     * consumer applies (FP8_PLAIN_ROWS; 0 where the plain product failed the probe) */
    int64_t fp8_plain_rows;
    bool fp8_separate;      /* VOX_FP8_SEPARATE=1: FP8 projections of > 4 rows op by op */
    bool fp8_choose_pending; /* FP8 weights met while loading: fp8_choose_gemm in weights_end */
    cudaStream_t stream;
    cudaMemPool_t pool;
    bool plain_malloc;
    cublasLtHandle_t lt;
    /* cuBLASLt loads and starts on a thread of its own while the weights load (blas_ready) */
    pthread_t blas_thread;
    bool blas_pending; /* started, not joined */
    vox_status blas_st;
    vox_error blas_err;
    vox_load_stats *load; /* the backend's */
    void *gemm_ws;
    size_t gemm_ws_bytes; /* GEMM_WORKSPACE_BYTES, or VOX_GEMM_WORKSPACE (sanitizer runs: 0) */
    /* bf16 GEMMs of no_split_from..no_split_rows rows prefer an algorithm without split-K (no
     * partial sums, no separate reduction kernel): VOX_GEMM_NO_SPLIT_FROM=N (48) and
     * VOX_GEMM_NO_SPLIT_ROWS=N (128; 0 turns it off). Measured per decoder shape at every 8
     * rows from 16 to 256 (bench/NOTES-2026-12-03b.md): the unsplit choice for o and down is
     * 1-3 us faster a layer from 40 to 128 rows, even or slower above, and below 40 rows it
     * can be ten times slower; gemm_plan_for also refuses an unsplit algorithm that fills
     * fewer SMs than the split one (the heuristic's fallback, e.g. down at 72 rows). */
    int64_t no_split_from, no_split_rows;
    gemm_plan plans[GEMM_CACHE_SIZE];
    /* what gemm_plan_for did: found a plan, made one, or found the cache full (cuBLASLt then
     * chooses at each call); printed at teardown with VOX_GEMM_STATS=1 */
    long plans_found, plans_made, plans_full;
    size_t live, peak;
    cudaEvent_t marks[CUDA_MAX_MARKS];
    int n_marks;
    /* pinned host staging for uploads, and its reuse guards */
    char *staging_block;
    char *staging[STAGING_BUFFERS];
    cudaEvent_t staging_done[STAGING_BUFFERS];
    int staging_next;
    /* loading weights (weights_begin .. weights_end): copies of file bytes deferred to readers */
    int load_threads;         /* VOX_LOAD_THREADS; 0: weight() uploads each weight itself */
    size_t load_span;         /* VOX_LOAD_CHUNK_BYTES: bytes a read (tests make it small) */
    bool deferring;
    const vox_weight_file *load_files;
    int n_load_files;
    vox_read_piece *pieces;
    size_t n_pieces, cap_pieces;
    /* small pinned host buffers for ids and the logits result */
    int32_t *ids_host;
    size_t ids_cap;
    cudaEvent_t ids_done;
    vox_k_logits_result *logits_host;
    /* device scratch: prompt ids, logits reduction */
    int32_t *ids_dev;
    size_t ids_dev_cap;
    vox_k_logits_result *logits_dev; /* [logits_cap] */
    int logits_cap;
    void *logits_ws;
    size_t logits_ws_bytes;
    /* the current batch: a host copy, and its arrays on the device at fixed addresses (so that a
     * recorded step replays with whatever batch_set copied last), staged through pinned memory */
    vox_batch batch;
    int32_t *batch_host, *batch_pinned, *batch_dev;
    size_t batch_ints;       /* capacity of each of the three */
    int batch_rows, batch_seqs, batch_table; /* capacity: rows, sequences, table entries */
    int32_t *b_ids, *b_pos, *b_slot, *b_row0, *b_len, *b_tables, *b_lrows, *b_chosen; /* in batch_dev */
    cudaEvent_t batch_done;  /* the last batch copy has left the pinned buffer */
    /* decode attention: split partials and counters, one region per decode batch size (a
     * launch's layout depends on its batch, and its counters must stay zero between launches of
     * that size, so sizes never share a region); attn_ws_at[b] is batch b's offset, or -1 */
    void *attn_ws;
    size_t attn_ws_bytes;
    int64_t *attn_ws_at;
    int attn_ws_batches;
    int64_t attn_ws_max_kv;
    int attn_ws_heads, attn_ws_dim;
    float *mel_basis, *mel_window, *mel_filters; /* DFT basis [402, 400], Hann [400], [128, 201] */
    bool capturing;          /* recording a graph */
    bool no_matvec;          /* VOX_NO_MATVEC=1: projections as separate operations */
    /* the persistent decode kernel's workspace (kernels/pdecode.cu) */
    bool no_pdecode;         /* VOX_DECODE=graph: decode steps op by op */
    int pdecode_rows;        /* decode-only steps of at most this many rows take the kernel */
    void *pdecode_ws;
    size_t pdecode_ws_bytes;
    int pdecode_inflight;    /* its weight pages in flight a block (0: the kernel's default) */
    bool pdecode_tune_pending; /* VOX_PDECODE_TUNE: time the caps at the next step (pdecode_tune) */
    bool pdecode_tune_report; /* VOX_PDECODE_TUNE=report: and print what was timed */
    /* GEMMs of 5..64 rows (bf16 or FP8 weights) on kernels/skinny_gemm.cu instead of cuBLASLt
     * (VOX_SKINNY_GEMM=1) */
    bool skinny;
    void *skinny_ws;
    size_t skinny_ws_bytes;
    cudaError_t first_error; /* first failure seen by an operation that cannot return it */
    cublasStatus_t first_error_blas; /* its cuBLASLt status, when cuBLASLt refused (else 0) */
    char first_error_where[64];
    const char *last_op; /* the last kernel, GEMM or graph enqueued (a literal), for faults */
    /* VOX_TRACE_HOST_MS=N: every operation whose host call returned N ms or more after the
     * previous one's is printed (host_trace): where the host, not the device, holds a stage */
    double host_trace_ms, host_last_ms;
} cuda_state;

static cuda_state *S(vox_backend *be) { return be->impl; }

static void host_trace(cuda_state *s, const char *what) {
    if (s->host_trace_ms <= 0) return;
    double now = vox_wall_ms();
    if (now - s->host_last_ms >= s->host_trace_ms)
        fprintf(stderr, "%s: host: %.2f ms up to %s\n", s->name, now - s->host_last_ms, what);
    s->host_last_ms = now;
}

static void note_error(cuda_state *s, cudaError_t e, const char *where) {
    host_trace(s, where);
    if (e != cudaSuccess && s->first_error == cudaSuccess) {
        s->first_error = e;
        s->first_error_blas = CUBLAS_STATUS_SUCCESS;
        snprintf(s->first_error_where, sizeof s->first_error_where, "%s", where);
    }
}

/* After each launch: a bad configuration is reported at the next sync with the op's name, and
 * a fault inside a kernel with the name of the last one enqueued before that sync. */
#define LAUNCHED(s, what) ((s)->last_op = (what), note_error((s), cudaGetLastError(), (what)))

static vox_status cuda_fail(vox_error *err, cudaError_t e, const char *what) {
    return vox_fail(err, VOX_ERR_DEVICE, "%s: CUDA error %s (%s)", what, cudaGetErrorName(e),
                    cudaGetErrorString(e));
}

/* The failure an operation noted (first_error), as the error of `what` (the device, and what
 * ran), and cleared. */
static vox_status pending_fail(cuda_state *s, vox_error *err, const char *what) {
    char where[192];
    snprintf(where, sizeof where, "%s (%s)", what, s->first_error_where);
    cudaError_t e = s->first_error;
    cublasStatus_t blas = s->first_error_blas;
    s->first_error = cudaSuccess;
    s->first_error_blas = CUBLAS_STATUS_SUCCESS;
    if (blas != CUBLAS_STATUS_SUCCESS)
        return vox_fail(err, VOX_ERR_DEVICE, "%s: cuBLASLt error %s", where,
                        vox_cublas_status_name(blas));
    return cuda_fail(err, e, where);
}

/* ---- cuBLASLt: loaded and started beside the weights --------------------------------------- */

static void *blas_start(void *arg) {
    cuda_state *s = arg;
    double t0 = vox_wall_ms();
    cudaError_t e = cudaSetDevice(s->device);
    if (e) s->blas_st = cuda_fail(&s->blas_err, e, s->name);
    else s->blas_st = vox_cublaslt_load(&s->blas_err);
    if (!s->blas_st && cublasLtCreate(&s->lt) != CUBLAS_STATUS_SUCCESS)
        s->blas_st = vox_fail(&s->blas_err, VOX_ERR_DEVICE, "%s: cannot initialise cuBLASLt", s->name);
    s->load->blas_ms = vox_wall_ms() - t0; /* read after the join */
    return NULL;
}

/* Waits for the cuBLASLt thread (once); its failure, if any. err may be NULL. */
static vox_status blas_ready(cuda_state *s, vox_error *err) {
    if (s->blas_pending) {
        double t0 = vox_wall_ms();
        pthread_join(s->blas_thread, NULL);
        s->blas_pending = false;
        s->load->blas_wait_ms += vox_wall_ms() - t0;
    }
    if (s->blas_st && err) *err = s->blas_err;
    return s->blas_st;
}

int vox_cuda_device_count(void);
int vox_cuda_device_count(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

bool vox_cuda_device_count_positive(void);
bool vox_cuda_device_count_positive(void) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/* ---- memory ---------------------------------------------------------------------------------- */

static vox_status dev_alloc(cuda_state *s, void **p, size_t bytes, vox_error *err) {
    cudaError_t e = s->plain_malloc ? cudaMalloc(p, bytes ? bytes : 1)
                                    : cudaMallocFromPoolAsync(p, bytes ? bytes : 1, s->pool, s->stream);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the non-sticky allocation error */
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        return vox_fail(err, VOX_ERR_DEVICE,
                        "%s: cannot allocate %.1f MiB of device memory (%s; %.1f MiB live in the "
                        "pool, %.1f of %.1f MiB free on the device)", s->name,
                        bytes / 1048576.0, cudaGetErrorString(e), s->live / 1048576.0,
                        free_b / 1048576.0, total_b / 1048576.0);
    }
    s->live += bytes;
    if (s->live > s->peak) s->peak = s->live;
    host_trace(s, "device memory allocation");
    return VOX_OK;
}

static void dev_free(cuda_state *s, void *p, size_t bytes) {
    if (!p) return;
    note_error(s, s->plain_malloc ? cudaFree(p) : cudaFreeAsync(p, s->stream), "free");
    s->live -= bytes;
}

static vox_status cu_alloc(vox_backend *be, vox_tensor *t, vox_error *err) {
    return dev_alloc(S(be), &t->data, vox_tensor_nbytes(t), err);
}

static void cu_free(vox_backend *be, vox_tensor *t) {
    dev_free(S(be), t->data, vox_tensor_nbytes(t));
    t->data = NULL;
}

/* Copies n bytes of host data to the device through the pinned staging buffers; convert()
 * fills a staging buffer from the source (a memcpy, or a dtype conversion). */
typedef void (*stage_fn)(void *dst, const void *src, size_t first_elem, size_t n_elems);

static void stage_copy(void *dst, const void *src, size_t first, size_t n) {
    memcpy(dst, (const char *)src + first * 2, n * 2);
}
static void stage_f32_to_bf16(void *dst, const void *src, size_t first, size_t n) {
    const float *f = (const float *)src + first;
    uint16_t *o = dst;
    for (size_t i = 0; i < n; i++) o[i] = vox_f32_to_bf16(f[i]);
}
static void stage_f16_to_bf16(void *dst, const void *src, size_t first, size_t n) {
    const uint16_t *h = (const uint16_t *)src + first;
    uint16_t *o = dst;
    for (size_t i = 0; i < n; i++) o[i] = vox_f32_to_bf16(vox_f16_to_f32(h[i]));
}
static void stage_copy_f32(void *dst, const void *src, size_t first, size_t n) {
    memcpy(dst, (const float *)src + first, n * 4);
}
static void stage_copy_u8(void *dst, const void *src, size_t first, size_t n) {
    memcpy(dst, (const uint8_t *)src + first, n);
}

static vox_status upload_staged(cuda_state *s, void *dst, const void *src, size_t n_elems,
                                size_t out_elem_size, stage_fn fill, vox_error *err) {
    size_t per_chunk = STAGING_BYTES / out_elem_size;
    for (size_t first = 0; first < n_elems; first += per_chunk) {
        size_t n = n_elems - first < per_chunk ? n_elems - first : per_chunk;
        int b = s->staging_next;
        s->staging_next ^= 1;
        cudaError_t e = cudaEventSynchronize(s->staging_done[b]); /* buffer b free again */
        if (e) return cuda_fail(err, e, "weight upload");
        fill(s->staging[b], src, first, n);
        e = cudaMemcpyAsync((char *)dst + first * out_elem_size, s->staging[b], n * out_elem_size,
                            cudaMemcpyHostToDevice, s->stream);
        if (e) return cuda_fail(err, e, "weight upload");
        cudaEventRecord(s->staging_done[b], s->stream);
    }
    return VOX_OK;
}

/* ---- loading many weights: reads on several threads (cuda_upload.h) ------------------------- */

static void cu_weights_begin(vox_backend *be, const vox_weight_file *files, int n_files) {
    cuda_state *s = S(be);
    s->deferring = s->load_threads > 0;
    s->load_files = files;
    s->n_load_files = n_files;
    s->n_pieces = 0;
}

/* Remembers that src's n bytes go to dst, when src lies in one of the files; false when it does
 * not (or no load is under way, or memory is short): the caller uploads it now. */
static bool defer_copy(cuda_state *s, void *dst, const void *src, size_t n) {
    if (!s->deferring) return false;
    uintptr_t p = (uintptr_t)src;
    for (int f = 0; f < s->n_load_files; f++) {
        const vox_weight_file *w = &s->load_files[f];
        uintptr_t base = (uintptr_t)w->map;
        if (p < base || p - base > w->size || n > w->size - (p - base)) continue;
        if (s->n_pieces == s->cap_pieces) {
            size_t cap = s->cap_pieces ? 2 * s->cap_pieces : 1024;
            vox_read_piece *grown = realloc(s->pieces, cap * sizeof *grown);
            if (!grown) return false;
            s->pieces = grown;
            s->cap_pieces = cap;
        }
        s->pieces[s->n_pieces++] = (vox_read_piece){.file = f, .offset = p - base, .nbytes = n, .dst = dst};
        return true;
    }
    return false;
}
static vox_status fp8_weight(cuda_state *s, vox_tensor *dst, const void *src, const float *scale,
                             vox_error *err);
static vox_status fp8_choose_gemm(cuda_state *s, vox_error *err);

static vox_status cu_weight(vox_backend *be, vox_tensor *dst, const void *src, vox_dtype type,
                            int ndim, const int64_t *shape, bool keep_f32, const float *scale,
                            vox_error *err) {
    cuda_state *s = S(be);
    memset(dst, 0, sizeof *dst);
    dst->ndim = ndim;
    for (int i = 0; i < ndim; i++) dst->shape[i] = shape[i];
    if (type == VOX_DTYPE_F8_E4M3) return fp8_weight(s, dst, src, scale, err);
    stage_fn fill;
    if (keep_f32) {
        if (type != VOX_DTYPE_F32)
            return vox_fail(err, VOX_ERR_FORMAT, "expected an F32 table, got %s", vox_dtype_name(type));
        dst->dtype = VOX_DTYPE_F32;
        fill = stage_copy_f32;
    } else {
        dst->dtype = VOX_DTYPE_BF16;
        fill = type == VOX_DTYPE_BF16  ? stage_copy
               : type == VOX_DTYPE_F32 ? stage_f32_to_bf16
               : type == VOX_DTYPE_F16 ? stage_f16_to_bf16
                                       : NULL;
        if (!fill)
            return vox_fail(err, VOX_ERR_UNSUPPORTED, "weights of type %s are not supported",
                            vox_dtype_name(type));
    }
    double t0 = vox_wall_ms();
    vox_status st = dev_alloc(s, &dst->data, vox_tensor_nbytes(dst), err);
    double t1 = vox_wall_ms();
    be->load.alloc_ms += t1 - t0;
    if (st) return st;
    /* the file's bytes are the weight's bytes: a reader thread copies them in weights_end */
    if (dst->dtype == type && defer_copy(s, dst->data, src, vox_tensor_nbytes(dst))) return VOX_OK;
    st = upload_staged(s, dst->data, src, vox_tensor_numel(dst), vox_dtype_size(dst->dtype), fill, err);
    be->load.serial_ms += vox_wall_ms() - t1;
    return st;
}

/* Makes the deferred copies: every reader thread reads spans of the files into its two staging
 * buffers and uploads them on its own stream. */
static vox_status cu_weights_end(vox_backend *be, bool copy, vox_error *err) {
    cuda_state *s = S(be);
    size_t n = s->n_pieces;
    bool choose_fp8 = s->fp8_choose_pending;
    s->deferring = s->fp8_choose_pending = false;
    s->n_pieces = 0;
    if (!copy) return VOX_OK;
    vox_status st = VOX_OK;
    if (n > 0) {
        /* the readers' streams may use the weights once their pool allocations (and the
         * converted weights' uploads) are done on this stream */
        cudaError_t e = cudaStreamSynchronize(s->stream);
        if (e) return cuda_fail(err, e, "weight upload");
        vox_read_file files[8];
        VOX_ASSERT(s->n_load_files <= 8);
        for (int f = 0; f < s->n_load_files; f++)
            files[f] = (vox_read_file){.fd = s->load_files[f].fd, .path = s->load_files[f].path};
        vox_cuda_staging staging = {.device = s->device, .buffers = s->staging,
                                    .done = s->staging_done, .n_buffers = STAGING_BUFFERS,
                                    .buffer_bytes = STAGING_BYTES};
        st = vox_cuda_upload_pieces(&staging, s->pieces, n, files, s->n_load_files,
                                    s->load_threads, s->load_span, &be->load, err);
    }
    /* cuBLASLt has loaded beside the weights: a failure to load it fails the model's load */
    if (!st) st = blas_ready(s, err);
    if (!st && choose_fp8 && s->fp8_gemm == FP8_GEMM_UNKNOWN) st = fp8_choose_gemm(s, err);
    return st;
}

static void cu_free_weight(vox_backend *be, vox_tensor *t) {
    if (t->scale) dev_free(S(be), t->scale, (size_t)t->shape[0] * sizeof(float));
    t->scale = NULL;
    cu_free(be, t);
}

static void cu_upload_f32(vox_backend *be, vox_tensor *t, const float *src, size_t n) {
    cuda_state *s = S(be);
    VOX_ASSERT(n <= vox_tensor_numel(t));
    if (t->dtype == VOX_DTYPE_F32) {
        vox_error err;
        if (upload_staged(s, t->data, src, n, 4, stage_copy_f32, &err))
            note_error(s, cudaErrorUnknown, "upload");
        return;
    }
    VOX_ASSERT(t->dtype == VOX_DTYPE_BF16);
    /* Round on the host (same rounding as the kernel would) and stage the halves. */
    vox_error err;
    if (upload_staged(s, t->data, src, n, 2, stage_f32_to_bf16, &err))
        note_error(s, cudaErrorUnknown, "upload");
}

static vox_status cu_sync(vox_backend *be, vox_error *err) {
    cuda_state *s = S(be);
    const char *call = "cudaStreamSynchronize";
    cudaError_t e = cudaStreamSynchronize(s->stream);
    if (e == cudaSuccess && (e = cudaGetLastError()) != cudaSuccess) call = "cudaGetLastError";
    if (s->first_error != cudaSuccess) return pending_fail(s, err, s->name);
    if (e != cudaSuccess) {
        /* an asynchronous fault: it happened in the last operation enqueued or one before it
         * (CUDA_LAUNCH_BLOCKING=1 makes them one) */
        char what[160];
        snprintf(what, sizeof what, "%s: %s (last operation enqueued: %s)", s->name, call,
                 s->last_op ? s->last_op : "none");
        return cuda_fail(err, e, what);
    }
    return VOX_OK;
}

static vox_status cu_download_f32(vox_backend *be, float *dst, const vox_tensor *t, size_t n,
                                  vox_error *err) {
    cuda_state *s = S(be);
    VOX_ASSERT(n <= vox_tensor_numel(t));
    if (t->dtype == VOX_DTYPE_F32) {
        cudaError_t e = cudaMemcpyAsync(dst, t->data, n * 4, cudaMemcpyDeviceToHost, s->stream);
        if (e) return cuda_fail(err, e, "download");
        return cu_sync(be, err);
    }
    VOX_ASSERT(t->dtype == VOX_DTYPE_BF16);
    void *tmp;
    vox_status st = dev_alloc(s, &tmp, n * 4, err);
    if (st) return st;
    vox_k_bf16_to_f32(tmp, t->data, (int64_t)n, s->stream);
    LAUNCHED(s, "bf16_to_f32");
    cudaError_t e = cudaMemcpyAsync(dst, tmp, n * 4, cudaMemcpyDeviceToHost, s->stream);
    dev_free(s, tmp, n * 4);
    if (e) return cuda_fail(err, e, "download");
    return cu_sync(be, err);
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

/* y[M,N] = x[M,K] @ w[N,K]^T (+ bias): in cuBLAS's column-major view, Y'[N,M] = W'^T X' with
 * W' = w as [K,N] (transposed), X' = x as [K,M]. The bias runs along N, the rows of Y'. */
static gemm_plan *gemm_plan_for(cuda_state *s, int64_t M, int64_t N, int64_t K, int tag,
                                bool split_ok, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c) {
    uint64_t h = (uint64_t)M * 0x9E3779B97F4A7C15ull ^ (uint64_t)N * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)K * 0x165667B19E3779F9ull ^ (uint64_t)tag;
    for (int probe = 0; probe < GEMM_CACHE_SIZE; probe++) {
        gemm_plan *p = &s->plans[(h + (uint64_t)probe) % GEMM_CACHE_SIZE];
        if (p->valid && p->m == M && p->n == N && p->k == K && p->tag == tag) {
            s->plans_found++;
            return p;
        }
        if (!p->valid) {
            /* the heuristic's first choice: [0] without split-K (where asked), [1] with any
             * algorithm the preference allows. The unsplit one is taken unless it fills fewer
             * SMs than the other: at shapes it has no good unsplit tile for, the heuristic
             * falls back to a tile that leaves most SMs idle (0.09-0.18 waves, 5-10x slower;
             * bench/NOTES-2026-12-03b.md) */
            cublasLtMatmulHeuristicResult_t res[2];
            int found[2] = {0, 0};
            for (int split = split_ok; split <= 1; split++) {
                cublasLtMatmulPreference_t pref = vox_lt_preference(s->gemm_ws_bytes, split);
                if (cublasLtMatmulAlgoGetHeuristic(s->lt, desc, a, b, c, c, pref, 1, &res[split],
                                                   &found[split]) != CUBLAS_STATUS_SUCCESS)
                    found[split] = 0;
                cublasLtMatmulPreferenceDestroy(pref);
            }
            const cublasLtMatmulHeuristicResult_t *result =
                found[0] && (!found[1] || res[0].wavesCount >= res[1].wavesCount) ? &res[0]
                : found[1]                                                          ? &res[1]
                                                                                    : NULL;
            if (!result) return NULL;
            p->m = M, p->n = N, p->k = K, p->tag = tag;
            p->algo = result->algo;
            p->valid = 1;
            s->plans_made++;
            return p;
        }
    }
    s->plans_full++;
    return NULL; /* cache full: let cuBLASLt choose each time */
}

/* Y'[N,M] = W'^T X' (+ Y' when accumulate) through cuBLASLt: ab/c are the element types of the
 * inputs and the output, bias (bf16) is fused in the epilogue when given. `tag` keeps plans of
 * different types apart. Accumulating (beta = 1, C = D = y) forms product + bias + y in fp32 and
 * rounds once. With w_scale and x_scale (FP8 inputs), each product element (n, m) is multiplied
 * by w_scale[n] * x_scale[m] (outer-vector scaling). Returns cuBLASLt's status (also noted as an
 * error). */
static cublasStatus_t lt_matmul_scaled(cuda_state *s, cudaDataType_t ab, cudaDataType_t c,
                                       int64_t M, int64_t N, int64_t K, const void *w,
                                       const void *x, void *y, const void *bias, int tag,
                                       bool accumulate, const float *w_scale,
                                       const float *x_scale) {
    if (blas_ready(s, NULL)) { /* a model load reports why (weights_end) */
        note_error(s, cudaErrorSharedObjectInitFailed, "cuBLASLt");
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    cublasLtMatmulDesc_t desc = vox_lt_product_desc(w_scale, x_scale);
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    if (bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = CUDA_R_16BF;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
    }
    cublasLtMatrixLayoutCreate(&la, ab, (uint64_t)K, (uint64_t)N, K);
    cublasLtMatrixLayoutCreate(&lb, ab, (uint64_t)K, (uint64_t)M, K);
    cublasLtMatrixLayoutCreate(&lc, c, (uint64_t)N, (uint64_t)M, N);
    const bool split_ok = ab != CUDA_R_16BF || M < s->no_split_from || M > s->no_split_rows;
    gemm_plan *plan = gemm_plan_for(s, M, N, K, tag | (accumulate ? 16 : 0), split_ok, desc, la, lb, lc);
    float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasLtMatmul(s->lt, desc, &one, w, la, x, lb, accumulate ? &one : &zero,
                                       y, lc, y, lc,
                                       plan ? &plan->algo : NULL, s->gemm_ws, s->gemm_ws_bytes,
                                       s->stream);
    s->last_op = "cublasLtMatmul";
    host_trace(s, "cublasLtMatmul");
    if (st == CUBLAS_STATUS_SUCCESS) /* the output [M, N] of c, for initcheck */
        vox_initcheck_mark(s->stream, y, (size_t)M * (size_t)N * (c == CUDA_R_32F ? 4 : 2));
    if (st != CUBLAS_STATUS_SUCCESS && s->first_error == cudaSuccess) {
        s->first_error = cudaErrorUnknown; /* marks the failure pending; the status says what */
        s->first_error_blas = st;
        snprintf(s->first_error_where, sizeof s->first_error_where,
                 "cublasLtMatmul %lld x %lld x %lld", (long long)M, (long long)N, (long long)K);
    }
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
    return st;
}

static void lt_matmul(cuda_state *s, cudaDataType_t ab, cudaDataType_t c, int64_t M, int64_t N,
                      int64_t K, const void *w, const void *x, void *y, const void *bias, int tag,
                      bool accumulate) {
    lt_matmul_scaled(s, ab, c, M, N, K, w, x, y, bias, tag, accumulate, NULL, NULL);
}

static void fp8_matmul(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w);

/* A kernel's workspace of at least `need` bytes, zeroed (kernels that keep counters in it leave
 * them zero after each launch): made on the first call outside a graph recording (a bucket's
 * first step runs unrecorded), and grown, outside a recording, when a larger shape needs more.
 * False when there is none (recording, or out of memory: not sticky, the caller's other path
 * goes on). */
static bool zeroed_workspace(cuda_state *s, void **ws, size_t *bytes, size_t need) {
    if (*ws && *bytes >= need) return true;
    if (s->capturing) return false;
    cudaStreamSynchronize(s->stream); /* nothing in flight uses the old one */
    cudaFree(*ws);
    *ws = NULL, *bytes = 0;
    cudaError_t e;
    if ((e = cudaMalloc(ws, need)) || (e = cudaMemset(*ws, 0, need))) {
        cudaGetLastError();
        cudaFree(*ws);
        *ws = NULL;
        return false;
    }
    *bytes = need;
    return true;
}

/* Whether the few-row GEMM (kernels/skinny_gemm.cu) is switched on and takes M rows of w:
 * M = 5..64 (four rows or fewer are the matvec kernel's), bf16 or FP8 weights; its workspace is
 * made at the first call. */
#define SKINNY_MIN_M 5
static bool skinny_takes(cuda_state *s, int64_t M, const vox_tensor *w) {
    if (!s->skinny || M < SKINNY_MIN_M || M > VOX_K_SKINNY_MAX_M) return false;
    if (w->dtype != VOX_DTYPE_F8_E4M3 && w->dtype != VOX_DTYPE_BF16) return false;
    /* one size serves every call on this device: asked once, when the workspace is made */
    return s->skinny_ws || zeroed_workspace(s, &s->skinny_ws, &s->skinny_ws_bytes,
                                            vox_k_skinny_gemm_workspace_bytes());
}

/* y [M, N] = x @ w^T (+ y when accumulate) on the few-row GEMM, where skinny_takes: x bf16 for
 * bf16 weights, E4M3 codes with their row scales x_scale for FP8 ones. False when not taken
 * (nothing then written to y). */
static bool skinny_gemm(cuda_state *s, int64_t M, const vox_tensor *w, const void *x,
                        const float *x_scale, void *y, bool accumulate) {
    const int64_t N = w->shape[0], K = (int64_t)(vox_tensor_numel(w) / (size_t)N);
    vox_k_skinny_args a = {.y = y, .x = x, .w = w->data, .m = (int)M, .n = N, .k = K,
                           .accumulate = accumulate, .workspace = s->skinny_ws,
                           .workspace_bytes = s->skinny_ws_bytes};
    if (w->dtype == VOX_DTYPE_F8_E4M3) a.x_scale = x_scale, a.w_scale = w->scale;
    const bool taken = vox_k_skinny_gemm(&a, s->stream);
    if (taken) LAUNCHED(s, "skinny_gemm");
    return taken;
}

static void cu_matmul(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                      const vox_tensor *bias) {
    cuda_state *s = S(be);
    if (w->dtype == VOX_DTYPE_F8_E4M3) {
        VOX_ASSERT(!bias); /* the scheme's layers have none */
        fp8_matmul(be, y, x, w);
        return;
    }
    if (!bias && x->shape[0] > 0 && skinny_takes(s, x->shape[0], w) &&
        skinny_gemm(s, x->shape[0], w, x->data, NULL, y->data, false))
        return;
    int64_t M = x->shape[0], K = (int64_t)(vox_tensor_numel(x) / (size_t)M), N = w->shape[0];
    VOX_ASSERT(x->dtype == VOX_DTYPE_BF16 && w->dtype == VOX_DTYPE_BF16 && y->dtype == VOX_DTYPE_BF16);
    VOX_ASSERT((int64_t)(vox_tensor_numel(w) / (size_t)N) == K);
    VOX_ASSERT(vox_tensor_numel(y) == (size_t)(M * N));
    if (bias) VOX_ASSERT(bias->dtype == VOX_DTYPE_BF16 && (int64_t)vox_tensor_numel(bias) == N);
    if (M == 0) return;
    /* cuBLASLt honours the bias epilogue with one rounding only on aligned shapes; elsewhere it
     * was measured rounding the product, then the sum. Those shapes (none in the model) get a
     * float32 product and one rounding after the bias in a kernel. */
    if (K % 8 == 0 && N % 8 == 0) {
        lt_matmul(s, CUDA_R_16BF, CUDA_R_16BF, M, N, K, w->data, x->data, y->data,
                  bias ? bias->data : NULL, bias ? 1 : 0, false);
        return;
    }
    void *acc = NULL;
    vox_error err;
    if (dev_alloc(s, &acc, (size_t)(M * N) * sizeof(float), &err)) {
        note_error(s, cudaErrorMemoryAllocation, "matmul accumulator");
        return;
    }
    lt_matmul(s, CUDA_R_16BF, CUDA_R_32F, M, N, K, w->data, x->data, acc, NULL, 2, false);
    vox_k_add_bias_round(y->data, acc, bias ? bias->data : NULL, M, N, s->stream);
    LAUNCHED(s, "add_bias_round");
    dev_free(s, acc, (size_t)(M * N) * sizeof(float));
}

/* ---- FP8 GEMM (the fp8_dynamic scheme; decode projections are in cu_projection) ------------- */

/* FP8 GEMMs need compute capability 8.9 (FP8 tensor cores) and cuBLASLt's alignment: every
 * dimension a multiple of 16 (the model's are). */
static vox_status fp8_supported(cuda_state *s, const vox_tensor *w, vox_error *err) {
    if (s->cc < 89)
        return vox_fail(err, VOX_ERR_UNSUPPORTED,
                        "%s (%s) has no FP8 tensor cores: FP8 weights need compute capability 8.9 "
                        "or later; export the model with --dtype bf16 for this GPU", s->name, s->gpu);
    if (w->ndim != 2 || w->shape[0] % 16 || w->shape[1] % 16)
        return vox_fail(err, VOX_ERR_UNSUPPORTED,
                        "FP8 weights of %lld x %lld: the CUDA backend needs both dimensions to be "
                        "multiples of 16", (long long)w->shape[0], (long long)w->shape[1]);
    return VOX_OK;
}

/* x's rows [M, K] as the scheme's E4M3 codes q and row scales sx, in one stream-ordered
 * allocation (sx first, then q): with norm_w, the rows of RMSNorm(x) * norm_w as vox_k_rms_norm
 * rounds them, in one pass where norm.cu's vector path takes the shape, else through h [M, K]. */
typedef struct {
    char *buf;
    size_t bytes;
    float *sx;
    uint8_t *q;
} fp8_rows;

static bool fp8_rows_make(cuda_state *s, fp8_rows *r, const void *x, int64_t M, int64_t K,
                          const vox_tensor *norm_w, float eps, void *h) {
    const size_t sx_bytes = ((size_t)M * sizeof(float) + 255) / 256 * 256;
    r->bytes = sx_bytes + (size_t)(M * K);
    vox_error err;
    if (dev_alloc(s, (void **)&r->buf, r->bytes, &err)) {
        note_error(s, cudaErrorMemoryAllocation, "fp8 input rows");
        return false;
    }
    r->sx = (float *)r->buf;
    r->q = (uint8_t *)(r->buf + sx_bytes);
    if (norm_w) {
        if (vox_k_rms_norm_fp8(r->q, r->sx, NULL, x, norm_w->data, M, K, eps, s->stream)) {
            LAUNCHED(s, "rms_norm_fp8");
            return true;
        }
        VOX_ASSERT(h);
        vox_k_rms_norm(h, x, norm_w->data, M, K, eps, s->stream);
        LAUNCHED(s, "rms_norm");
        x = h;
    }
    vox_k_fp8_quantize_rows(r->q, r->sx, x, M, K, s->stream);
    LAUNCHED(s, "fp8_quantize_rows");
    return true;
}

static void fp8_rows_free(cuda_state *s, fp8_rows *r) {
    dev_free(s, r->buf, r->bytes); /* stream-ordered: after the GEMM has read the codes */
    r->buf = NULL;
}

/* The FP8 GEMMs of few rows: cuBLASLt's plain FP8 products (no scales, float32 out) stream the
 * weights at 44 us a decoder layer for 8 rows against 74 us for its outer-vector-scaled ones,
 * which have one algorithm (time_gemm_algos --fp8 / --fp8-fp32, NOTES-2026-12-02-fp8-fused.md).
 * End to end on the H200 the plain products won the decode stage at 12 to 48 sequences (-18% to
 * -3%, NOTES-2026-12-02-fp8-plain.md) and, measured again on 2026-12-04 (NOTES-2026-12-04b.md),
 * at 64 (-8.7%: a 64-row step 3.65 ms against 4.16-4.21) and 128 (-2%); at 256 sequences a
 * limit of 128 or 256 is even with 48 (their steps of 129-256 rows gain nothing): up to 128 rows.
 * VOX_FP8_PLAIN_ROWS=N sets the limit (0: outer vectors at every size), for comparisons. */
#define FP8_PLAIN_ROWS 128

/* acc [M, N] float32 = x's codes times FP8 w [N, K]'s codes, unscaled, fp32 accumulation, in a
 * stream-ordered allocation of M * N floats (the caller frees it). NULL when cuBLASLt refused
 * or memory ran out (noted). */
static float *fp8_plain_gemm(cuda_state *s, const fp8_rows *r, const vox_tensor *w, int64_t M) {
    const int64_t N = w->shape[0], K = w->shape[1];
    float *acc = NULL;
    vox_error err;
    if (dev_alloc(s, (void **)&acc, (size_t)(M * N) * 4, &err)) {
        note_error(s, cudaErrorMemoryAllocation, "fp8 matmul accumulator");
        return NULL;
    }
    if (lt_matmul_scaled(s, CUDA_R_8F_E4M3, CUDA_R_32F, M, N, K, w->data, r->q, acc, NULL, 5,
                         false, NULL, NULL) != CUBLAS_STATUS_SUCCESS) {
        dev_free(s, acc, (size_t)(M * N) * 4);
        return NULL;
    }
    return acc;
}

/* The scales applied to a plain product by its consumer (op), into y; frees acc. */
static void fp8_plain_apply(cuda_state *s, vox_k_fp8_consumer op, void *y, float *acc,
                            const fp8_rows *r, const vox_tensor *w, int64_t M) {
    const int64_t N = w->shape[0];
    vox_k_fp8_scale_apply(op, y, acc, r->sx, w->scale, M, N, s->stream);
    LAUNCHED(s, "fp8_scale_apply");
    dev_free(s, acc, (size_t)(M * N) * 4);
}

/* y [M, N] bf16 = the scheme's product of x's codes and FP8 w [N, K] through cuBLASLt, with fp32
 * accumulation, the scales applied by cuBLASLt (outer vectors) or by a kernel on its float32
 * result (mode). Returns false when cuBLASLt refused (nothing then written to y). */
static bool fp8_lt_gemm(cuda_state *s, fp8_gemm_mode mode, void *y, const fp8_rows *r,
                        const vox_tensor *w, int64_t M) {
    const int64_t N = w->shape[0], K = w->shape[1];
    if (mode == FP8_GEMM_OUTER_VEC)
        return lt_matmul_scaled(s, CUDA_R_8F_E4M3, CUDA_R_16BF, M, N, K, w->data, r->q, y, NULL,
                                4, false, w->scale, r->sx) == CUBLAS_STATUS_SUCCESS;
    float *acc = fp8_plain_gemm(s, r, w, M);
    if (acc) fp8_plain_apply(s, VOX_K_FP8_STORE, y, acc, r, w, M);
    return acc != NULL;
}

/* An FP8 projection (the scheme's layers) of more rows than the matvec kernels take, or a plain
 * FP8 matmul (STORE): x's rows quantized (the RMSNorm fused in where there is one), then one of
 *  - the few-row kernel where skinny_takes (VOX_SKINNY_GEMM=1), with the residual add inside;
 *  - up to fp8_plain_rows rows (or every size in the epilogue mode): a plain FP8 product in
 *    float32 whose scales the consumer kernel applies (store, residual add, SwiGLU; RoPE + cache
 *    reads the scaled product from p->tmp);
 *  - else cuBLASLt's outer-vector-scaled GEMM into p->tmp and the neighbour as a kernel.
 * (cuBLASLt's beta = 1 with outer-vector FP8 scales did not pass a probe against the host on
 * the H200, 2026-12-02: its residual adds stay a kernel.) False, enqueuing nothing, when a
 * scratch tensor it needs is missing. */
static void cu_swiglu(vox_backend *be, vox_tensor *y, const vox_tensor *gate_up);
static void cu_rope_cache(vox_backend *be, vox_tensor *q_out, vox_tensor *k_pool,
                          vox_tensor *v_pool, const vox_tensor *qkv, int n_heads, int n_kv_heads,
                          int head_dim, double theta);
static bool fp8_project(vox_backend *be, const vox_projection *p) {
    cuda_state *s = S(be);
    const int64_t M = p->x->shape[0], N = p->w->shape[0];
    const int64_t K = M ? (int64_t)(vox_tensor_numel(p->x) / (size_t)M) : p->w->shape[1];
    VOX_ASSERT(p->x->dtype == VOX_DTYPE_BF16 && p->w->scale && p->w->shape[1] == K && !p->bias);
    VOX_ASSERT(s->fp8_gemm != FP8_GEMM_UNKNOWN); /* fp8_weight decided it */
    const bool skinny = skinny_takes(s, M, p->w);
    const bool plain = !skinny && (M <= s->fp8_plain_rows || s->fp8_gemm == FP8_GEMM_EPILOGUE);
    const bool fused_add = p->out == VOX_PROJ_ADD && skinny;
    if ((p->out != VOX_PROJ_STORE && !p->tmp) || (p->norm_w && !p->h)) return false;
    vox_tensor *out = p->out == VOX_PROJ_STORE || fused_add ? p->y : p->tmp;
    VOX_ASSERT(vox_tensor_numel(out) >= (size_t)(M * N) && out->dtype == VOX_DTYPE_BF16);
    if (M == 0) return true;
    fp8_rows r;
    if (!fp8_rows_make(s, &r, p->x->data, M, K, p->norm_w, p->eps, p->h ? p->h->data : NULL))
        return true; /* the failure is noted */
    /* done: the residual add or SwiGLU, where the GEMM's consumer kernel applied it */
    bool neighbour_done = fused_add;
    if (plain) {
        /* STORE (and RoPE's product) into out, the residual add and SwiGLU straight into y */
        static const vox_k_fp8_consumer consumer[] = {
            [VOX_PROJ_STORE] = VOX_K_FP8_STORE, [VOX_PROJ_ADD] = VOX_K_FP8_ADD,
            [VOX_PROJ_SWIGLU] = VOX_K_FP8_SWIGLU, [VOX_PROJ_ROPE_CACHE] = VOX_K_FP8_STORE};
        const vox_k_fp8_consumer op = consumer[p->out];
        float *acc = fp8_plain_gemm(s, &r, p->w, M);
        if (!acc) {
            fp8_rows_free(s, &r);
            return true; /* the failure is noted */
        }
        fp8_plain_apply(s, op, op == VOX_K_FP8_STORE ? out->data : p->y->data, acc, &r, p->w, M);
        neighbour_done = op != VOX_K_FP8_STORE;
    } else if (!(skinny && skinny_gemm(s, M, p->w, r.q, r.sx, out->data, fused_add))) {
        if (fused_add) out = p->tmp, neighbour_done = false; /* the kernel refused: the add apart */
        fp8_lt_gemm(s, s->fp8_gemm, out->data, &r, p->w, M);
    }
    fp8_rows_free(s, &r);
    vox_tensor prod = *out; /* the product [M, N] */
    prod.ndim = 2, prod.shape[0] = M, prod.shape[1] = N;
    switch (p->out) {
    case VOX_PROJ_STORE: break;
    case VOX_PROJ_ADD:
        if (!neighbour_done) {
            vox_k_add(p->y->data, p->y->data, prod.data, M * N, s->stream);
            LAUNCHED(s, "add");
        }
        break;
    case VOX_PROJ_SWIGLU:
        if (!neighbour_done) cu_swiglu(be, p->y, &prod);
        break;
    case VOX_PROJ_ROPE_CACHE:
        cu_rope_cache(be, p->y, p->k_pool, p->v_pool, &prod, p->n_heads, p->n_kv_heads,
                      p->head_dim, p->theta);
        break;
    }
    return true;
}

static void fp8_matmul(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w) {
    VOX_ASSERT(y->dtype == VOX_DTYPE_BF16 && vox_tensor_numel(y) == (size_t)(x->shape[0] * w->shape[0]));
    fp8_project(be, &(vox_projection){.y = y, .x = x, .w = w, .out = VOX_PROJ_STORE});
}

/* Which way this device's cuBLASLt applies the row scales: a small FP8 GEMM with outer-vector
 * scales and a plain one (float32 out, the scales applied by a kernel), each checked against the
 * host's arithmetic. Outer vectors above fp8_plain_rows rows and plain products up to it where
 * both pass; the one that passes at every size otherwise. VOX_FP8_GEMM=epilogue forces plain
 * products at every size, VOX_FP8_GEMM=outer outer vectors at every size, for comparisons. */
static vox_status fp8_choose_gemm(cuda_state *s, vox_error *err) {
    /* positive values only: no cancellation, so the result is within bf16 rounding of the
     * exact one; x's codes and scales as the host's encoder makes them */
    enum { PM = 24, PN = 32, PK = 48 };
    uint8_t hw[PN * PK], hx[PM * PK];
    float hws[PN], hxs[PM], want[PM * PN], xf[PK];
    for (int i = 0; i < PN * PK; i++) hw[i] = (uint8_t)((i * 37 + 11) % 0x70);
    for (int n = 0; n < PN; n++) hws[n] = 0.25f + 0.01f * (float)n;
    uint16_t xb[PM * PK];
    for (int m = 0; m < PM; m++) {
        for (int k = 0; k < PK; k++) {
            xb[m * PK + k] = vox_f32_to_bf16((float)(1 + (m * 13 + k * 7) % 50) * (0.5f + 0.1f * (float)m));
            xf[k] = vox_bf16_to_f32(xb[m * PK + k]);
        }
        hxs[m] = vox_fp8_quantize_row(xf, PK, hx + m * PK);
    }
    for (int m = 0; m < PM; m++)
        for (int n = 0; n < PN; n++) {
            double acc = 0;
            for (int k = 0; k < PK; k++)
                acc += (double)vox_e4m3_to_f32(hx[m * PK + k]) * vox_e4m3_to_f32(hw[n * PK + k]);
            want[m * PN + n] = (float)(acc * hxs[m] * hws[n]);
        }
    /* the probe below clears what it provokes: a failure noted before it is reported first */
    if (s->first_error != cudaSuccess) return pending_fail(s, err, s->name);
    const char *force = getenv("VOX_FP8_GEMM");
    fp8_gemm_mode order[2] = {FP8_GEMM_OUTER_VEC, FP8_GEMM_EPILOGUE};
    const bool only_plain = force && strcmp(force, "epilogue") == 0;
    const bool only_outer = force && strcmp(force, "outer") == 0;
    bool passed[2] = {false, false};
    vox_tensor w = {.dtype = VOX_DTYPE_F8_E4M3, .ndim = 2, .shape = {PN, PK}};
    void *dx = NULL, *dy = NULL;
    vox_status st = VOX_OK;
    if ((st = dev_alloc(s, &w.data, sizeof hw, err)) ||
        (st = dev_alloc(s, (void **)&w.scale, sizeof hws, err)) ||
        (st = dev_alloc(s, &dx, sizeof xb, err)) || (st = dev_alloc(s, &dy, PM * PN * 2, err)))
        goto done;
    cudaMemcpyAsync(w.data, hw, sizeof hw, cudaMemcpyHostToDevice, s->stream);
    cudaMemcpyAsync(w.scale, hws, sizeof hws, cudaMemcpyHostToDevice, s->stream);
    cudaMemcpyAsync(dx, xb, sizeof xb, cudaMemcpyHostToDevice, s->stream);
    for (int i = only_plain ? 1 : 0; i < (only_outer ? 1 : 2); i++) {
        uint16_t got[PM * PN];
        fp8_rows r;
        bool ok = fp8_rows_make(s, &r, dx, PM, PK, NULL, 0.0f, NULL);
        if (ok) {
            ok = fp8_lt_gemm(s, order[i], dy, &r, &w, PM);
            fp8_rows_free(s, &r);
        }
        cudaError_t e = cudaMemcpyAsync(got, dy, sizeof got, cudaMemcpyDeviceToHost, s->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
        s->first_error = cudaSuccess; /* a refusal here is an answer, not a failure */
        s->first_error_blas = CUBLAS_STATUS_SUCCESS;
        cudaGetLastError();
        for (int j = 0; ok && e == cudaSuccess && j < PM * PN; j++) /* within bf16 rounding */
            ok = fabsf(vox_bf16_to_f32(got[j]) - want[j]) <= fabsf(want[j]) * (1.0f / 128);
        passed[i] = ok && e == cudaSuccess;
    }
    if (passed[0] || passed[1]) {
        s->fp8_gemm = passed[0] ? order[0] : order[1];
        s->fp8_plain_rows = passed[0] && passed[1]
                                ? (int64_t)vox_env_size("VOX_FP8_PLAIN_ROWS", FP8_PLAIN_ROWS, 0, INT32_MAX)
                                : 0;
        goto done;
    }
    st = vox_fail(err, VOX_ERR_UNSUPPORTED,
                  "%s (%s): cuBLASLt ran no correct FP8 GEMM here; export the model with --dtype bf16",
                  s->name, s->gpu);
done:
    dev_free(s, w.data, sizeof hw);
    dev_free(s, w.scale, sizeof hws);
    dev_free(s, dx, sizeof xb);
    dev_free(s, dy, PM * PN * 2);
    return st;
}

/* An FP8 weight: the codes and their row scales uploaded as they are. */
static vox_status fp8_weight(cuda_state *s, vox_tensor *dst, const void *src, const float *scale,
                             vox_error *err) {
    VOX_ASSERT(scale);
    dst->dtype = VOX_DTYPE_F8_E4M3;
    vox_status st = fp8_supported(s, dst, err);
    if (st == VOX_OK && s->fp8_gemm == FP8_GEMM_UNKNOWN) {
        /* choosing runs a GEMM, and cuBLASLt is still loading beside the weights: during a
         * load, choose once they are in (weights_end) rather than wait for it here */
        if (s->deferring) s->fp8_choose_pending = true;
        else st = fp8_choose_gemm(s, err);
    }
    size_t rows = (size_t)dst->shape[0];
    if (st == VOX_OK) st = dev_alloc(s, &dst->data, vox_tensor_nbytes(dst), err);
    if (st == VOX_OK) st = dev_alloc(s, (void **)&dst->scale, rows * sizeof(float), err);
    /* codes and scales go up as the file has them: reader threads copy them during a load */
    if (st == VOX_OK && !defer_copy(s, dst->data, src, vox_tensor_nbytes(dst)))
        st = upload_staged(s, dst->data, src, vox_tensor_numel(dst), 1, stage_copy_u8, err);
    if (st == VOX_OK && !defer_copy(s, dst->scale, scale, rows * sizeof(float)))
        st = upload_staged(s, dst->scale, scale, rows, 4, stage_copy_f32, err);
    return st;
}

/* ---- log-mel front end ------------------------------------------------------------------------ */

#define MEL_BLOCK_FRAMES 24000 /* 8 chunks of frames per pass: bounds the workspace (~100 MB) */

static vox_status mel_tables(cuda_state *s, vox_error *err) {
    if (s->mel_basis) return VOX_OK;
    float *basis = malloc(402 * 400 * sizeof(float)), *window = malloc(400 * sizeof(float));
    if (!basis || !window) {
        free(basis), free(window);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    const double two_pi = 6.283185307179586476925;
    for (int f = 0; f < 201; f++)
        for (int j = 0; j < 400; j++) {
            int r = (f * j) % 400; /* exact phase: cos(2 pi f j / 400) = cos(2 pi r / 400) */
            basis[f * 400 + j] = (float)cos(two_pi * r / 400.0);
            basis[(201 + f) * 400 + j] = (float)sin(two_pi * r / 400.0);
        }
    for (int j = 0; j < 400; j++) window[j] = (float)(0.5 - 0.5 * cos(two_pi * j / 400.0));
    vox_status st = VOX_OK;
    cudaError_t e;
    if ((e = cudaMalloc((void **)&s->mel_basis, 402 * 400 * sizeof(float))) ||
        (e = cudaMalloc((void **)&s->mel_window, 400 * sizeof(float))) ||
        (e = cudaMalloc((void **)&s->mel_filters, VOX_MEL_BINS * 201 * sizeof(float))) ||
        (e = cudaMemcpy(s->mel_basis, basis, 402 * 400 * sizeof(float), cudaMemcpyHostToDevice)) ||
        (e = cudaMemcpy(s->mel_window, window, 400 * sizeof(float), cudaMemcpyHostToDevice)) ||
        (e = cudaMemcpy(s->mel_filters, vox_mel_filters(), VOX_MEL_BINS * 201 * sizeof(float),
                        cudaMemcpyHostToDevice)))
        st = cuda_fail(err, e, "mel tables");
    free(basis), free(window);
    return st;
}

static vox_status cu_log_mel(vox_backend *be, vox_tensor *features, const float *samples,
                             size_t n_samples, vox_error *err) {
    cuda_state *s = S(be);
    size_t n_chunks = vox_mel_chunk_count(n_samples);
    int64_t n_pad = (int64_t)n_chunks * VOX_CHUNK_SAMPLES, T = n_pad / VOX_MEL_HOP;
    size_t n_out = n_chunks * VOX_MEL_BINS * VOX_CHUNK_FRAMES;
    VOX_ASSERT(vox_tensor_numel(features) == n_out);
    vox_status st = mel_tables(s, err);
    if (st) return st;
    int64_t B = T < MEL_BLOCK_FRAMES ? T : MEL_BLOCK_FRAMES;
    float *wav = NULL, *logmel = NULL, *frames = NULL, *spec = NULL, *power = NULL, *mel = NULL;
    unsigned *max_key = NULL;
    if ((st = dev_alloc(s, (void **)&wav, (size_t)n_pad * 4, err)) ||
        (st = dev_alloc(s, (void **)&logmel, n_out * 4, err)) ||
        (st = dev_alloc(s, (void **)&frames, (size_t)B * 400 * 4, err)) ||
        (st = dev_alloc(s, (void **)&spec, (size_t)B * 402 * 4, err)) ||
        (st = dev_alloc(s, (void **)&power, (size_t)B * 201 * 4, err)) ||
        (st = dev_alloc(s, (void **)&mel, (size_t)B * VOX_MEL_BINS * 4, err)) ||
        (st = dev_alloc(s, (void **)&max_key, sizeof(unsigned), err)))
        goto done;
    if ((st = upload_staged(s, wav, samples, n_samples, 4, stage_copy_f32, err))) goto done;
    note_error(s, cudaMemsetAsync(wav + n_samples, 0, ((size_t)n_pad - n_samples) * 4, s->stream), "mel");
    note_error(s, cudaMemsetAsync(max_key, 0, sizeof(unsigned), s->stream), "mel");
    for (int64_t t0 = 0; t0 < T; t0 += B) {
        int64_t nt = T - t0 < B ? T - t0 : B;
        vox_k_mel_frames(frames, wav, n_pad, t0, nt, s->mel_window, s->stream);
        lt_matmul(s, CUDA_R_32F, CUDA_R_32F, nt, 402, 400, s->mel_basis, frames, spec, NULL, 3, false);
        vox_k_mel_power(power, spec, nt, s->stream);
        lt_matmul(s, CUDA_R_32F, CUDA_R_32F, nt, VOX_MEL_BINS, 201, s->mel_filters, power, mel, NULL, 3, false);
        vox_k_mel_log(logmel, mel, t0, nt, max_key, s->stream);
    }
    vox_k_mel_finish(features->data, features->dtype == VOX_DTYPE_BF16, logmel, (int64_t)n_out,
                     max_key, s->stream);
    LAUNCHED(s, "log_mel");
done:
    dev_free(s, wav, (size_t)n_pad * 4);
    dev_free(s, logmel, n_out * 4);
    dev_free(s, frames, (size_t)B * 400 * 4);
    dev_free(s, spec, (size_t)B * 402 * 4);
    dev_free(s, power, (size_t)B * 201 * 4);
    dev_free(s, mel, (size_t)B * VOX_MEL_BINS * 4);
    dev_free(s, max_key, sizeof(unsigned));
    return st;
}

/* ---- other operations: kernels --------------------------------------------------------------- */

static int64_t rows(const vox_tensor *t) { return t->shape[0]; }
static int64_t cols(const vox_tensor *t) { return (int64_t)(vox_tensor_numel(t) / (size_t)(t->shape[0] ? t->shape[0] : 1)); }

static void cu_layer_norm(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                          const vox_tensor *b, float eps) {
    vox_k_layer_norm(y->data, x->data, w->data, b->data, rows(x), cols(x), eps, S(be)->stream);
    LAUNCHED(S(be), "layer_norm");
}

static void cu_rms_norm(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                        float eps) {
    vox_k_rms_norm(y->data, x->data, w->data, rows(x), cols(x), eps, S(be)->stream);
    LAUNCHED(S(be), "rms_norm");
}

static void cu_gelu(vox_backend *be, vox_tensor *x) {
    vox_k_gelu(x->data, (int64_t)vox_tensor_numel(x), S(be)->stream);
    LAUNCHED(S(be), "gelu");
}

static void cu_swiglu(vox_backend *be, vox_tensor *y, const vox_tensor *gate_up) {
    int64_t F = cols(gate_up) / 2;
    VOX_ASSERT(cols(gate_up) == 2 * F && cols(y) == F && rows(y) == rows(gate_up));
    vox_k_swiglu(y->data, gate_up->data, rows(gate_up), F, S(be)->stream);
    LAUNCHED(S(be), "swiglu");
}

static void cu_add(vox_backend *be, vox_tensor *y, const vox_tensor *a, const vox_tensor *b) {
    vox_k_add(y->data, a->data, b->data, (int64_t)vox_tensor_numel(a), S(be)->stream);
    LAUNCHED(S(be), "add");
}

static void cu_add_rows_f32(vox_backend *be, vox_tensor *x, const vox_tensor *p) {
    VOX_ASSERT(p->dtype == VOX_DTYPE_F32);
    vox_k_add_rows_f32(x->data, p->data, rows(x), rows(p), cols(p), S(be)->stream);
    LAUNCHED(S(be), "add_rows_f32");
}

static void cu_conv1d_k3(vox_backend *be, vox_tensor *y, const vox_tensor *x, bool x_channels_first,
                         int batch, int t_in, const vox_tensor *w, const vox_tensor *bias, int stride) {
    cuda_state *s = S(be);
    int64_t c_out = w->shape[0], c_in = w->shape[1];
    int t_out = (t_in - 1) / stride + 1;
    vox_tensor col = {.dtype = VOX_DTYPE_BF16, .ndim = 2, .shape = {(int64_t)batch * t_out, c_in * 3}};
    vox_error err;
    if (cu_alloc(be, &col, &err)) {
        note_error(s, cudaErrorMemoryAllocation, "conv1d workspace");
        return;
    }
    vox_k_im2col_k3(col.data, x->data, x_channels_first, batch, (int)c_in, t_in, stride, s->stream);
    LAUNCHED(s, "im2col_k3");
    vox_tensor w2 = vox_tensor_reshape2(w, c_out, c_in * 3);
    cu_matmul(be, y, &col, &w2, bias);
    cu_free(be, &col);
}

/* ---- the decoder over a batch ------------------------------------------------------------------ */

static vox_status cu_batch_reserve(vox_backend *be, int max_rows, int max_seqs, int table_width,
                                   int block_size, int n_heads, int head_dim, vox_error *err) {
    cuda_state *s = S(be);
    VOX_ASSERT(!s->capturing);
    if (max_rows <= s->batch_rows && max_seqs <= s->batch_seqs &&
        (int64_t)max_seqs * table_width <= s->batch_table && max_seqs <= s->attn_ws_batches &&
        (int64_t)table_width * block_size <= s->attn_ws_max_kv && n_heads == s->attn_ws_heads &&
        head_dim == s->attn_ws_dim)
        return VOX_OK;
    cudaStreamSynchronize(s->stream);
    size_t ints = (size_t)max_seqs /* ids */ + 2 * (size_t)max_rows /* pos, slot */ +
                  (size_t)max_seqs + 1 /* row0 */ + (size_t)max_seqs /* len */ +
                  (size_t)max_seqs * table_width + (size_t)max_rows /* logit rows */ +
                  (size_t)max_seqs /* chosen */;
    cudaFreeHost(s->batch_pinned);
    free(s->batch_host);
    cudaFree(s->batch_dev);
    s->batch_pinned = s->batch_host = s->batch_dev = NULL;
    s->batch_rows = s->batch_seqs = s->batch_table = 0;
    cudaError_t e;
    if ((e = cudaMallocHost((void **)&s->batch_pinned, ints * sizeof(int32_t))) ||
        (e = cudaMalloc((void **)&s->batch_dev, ints * sizeof(int32_t))))
        return cuda_fail(err, e, "batch buffers");
    if (!(s->batch_host = malloc(ints * sizeof(int32_t))))
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    s->batch_ints = ints;
    int32_t *p = s->batch_dev;
    s->b_ids = p, p += max_seqs;
    s->b_pos = p, p += max_rows;
    s->b_slot = p, p += max_rows;
    s->b_row0 = p, p += max_seqs + 1;
    s->b_len = p, p += max_seqs;
    s->b_tables = p, p += (size_t)max_seqs * table_width;
    s->b_lrows = p, p += max_rows;
    s->b_chosen = p;
    s->batch_rows = max_rows;
    s->batch_seqs = max_seqs;
    s->batch_table = max_seqs * table_width;
    /* decode attention workspaces (split partials; their counters start at zero and every launch
     * leaves them zero) and the logits results, sized here so that a recording allocates nothing */
    int64_t max_kv = (int64_t)table_width * block_size;
    if (max_seqs > s->attn_ws_batches || max_kv > s->attn_ws_max_kv || n_heads != s->attn_ws_heads ||
        head_dim != s->attn_ws_dim) {
        cudaFree(s->attn_ws);
        free(s->attn_ws_at);
        s->attn_ws = NULL;
        s->attn_ws_bytes = 0;
        s->attn_ws_batches = 0;
        if (!(s->attn_ws_at = malloc(((size_t)max_seqs + 1) * sizeof *s->attn_ws_at)))
            return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        size_t total = 0;
        for (int b = 0; b <= max_seqs; b++) {
            size_t bytes = b ? vox_k_decode_attention_workspace(b, n_heads, head_dim, max_kv) : 0;
            s->attn_ws_at[b] = bytes ? (int64_t)total : -1;
            total += (bytes + 255) / 256 * 256;
        }
        if (total && (e = cudaMalloc(&s->attn_ws, total)))
            return cuda_fail(err, e, "decode attention workspace");
        for (int b = 1; b <= max_seqs; b++)
            if (s->attn_ws_at[b] >= 0)
                vox_k_decode_attention_workspace_init((char *)s->attn_ws + s->attn_ws_at[b], b, n_heads,
                                                      s->stream);
        s->attn_ws_bytes = total;
        s->attn_ws_batches = max_seqs;
        s->attn_ws_max_kv = max_kv;
        s->attn_ws_heads = n_heads;
        s->attn_ws_dim = head_dim;
    }
    if (max_seqs > s->logits_cap) {
        cudaFree(s->logits_dev);
        cudaFreeHost(s->logits_host);
        s->logits_dev = NULL;
        s->logits_host = NULL;
        s->logits_cap = 0;
        if ((e = cudaMalloc((void **)&s->logits_dev, (size_t)max_seqs * sizeof *s->logits_dev)) ||
            (e = cudaMallocHost((void **)&s->logits_host, (size_t)max_seqs * sizeof *s->logits_host)))
            return cuda_fail(err, e, "logits results");
        s->logits_cap = max_seqs;
    }
    return VOX_OK;
}

/* Appends n ints of src to the staging buffer at *at; returns where they went (host copy). */
static const int32_t *stage_ints(cuda_state *s, size_t *at, const int32_t *src, size_t n) {
    memcpy(s->batch_pinned + *at, src, n * sizeof *src);
    memcpy(s->batch_host + *at, src, n * sizeof *src);
    const int32_t *h = s->batch_host + *at;
    *at += n;
    return h;
}

static vox_status cu_batch_set(vox_backend *be, const vox_batch *b, vox_error *err) {
    cuda_state *s = S(be);
    VOX_ASSERT(!s->capturing);
    VOX_ASSERT(b->n_rows <= s->batch_rows && b->n_seqs <= s->batch_seqs &&
               b->n_logits <= s->batch_seqs && (int64_t)b->n_seqs * b->table_width <= s->batch_table);
    cudaError_t e = cudaEventSynchronize(s->batch_done); /* the previous copy has left */
    if (e) return cuda_fail(err, e, "batch");
    /* the same layout as the device buffer: each array at its fixed offset */
    size_t at = 0, R = (size_t)s->batch_rows, Q = (size_t)s->batch_seqs;
    s->batch = *b;
    s->batch.ids = stage_ints(s, &at, b->ids, (size_t)b->n_decode);
    at = Q;
    s->batch.row_pos = stage_ints(s, &at, b->row_pos, (size_t)b->n_rows);
    at = Q + R;
    s->batch.row_slot = stage_ints(s, &at, b->row_slot, (size_t)b->n_rows);
    at = Q + 2 * R;
    s->batch.seq_row0 = stage_ints(s, &at, b->seq_row0, (size_t)b->n_seqs + 1);
    at = Q + 2 * R + Q + 1;
    s->batch.seq_len = stage_ints(s, &at, b->seq_len, (size_t)b->n_seqs);
    at = 3 * Q + 2 * R + 1;
    s->batch.tables = stage_ints(s, &at, b->tables, (size_t)b->n_seqs * b->table_width);
    at = 3 * Q + 2 * R + 1 + (size_t)s->batch_table;
    s->batch.logit_rows = stage_ints(s, &at, b->logit_rows, (size_t)b->n_logits);
    /* one copy of everything up to the end of the logit rows */
    e = cudaMemcpyAsync(s->batch_dev, s->batch_pinned, at * sizeof(int32_t), cudaMemcpyHostToDevice,
                        s->stream);
    if (e) return cuda_fail(err, e, "batch");
    cudaEventRecord(s->batch_done, s->stream);
    return VOX_OK;
}

static void cu_embed_batch(vox_backend *be, vox_tensor *y, const vox_tensor *table) {
    cuda_state *s = S(be);
    VOX_ASSERT(rows(y) == s->batch.n_decode && cols(y) == cols(table));
    vox_k_embed(y->data, table->data, s->b_ids, s->batch.n_decode, cols(table), s->stream);
    LAUNCHED(s, "embed_batch");
}

static void cu_rope_cache(vox_backend *be, vox_tensor *q_out, vox_tensor *k_pool,
                          vox_tensor *v_pool, const vox_tensor *qkv, int n_heads, int n_kv_heads,
                          int head_dim, double theta) {
    cuda_state *s = S(be);
    int64_t T = rows(qkv), QD = (int64_t)n_heads * head_dim, KD = (int64_t)n_kv_heads * head_dim;
    VOX_ASSERT(T == s->batch.n_rows && cols(qkv) == QD + 2 * KD && rows(q_out) == T &&
               cols(q_out) == QD && cols(k_pool) == KD && cols(v_pool) == KD);
    vox_k_qkv_rope_cache_rows(q_out->data, k_pool->data, v_pool->data, qkv->data, T, n_heads,
                              n_kv_heads, head_dim, s->b_pos, s->b_slot, theta, s->stream);
    LAUNCHED(s, "qkv_rope_cache");
}

/* Decode rows in one launch over every decoding sequence (lengths and block tables read on the
 * device, so a recorded step replays with new ones); the prompt chunks in one more launch (one
 * launch each where only the simple kernel takes the shape). */
static void cu_paged_attention(vox_backend *be, vox_tensor *out, const vox_tensor *q,
                               const vox_tensor *k_pool, const vox_tensor *v_pool, int n_heads,
                               int n_kv_heads, int head_dim, float scale) {
    cuda_state *s = S(be);
    const vox_batch *b = &s->batch;
    int64_t QD = (int64_t)n_heads * head_dim;
    VOX_ASSERT(rows(q) == b->n_rows && rows(out) == b->n_rows && cols(q) == QD);
    char *o = out->data;
    const char *qq = q->data;
    if (b->n_decode > 0) {
        VOX_ASSERT(b->n_decode <= s->attn_ws_batches && n_heads == s->attn_ws_heads &&
                   (int64_t)b->table_width * b->block_size <= s->attn_ws_max_kv);
        int64_t at = s->attn_ws_at[b->n_decode];
        /* the workspace was sized for the widest table: its splits are planned for that length */
        vox_k_decode_attention_paged(o, qq, k_pool->data, v_pool->data, b->n_decode, s->b_len,
                                     s->b_tables, b->table_width, b->block_size, n_heads,
                                     n_kv_heads, head_dim, scale,
                                     at >= 0 ? (char *)s->attn_ws + at : NULL, s->stream);
        LAUNCHED(s, "decode_attention");
    }
    int n_prompt = b->n_seqs - b->n_decode, max_t_q = 0;
    for (int i = b->n_decode; i < b->n_seqs; i++)
        if (b->seq_row0[i + 1] - b->seq_row0[i] > max_t_q) max_t_q = b->seq_row0[i + 1] - b->seq_row0[i];
    /* the prompt chunks: one launch for all of them where the tiled kernels take the shape */
    if (n_prompt > 0 &&
        vox_k_attention_paged_batch(o, qq, k_pool->data, v_pool->data, n_prompt, max_t_q,
                                    s->b_row0 + b->n_decode, s->b_pos,
                                    s->b_tables + (size_t)b->n_decode * b->table_width,
                                    b->table_width, b->block_size, n_heads, n_kv_heads, head_dim,
                                    scale, s->stream)) {
        LAUNCHED(s, "prefill_attention");
        return;
    }
    for (int i = b->n_decode; i < b->n_seqs; i++) {
        int r0 = b->seq_row0[i], n = b->seq_row0[i + 1] - r0;
        size_t off = (size_t)r0 * (size_t)QD * 2;
        vox_k_attention_paged(o + off, qq + off, k_pool->data, v_pool->data, n, b->row_pos[r0],
                              s->b_tables + (size_t)i * b->table_width, b->block_size, n_heads,
                              n_kv_heads, head_dim, scale, s->stream);
        LAUNCHED(s, "prefill_attention");
    }
}

static void cu_gather_rows(vox_backend *be, vox_tensor *y, const vox_tensor *x) {
    cuda_state *s = S(be);
    VOX_ASSERT(rows(y) == s->batch.n_logits && cols(y) == cols(x));
    /* a gather of rows is an embedding lookup with x as the table */
    vox_k_embed(y->data, x->data, s->b_lrows, s->batch.n_logits, cols(x), s->stream);
    LAUNCHED(s, "gather_rows");
}

/* Decode-shaped projections (few rows) with their neighbours fused: kernels/matvec.cu. Of the
 * larger shapes (prefill, the encoder), residual adds are taken: cuBLASLt adds the product to the
 * residual in its epilogue (beta = 1), which saves a pass over the activations and rounds once.
 * The rest are not taken; the caller then runs the separate operations (cuBLASLt and the small
 * kernels), as it does for every shape with VOX_NO_MATVEC=1 (for comparisons). */
static bool cu_projection(vox_backend *be, const vox_projection *p) {
    cuda_state *s = S(be);
    if (s->no_matvec) return false;
    int64_t M = rows(p->x), K = cols(p->x), N = p->w->shape[0];
    if (M > VOX_K_MATVEC_MAX_M || p->bias) {
        /* FP8: the input quantized with its RMSNorm, the GEMM, then its neighbour */
        if (p->w->dtype == VOX_DTYPE_F8_E4M3)
            return !p->bias && !s->fp8_separate && fp8_project(be, p);
        /* aligned shapes only: cu_matmul's note on cuBLASLt's rounding elsewhere */
        if (p->out != VOX_PROJ_ADD || p->norm_w || p->w->dtype != VOX_DTYPE_BF16 || K % 8 ||
            N % 8)
            return false;
        VOX_ASSERT((int64_t)(vox_tensor_numel(p->w) / (size_t)N) == K && rows(p->y) == M &&
                   cols(p->y) == N && p->y->dtype == VOX_DTYPE_BF16 && p->x->dtype == VOX_DTYPE_BF16);
        if (p->bias) VOX_ASSERT(p->bias->dtype == VOX_DTYPE_BF16 && (int64_t)vox_tensor_numel(p->bias) == N);
        if (M > 0 && (p->bias || !skinny_takes(s, M, p->w) ||
                      !skinny_gemm(s, M, p->w, p->x->data, NULL, p->y->data, true)))
            lt_matmul(s, CUDA_R_16BF, CUDA_R_16BF, M, N, K, p->w->data, p->x->data, p->y->data,
                      p->bias ? p->bias->data : NULL, p->bias ? 1 : 0, true);
        return true;
    }
    static const vox_k_matvec_epilogue epilogue[] = {
        [VOX_PROJ_STORE] = VOX_K_MATVEC_STORE,
        [VOX_PROJ_ADD] = VOX_K_MATVEC_ADD,
        [VOX_PROJ_SWIGLU] = VOX_K_MATVEC_SWIGLU,
        [VOX_PROJ_ROPE_CACHE] = VOX_K_MATVEC_QKV_ROPE_CACHE,
    };
    bool fp8 = p->w->dtype == VOX_DTYPE_F8_E4M3;
    if (p->w->dtype != VOX_DTYPE_BF16 && !fp8) return false;
    VOX_ASSERT((int64_t)(vox_tensor_numel(p->w) / (size_t)N) == K && rows(p->y) == M);
    VOX_ASSERT(!p->norm_w || (int64_t)vox_tensor_numel(p->norm_w) == K);
    vox_k_matvec_args a = {
        .w = p->w->data, .x = p->x->data, .norm_w = p->norm_w ? p->norm_w->data : NULL,
        .w_scale = fp8 ? p->w->scale : NULL,
        .n = N, .k = K, .m = (int)M, .eps = p->eps, .epilogue = epilogue[p->out], .y = p->y->data,
    };
    switch (p->out) {
    case VOX_PROJ_STORE:
    case VOX_PROJ_ADD: VOX_ASSERT(cols(p->y) == N); break;
    case VOX_PROJ_SWIGLU: VOX_ASSERT(cols(p->y) == N / 2); break;
    case VOX_PROJ_ROPE_CACHE: {
        int64_t QD = (int64_t)p->n_heads * p->head_dim, KD = (int64_t)p->n_kv_heads * p->head_dim;
        VOX_ASSERT(N == QD + 2 * KD && cols(p->y) == QD && cols(p->k_pool) == KD &&
                   cols(p->v_pool) == KD && M == s->batch.n_rows);
        a.k_cache = p->k_pool->data;
        a.v_cache = p->v_pool->data;
        a.n_heads = p->n_heads;
        a.n_kv_heads = p->n_kv_heads;
        a.head_dim = p->head_dim;
        a.row_pos = s->b_pos;
        a.row_slot = s->b_slot;
        a.theta = p->theta;
        break;
    }
    }
    if (!vox_k_matvec(&a, s->stream)) return false;
    LAUNCHED(s, "matvec");
    return true;
}

/* The decoder layers of a decode step of 1 to 8 sequences as one persistent kernel
 * (kernels/pdecode.cu); the layers' pointers travel in the launch's parameters. */
static bool pdecode_workspace(cuda_state *s, const vox_k_pdecode_args *a) {
    return zeroed_workspace(s, &s->pdecode_ws, &s->pdecode_ws_bytes,
                            vox_k_pdecode_workspace_bytes(a));
}

/* the most rows a decode-only step takes the persistent kernel at */
#define PDECODE_DEFAULT_ROWS VOX_FUSED_DECODE_ROWS
_Static_assert(VOX_K_MATVEC_MAX_M == VOX_FUSED_DECODE_ROWS,
               "the graph plan treats steps of up to VOX_FUSED_DECODE_ROWS rows as fused (graphs.c)");

/* CUDA backends alive in this process, per device. The persistent kernel needs every one of its
 * blocks resident at once; two backends on one device (-d cuda:0,cuda:0) could launch it from
 * two streams at the same time, and two such grids each partly resident would wait for each
 * other. Where a device has more than one backend, decode steps stay op by op. */
#define PDECODE_DEVICES 64
static atomic_int backends_on_device[PDECODE_DEVICES];

static bool device_shared(const cuda_state *s) {
    return s->device < 0 || s->device >= PDECODE_DEVICES ||
           atomic_load(&backends_on_device[s->device]) > 1;
}

/* How many weight pages the kernel's blocks keep in flight suits the card: too few starve the
 * stream, too many delay what an op boundary loads behind them (kernels/pdecode.cu,
 * kInflightPages). The default is measured on an H100 and reasoned for an H200; for another card
 * VOX_PDECODE_TUNE=1 (or =report, which prints the timings) runs the device's first step on the
 * kernel that is not being recorded (the warm-up's) at each cap of kTunedCaps, twice each, and
 * keeps the fastest for every later step: ~9 launches, 20-30 ms of load. VOX_PDECODE_INFLIGHT=N
 * fixes the cap instead. */
static void pdecode_tune(cuda_state *s, const vox_k_pdecode_args *a) {
    static const int kTunedCaps[] = {2, 3, 4, 6};
    enum { N_CAPS = sizeof kTunedCaps / sizeof *kTunedCaps, ROUNDS = 2 };
    float us[N_CAPS];
    const double t0 = vox_wall_ms();
    const int cap = vox_k_pdecode_tune(a, kTunedCaps, N_CAPS, ROUNDS, us, s->stream);
    s->pdecode_tune_pending = false;
    if (cap > 0) s->pdecode_inflight = cap;
    if (!s->pdecode_tune_report) return;
    fprintf(stderr, "voxtral: %s: decode kernel pages in flight a block:", s->name);
    for (int i = 0; i < N_CAPS && cap > 0; i++)
        fprintf(stderr, " %d: %.1f us%s", kTunedCaps[i], us[i], i + 1 < N_CAPS ? "," : "");
    if (cap > 0) fprintf(stderr, "; %d taken (%.1f ms)\n", cap, vox_wall_ms() - t0);
    else fprintf(stderr, " not timed (a launch failed), the default kept\n");
}

static bool cu_decode_fused(vox_backend *be, const vox_fused_decode *f) {
    cuda_state *s = S(be);
    const vox_batch *b = &s->batch;
    if (s->no_pdecode || s->no_matvec || f->n_layers < 1 || device_shared(s) ||
        b->n_rows > s->pdecode_rows)
        return false;
    /* a decode-only step: sequence i is row i, and its logits are row i's */
    VOX_ASSERT(b->n_rows == b->n_decode && b->n_seqs == b->n_rows && b->n_logits == b->n_rows &&
               rows(f->x) == b->n_rows && rows(f->logits) == b->n_rows);
    for (int i = 0; i < b->n_rows; i++) VOX_ASSERT(b->logit_rows[i] == i && b->seq_row0[i] == i);
    const vox_fused_layer *L0 = &f->layers[0];
    bool fp8 = L0->qkv->dtype == VOX_DTYPE_F8_E4M3;
    /* FP8 decoders too, since the kernel prefetches the rows' scales: 2.207 ms a token against
     * 2.388 op by op on the H200 (bench/NOTES-2026-12-03e.md; 2.626 against 2.393 before) */
    for (int l = 0; l < f->n_layers; l++) { /* every projection of the same type, and the kernel's */
        const vox_fused_layer *L = &f->layers[l];
        const vox_tensor *w[] = {L->qkv, L->o, L->gate_up, L->down};
        for (int i = 0; i < 4; i++)
            if (w[i]->dtype != (fp8 ? VOX_DTYPE_F8_E4M3 : VOX_DTYPE_BF16) || (fp8 && !w[i]->scale))
                return false;
    }
    if (f->lm_head->dtype != VOX_DTYPE_BF16 || f->x->dtype != VOX_DTYPE_BF16) return false;
    vox_k_pdecode_args a = {
        .n_layers = f->n_layers, .hidden = (int)cols(f->x), .heads = f->heads,
        .kv_heads = f->kv_heads, .head_dim = f->head_dim, .ffn = (int)(L0->down->shape[1]),
        .vocab = f->lm_head->shape[0], .fp8 = fp8, .eps = f->eps, .attn_scale = f->attn_scale,
        .theta = f->theta, .x = f->x->data, .final_norm = f->final_norm->data,
        .lm_head = f->lm_head->data, .logits = f->logits->data, .rows = b->n_rows, .pos = s->b_pos,
        .slot = s->b_slot, .len = s->b_len, .table = s->b_tables, .block_size = b->block_size,
        .table_width = b->table_width,
    };
    if (f->n_layers > VOX_K_PDECODE_MAX_LAYERS || !vox_k_pdecode_supported(&a) ||
        !pdecode_workspace(s, &a))
        return false;
    vox_k_pdecode_layer layers[VOX_K_PDECODE_MAX_LAYERS];
    for (int l = 0; l < f->n_layers; l++) {
        const vox_fused_layer *L = &f->layers[l];
        layers[l] = (vox_k_pdecode_layer){
            .qkv = L->qkv->data, .o = L->o->data, .gate_up = L->gate_up->data, .down = L->down->data,
            .qkv_scale = L->qkv->scale, .o_scale = L->o->scale, .gate_up_scale = L->gate_up->scale,
            .down_scale = L->down->scale, .attn_norm = L->attn_norm->data,
            .ffn_norm = L->ffn_norm->data, .k_cache = L->k_pool->data, .v_cache = L->v_pool->data,
        };
    }
    a.layers = layers;
    a.workspace = s->pdecode_ws;
    if (s->pdecode_tune_pending && !s->capturing) pdecode_tune(s, &a);
    a.inflight = s->pdecode_inflight;
    if (!vox_k_pdecode(&a, s->stream)) return false;
    LAUNCHED(s, "pdecode");
    return true;
}

static void cu_attention(vox_backend *be, vox_tensor *out, const vox_tensor *q, const vox_tensor *k,
                         const vox_tensor *v, int batch, int t_q, int t_k, int n_heads,
                         int n_kv_heads, int head_dim, float scale, bool causal, int64_t q_pos0) {
    cuda_state *s = S(be);
    vox_k_attention(out->data, q->data, k->data, v->data, batch, t_q, t_k, rows(k) / batch, n_heads,
                    n_kv_heads, head_dim, scale, causal, q_pos0, s->stream);
    LAUNCHED(s, "attention");
}

static void cu_embed(vox_backend *be, vox_tensor *y, const vox_tensor *table, const int32_t *ids,
                     size_t n) {
    cuda_state *s = S(be);
    if (n == 0) return;
    cudaEventSynchronize(s->ids_done); /* the previous ids copy has left the pinned buffer */
    if (n > s->ids_cap) {
        cudaFreeHost(s->ids_host);
        s->ids_host = NULL;
        note_error(s, cudaMallocHost((void **)&s->ids_host, n * sizeof(int32_t)), "embed ids");
        s->ids_cap = s->ids_host ? n : 0;
    }
    if (n > s->ids_dev_cap) {
        dev_free(s, s->ids_dev, s->ids_dev_cap * sizeof(int32_t));
        s->ids_dev = NULL;
        s->ids_dev_cap = 0;
        vox_error err;
        if (dev_alloc(s, (void **)&s->ids_dev, n * sizeof(int32_t), &err) == VOX_OK) s->ids_dev_cap = n;
    }
    if (!s->ids_host || !s->ids_dev) {
        note_error(s, cudaErrorMemoryAllocation, "embed ids");
        return;
    }
    for (size_t i = 0; i < n; i++) VOX_ASSERT(ids[i] >= 0 && ids[i] < rows(table));
    memcpy(s->ids_host, ids, n * sizeof(int32_t));
    note_error(s, cudaMemcpyAsync(s->ids_dev, s->ids_host, n * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, s->stream), "embed ids");
    cudaEventRecord(s->ids_done, s->stream);
    vox_k_embed(y->data, table->data, s->ids_dev, (int64_t)n, cols(table), s->stream);
    LAUNCHED(s, "embed");
}

static void cu_copy(vox_backend *be, vox_tensor *dst, const vox_tensor *src) {
    VOX_ASSERT(dst->dtype == src->dtype && vox_tensor_nbytes(dst) == vox_tensor_nbytes(src));
    note_error(S(be), cudaMemcpyAsync(dst->data, src->data, vox_tensor_nbytes(src),
                                      cudaMemcpyDeviceToDevice, S(be)->stream), "copy");
}

/* ---- graphs ---------------------------------------------------------------------------------- */

static void cu_graph_begin(vox_backend *be) {
    cuda_state *s = S(be);
    note_error(s, cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal), "graph capture");
    s->capturing = true;
}

static vox_status cu_graph_end(vox_backend *be, void **out, vox_error *err) {
    cuda_state *s = S(be);
    *out = NULL;
    s->capturing = false;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s->stream, &graph);
    if (s->first_error != cudaSuccess) { /* an operation failed while it was recorded */
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        return pending_fail(s, err, "graph capture of the decode step");
    }
    const char *call = "cudaStreamEndCapture";
    cudaGraphExec_t exec = NULL;
    if (e == cudaSuccess) {
        call = "cudaGraphInstantiate";
        e = cudaGraphInstantiate(&exec, graph, 0);
    }
    if (graph) cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        cudaGetLastError();
        char what[96];
        snprintf(what, sizeof what, "graph capture of the decode step (%s)", call);
        return cuda_fail(err, e, what);
    }
    *out = exec;
    return VOX_OK;
}

static vox_status cu_graph_replay(vox_backend *be, void *graph, vox_error *err) {
    cuda_state *s = S(be);
    s->last_op = "the decode step's graph";
    cudaError_t e = cudaGraphLaunch((cudaGraphExec_t)graph, s->stream);
    if (e != cudaSuccess) return cuda_fail(err, e, "graph launch");
    return VOX_OK;
}

static void cu_graph_free(vox_backend *be, void *graph) {
    (void)be;
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

static vox_status cu_logits_stats(vox_backend *be, const vox_tensor *logits, const int32_t *chosen,
                                  int k, vox_logits_stats *out, vox_error *err) {
    cuda_state *s = S(be);
    int n = (int)rows(logits);
    int64_t V = cols(logits);
    VOX_ASSERT(n >= 1 && n <= s->logits_cap && n <= s->batch_seqs);
    size_t ws = vox_k_logits_workspace_rows(n, V);
    if (ws > s->logits_ws_bytes) {
        dev_free(s, s->logits_ws, s->logits_ws_bytes);
        s->logits_ws = NULL;
        s->logits_ws_bytes = 0;
        vox_status st = dev_alloc(s, &s->logits_ws, ws, err);
        if (st) return st;
        s->logits_ws_bytes = ws;
    }
    const int32_t *chosen_dev = NULL;
    if (chosen) {
        /* after the batch's arrays in the staging buffer (the batch copy has been enqueued) */
        cudaError_t e = cudaEventSynchronize(s->batch_done);
        size_t at = s->batch_ints - (size_t)s->batch_seqs;
        memcpy(s->batch_pinned + at, chosen, (size_t)n * sizeof *chosen);
        if (!e) e = cudaMemcpyAsync(s->b_chosen, s->batch_pinned + at, (size_t)n * sizeof *chosen,
                                    cudaMemcpyHostToDevice, s->stream);
        if (e) return cuda_fail(err, e, "logits");
        cudaEventRecord(s->batch_done, s->stream);
        chosen_dev = s->b_chosen;
    }
    vox_k_logits_stats_rows(s->logits_dev, logits->data, n, V, chosen_dev, k, s->logits_ws, s->stream);
    LAUNCHED(s, "logits_stats");
    cudaError_t e = cudaMemcpyAsync(s->logits_host, s->logits_dev, (size_t)n * sizeof *s->logits_host,
                                    cudaMemcpyDeviceToHost, s->stream);
    if (e) return cuda_fail(err, e, "logits");
    vox_status st = cu_sync(be, err);
    if (st) return st;
    for (int i = 0; i < n; i++) {
        const vox_k_logits_result *r = &s->logits_host[i];
        vox_logits_stats *o = &out[i];
        o->argmax = r->argmax;
        o->argmax_margin = r->max_logit - r->second_logit;
        o->chosen = chosen && chosen[i] >= 0 ? chosen[i] : r->argmax;
        o->chosen_logprob = r->chosen_logit - r->logsumexp;
        o->k = r->k;
        for (int j = 0; j < r->k; j++) {
            o->top_ids[j] = r->top_ids[j];
            o->top_logprobs[j] = r->top_logits[j] - r->logsumexp;
        }
    }
    return VOX_OK;
}

/* ---- timing and lifetime --------------------------------------------------------------------- */

static int cu_mark(vox_backend *be) {
    cuda_state *s = S(be);
    int i = s->n_marks++ % CUDA_MAX_MARKS;
    if (!s->marks[i]) note_error(s, cudaEventCreate(&s->marks[i]), "event");
    note_error(s, cudaEventRecord(s->marks[i], s->stream), "event");
    return i;
}

static double cu_elapsed_ms(vox_backend *be, int a, int b) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, S(be)->marks[a], S(be)->marks[b]) != cudaSuccess) return 0.0;
    return ms;
}

/* What cu_weight allocates for such a tensor: BF16, F32 for the tables kept in float32, or FP8
 * codes with a float32 scale per row. */
static size_t cu_weight_bytes(vox_backend *be, vox_dtype type, int ndim, const int64_t *shape,
                              bool keep_f32) {
    (void)be;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    if (type == VOX_DTYPE_F8_E4M3) /* kept as codes, with a float32 scale per row */
        return n + (ndim > 0 ? (size_t)shape[0] : 1) * sizeof(float);
    return n * vox_dtype_size(keep_f32 ? VOX_DTYPE_F32 : VOX_DTYPE_BF16);
}

static void cu_mem_info(vox_backend *be, size_t *free_bytes, size_t *total_bytes) {
    (void)be;
    if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) *free_bytes = *total_bytes = 0;
}

static void cu_memory(vox_backend *be, size_t *live, size_t *peak) {
    *live = S(be)->live;
    *peak = S(be)->peak;
}

static void cu_bind_thread(vox_backend *be) { cudaSetDevice(S(be)->device); }

static void cu_destroy(vox_backend *be) {
    cuda_state *s = S(be);
    if (!s) {
        free(be);
        return;
    }
    if (s->blas_pending) pthread_join(s->blas_thread, NULL);
    if (vox_env_flag("VOX_GEMM_STATS")) /* is the plan cache big enough for this run? */
        fprintf(stderr, "voxtral: %s: cuBLASLt plans: %ld GEMM calls found theirs, %ld made one (%d "
                "slots), %ld found the cache full\n", s->name, s->plans_found, s->plans_made,
                GEMM_CACHE_SIZE, s->plans_full);
    if (s->device >= 0 && s->device < PDECODE_DEVICES) atomic_fetch_sub(&backends_on_device[s->device], 1);
    cudaSetDevice(s->device); /* this thread may have worked on another device last */
    if (s->stream) cudaStreamSynchronize(s->stream);
    dev_free(s, s->ids_dev, s->ids_dev_cap * sizeof(int32_t));
    dev_free(s, s->logits_ws, s->logits_ws_bytes);
    if (s->stream) cudaStreamSynchronize(s->stream);
    cudaFree(s->attn_ws);
    free(s->attn_ws_at);
    cudaFree(s->pdecode_ws);
    cudaFree(s->skinny_ws);
    cudaFree(s->gemm_ws);
    cudaFree(s->batch_dev);
    cudaFreeHost(s->batch_pinned);
    free(s->batch_host);
    if (s->batch_done) cudaEventDestroy(s->batch_done);
    cudaFree(s->logits_dev);
    cudaFree(s->mel_basis);
    cudaFree(s->mel_window);
    cudaFree(s->mel_filters);
    cudaFreeHost(s->staging_block);
    for (int i = 0; i < STAGING_BUFFERS; i++)
        if (s->staging_done[i]) cudaEventDestroy(s->staging_done[i]);
    free(s->pieces);
    cudaFreeHost(s->ids_host);
    cudaFreeHost(s->logits_host);
    if (s->ids_done) cudaEventDestroy(s->ids_done);
    for (int i = 0; i < CUDA_MAX_MARKS; i++)
        if (s->marks[i]) cudaEventDestroy(s->marks[i]);
    if (s->lt) cublasLtDestroy(s->lt);
    if (s->pool && !s->plain_malloc) cudaMemPoolTrimTo(s->pool, 0);
    if (s->stream) cudaStreamDestroy(s->stream);
    free(s);
    free(be);
}

/* Reader threads for loading weights (VOX_LOAD_THREADS=N, 0 for the one-by-one upload): half
 * the cores, 1 to STAGING_BUFFERS / 2. One thread reads about 5-10 GB/s from the page cache;
 * a PCIe 5 link takes about 50 GB/s, so a few threads keep it busy. */
static int default_load_threads(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t half = cores > 1 ? (size_t)cores / 2 : 1;
    if (half > STAGING_BUFFERS / 2) half = STAGING_BUFFERS / 2;
    return (int)vox_env_size("VOX_LOAD_THREADS", half, 0, STAGING_BUFFERS / 2);
}

vox_status vox_backend_cuda_create(int device, vox_backend **out, vox_error *err) {
    *out = NULL;
    double t0 = vox_wall_ms();
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return vox_fail(err, VOX_ERR_DEVICE, "cuda: no usable CUDA driver or device (%s); use --device cpu",
                        cudaGetErrorString(e));
    if (device >= count)
        return vox_fail(err, VOX_ERR_DEVICE, "cuda:%d: only %d CUDA device(s) present", device, count);
    vox_backend *be = calloc(1, sizeof *be);
    cuda_state *s = calloc(1, sizeof *s);
    if (!be || !s) {
        free(be);
        free(s);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    be->impl = s;
    be->destroy = cu_destroy;
    be->bind_thread = cu_bind_thread;
    s->device = device;
    if (device >= 0 && device < PDECODE_DEVICES) atomic_fetch_add(&backends_on_device[device], 1);
    snprintf(s->name, sizeof s->name, "cuda:%d", device);
    s->no_matvec = vox_env_flag("VOX_NO_MATVEC");
    s->skinny = vox_env_flag("VOX_SKINNY_GEMM");
    s->fp8_separate = vox_env_flag("VOX_FP8_SEPARATE");
    const char *decode = getenv("VOX_DECODE");
    s->no_pdecode = decode && strcmp(decode, "graph") == 0;
    /* Decode-only steps of up to 4 rows take the persistent kernel: end to end it beat op by
     * op by 13% at 2 files and 19% at 4, and lost by 19% at 6 and 21% at 8 (H100, full size,
     * bench/NOTES-2026-12-05e.md); VOX_PDECODE_ROWS=1..8 sets the limit */
    s->pdecode_rows =
        (int)vox_env_size("VOX_PDECODE_ROWS", PDECODE_DEFAULT_ROWS, 1, VOX_K_PDECODE_MAX_ROWS);
    const char *tune = getenv("VOX_PDECODE_TUNE");
    s->pdecode_tune_report = tune && strcmp(tune, "report") == 0;
    s->pdecode_tune_pending = vox_k_pdecode_inflight_env() < 0 && tune && *tune && strcmp(tune, "0") != 0;
    s->plain_malloc = vox_env_flag("VOX_CUDA_PLAIN_MALLOC");
    s->host_trace_ms = (double)vox_env_size("VOX_TRACE_HOST_MS", 0, 0, 1000000);
    s->host_last_ms = vox_wall_ms();
    s->load_threads = default_load_threads();
    s->load_span = vox_env_size("VOX_LOAD_CHUNK_BYTES", STAGING_BYTES, 1, STAGING_BYTES);
    /* VOX_GEMM_WORKSPACE=0 leaves cuBLASLt only algorithms that need no workspace (no split-K
     * partials, no stream-K fix-up), for compute-sanitizer runs */
    s->gemm_ws_bytes = vox_env_size("VOX_GEMM_WORKSPACE", GEMM_WORKSPACE_BYTES, 0, GEMM_WORKSPACE_BYTES);
    s->no_split_from = (int64_t)vox_env_size("VOX_GEMM_NO_SPLIT_FROM", GEMM_NO_SPLIT_FROM, 0, INT32_MAX);
    s->no_split_rows = (int64_t)vox_env_size("VOX_GEMM_NO_SPLIT_ROWS", GEMM_NO_SPLIT_ROWS, 0, INT32_MAX);

#define TRY(call, what)                                                                         \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            vox_status st_ = cuda_fail(err, e_, what);                                          \
            cu_destroy(be);                                                                     \
            return st_;                                                                         \
        }                                                                                       \
    } while (0)

    /* setting the device creates its context (CUDA 12 on) */
    TRY(cudaSetDevice(device), s->name);
    struct cudaDeviceProp prop;
    TRY(cudaGetDeviceProperties(&prop, device), s->name);
    s->cc = prop.major * 10 + prop.minor;
    snprintf(s->gpu, sizeof s->gpu, "%s, compute capability %d.%d", prop.name, prop.major, prop.minor);
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess)
        snprintf(s->product, sizeof s->product, "%s", prop.name);
    TRY(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "stream");
    if (!s->plain_malloc) {
        TRY(cudaDeviceGetDefaultMemPool(&s->pool, device), "memory pool");
        uint64_t keep = UINT64_MAX; /* never give freed memory back to the driver mid-run */
        TRY(cudaMemPoolSetAttribute(s->pool, cudaMemPoolAttrReleaseThreshold, &keep), "memory pool");
    }
    double t1 = vox_wall_ms();
    be->load.context_ms = t1 - t0;
    s->load = &be->load;
    s->blas_pending = pthread_create(&s->blas_thread, NULL, blas_start, s) == 0;
    if (!s->blas_pending) blas_start(s); /* no thread: here and now */
    double t2 = vox_wall_ms();
    TRY(cudaMalloc(&s->gemm_ws, GEMM_WORKSPACE_BYTES), "GEMM workspace");
    vox_initcheck_mark(s->stream, s->gemm_ws, GEMM_WORKSPACE_BYTES); /* cuBLASLt's alone */
    TRY(cudaEventCreateWithFlags(&s->batch_done, cudaEventDisableTiming), "event");
    TRY(cudaMallocHost((void **)&s->staging_block, (size_t)STAGING_BUFFERS * STAGING_BYTES),
        "pinned staging");
    for (int i = 0; i < STAGING_BUFFERS; i++) {
        s->staging[i] = s->staging_block + (size_t)i * STAGING_BYTES;
        TRY(cudaEventCreateWithFlags(&s->staging_done[i], cudaEventDisableTiming), "event");
    }
    TRY(cudaEventCreateWithFlags(&s->ids_done, cudaEventDisableTiming), "event");
    be->load.staging_ms = vox_wall_ms() - t2; /* with the GEMM workspace */
#undef TRY

    be->name = s->name;
    be->product = s->product[0] ? s->product : NULL;
    be->act_type = VOX_DTYPE_BF16;
    /* Groups of 32 chunks take 4-7% less encoder time than groups of 8 on the H200 (larger
     * GEMMs), for ~1.4 GB more workspace; the prompt steps after them measured 2% slower, so
     * the net is under 1% of a batched run's device time (bench/NOTES-2026-12-03c.md). */
    be->encoder_group = 32;
    be->alloc = cu_alloc;
    be->free = cu_free;
    be->weight = cu_weight;
    be->free_weight = cu_free_weight;
    be->weight_bytes = cu_weight_bytes;
    be->weights_begin = cu_weights_begin;
    be->weights_end = cu_weights_end;
    be->upload_f32 = cu_upload_f32;
    be->download_f32 = cu_download_f32;
    be->sync = cu_sync;
    be->matmul = cu_matmul;
    be->layer_norm = cu_layer_norm;
    be->rms_norm = cu_rms_norm;
    be->gelu = cu_gelu;
    be->swiglu = cu_swiglu;
    be->add = cu_add;
    be->add_rows_f32 = cu_add_rows_f32;
    be->conv1d_k3 = cu_conv1d_k3;
    be->batch_set = cu_batch_set;
    be->batch_reserve = cu_batch_reserve;
    be->embed_batch = cu_embed_batch;
    be->rope_cache = cu_rope_cache;
    be->paged_attention = cu_paged_attention;
    be->gather_rows = cu_gather_rows;
    be->attention = cu_attention;
    be->embed = cu_embed;
    be->copy = cu_copy;
    be->log_mel = cu_log_mel;
    be->projection = cu_projection;
    be->decode_fused = cu_decode_fused;
    be->graph_begin = cu_graph_begin;
    be->graph_end = cu_graph_end;
    be->graph_replay = cu_graph_replay;
    be->graph_free = cu_graph_free;
    be->logits_stats = cu_logits_stats;
    be->mark = cu_mark;
    be->elapsed_ms = cu_elapsed_ms;
    be->mem_info = cu_mem_info;
    be->memory = cu_memory;
    *out = be;
    return VOX_OK;
}

#endif /* VOX_HAVE_CUDA */
