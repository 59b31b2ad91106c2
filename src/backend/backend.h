/* The operation table the forward pass is written against.
 *
 * pipeline/ computes the model once, in terms of these operations; each backend implements them:
 *   cpu.c   portable C, float32 activations, weights used in place from the mapped file (F32,
 *           BF16 or F16, converted on the fly). The readable reference, and the path CI runs.
 *   cuda.c  the product: kernels/ plus cuBLAS, BF16 activations, one stream.
 *
 * Tensors are plain descriptors (data pointer, dtype, shape) of row-major memory owned by the
 * backend. A "view" is a descriptor into another tensor's memory (rows of a matrix, one layer of
 * the KV cache); views are never freed. Compute operations enqueue work and cannot fail (shape
 * errors are bugs and trip VOX_ASSERT); a backend reports asynchronous failures at sync().
 *
 * Shapes below use [rows, cols]; M = rows of activations, C = channels. */
#ifndef VOX_BACKEND_BACKEND_H
#define VOX_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_TENSOR_MAX_DIMS 4

typedef struct {
    void *data; /* host (cpu) or device (cuda) memory */
    vox_dtype dtype;
    int ndim;
    int64_t shape[VOX_TENSOR_MAX_DIMS];
    /* F8_E4M3 weights only (common/fp8.h): float32 scale of each row, in the same memory as
     * data; a row's values are its codes' values times its scale. NULL otherwise. */
    float *scale;
} vox_tensor;

size_t vox_tensor_numel(const vox_tensor *t);
size_t vox_tensor_nbytes(const vox_tensor *t);
/* Rows [row0, row0 + n) of a tensor seen as [shape[0], rest]: a view (with their scales). */
vox_tensor vox_tensor_rows(const vox_tensor *t, int64_t row0, int64_t n);
/* The same memory seen with another shape (same element count): a view. */
vox_tensor vox_tensor_reshape2(const vox_tensor *t, int64_t rows, int64_t cols);

/* What the logits of one position say: the argmax, the log-probability (log-softmax in fp32
 * over the full vocabulary) of a chosen id, and the k most likely ids with theirs. */
#define VOX_MAX_TOP_K 20
typedef struct {
    int32_t argmax;
    float argmax_margin; /* top-1 logit minus top-2 logit */
    int32_t chosen;      /* the id whose log-probability was asked for (argmax if none) */
    float chosen_logprob;
    int k;
    int32_t top_ids[VOX_MAX_TOP_K];
    float top_logprobs[VOX_MAX_TOP_K];
} vox_logits_stats;

typedef struct vox_backend vox_backend;

/* A mapped file that weight() sources may point into (see weights_begin): byte i of the file is
 * map[i]; fd is open for reading. */
typedef struct {
    const char *path;
    int fd;
    const void *map;
    size_t size;
} vox_weight_file;

/* Where the backend's part of loading a model went (wall clock, ms): what its creation and the
 * weights cost. cpu leaves it zero (its weights are views). */
typedef struct {
    double context_ms;    /* the driver, the device's context, the stream and memory pool */
    double blas_ms;       /* loading cuBLASLt and its handle (a thread beside the weights) */
    double blas_wait_ms;  /* waiting for that thread once the weights were there */
    double staging_ms;    /* pinned host staging buffers */
    double alloc_ms;      /* device memory for the weights */
    double serial_ms;     /* weights weight() uploaded itself, one by one: those converted on
                             the host (F32/F16 files); all of them when VOX_LOAD_THREADS=0 */
    double bulk_ms;       /* weights_end: the parallel reads and uploads, start to finish */
    double read_ms;       /*   time in pread, mean over the reader threads */
    double buffer_wait_ms; /*  waiting for a free staging buffer (uploads behind), mean */
    double upload_ms;     /*   device time with a host-to-device copy in flight */
    double upload_after_reads_ms; /* of which after the last read ended (not overlapped) */
    double bytes;         /*   bytes read and uploaded */
    int threads;          /*   reader threads; 0: every weight uploaded by weight() itself */
} vox_load_stats;

/* One forward step of the text decoder over rows from many sequences (pipeline/ builds it; the
 * engine decides which sequences take part). Rows of one sequence are consecutive; the first
 * n_decode sequences are decode steps (one row each: rows 0 .. n_decode - 1, fed token ids[i]),
 * the rest carry chunks of their prompts. Keys and values live in a paged cache: a layer's pool
 * is [n_blocks * block_size, kv_heads * head_dim], and position j of sequence s is at pool row
 * tables[s * table_width + j / block_size] * block_size + j % block_size. */
typedef struct {
    int n_rows, n_seqs, n_decode;
    const int32_t *ids;        /* [n_decode] token ids of the decode rows */
    const int32_t *row_pos;    /* [n_rows] position of each row */
    const int32_t *row_slot;   /* [n_rows] pool row its key and value are written to */
    const int32_t *seq_row0;   /* [n_seqs + 1] first row of each sequence; [n_seqs] = n_rows */
    const int32_t *seq_len;    /* [n_seqs] keys the sequence attends to: its last position + 1 */
    const int32_t *tables;     /* [n_seqs * table_width] block ids */
    int table_width, block_size;
    const int32_t *logit_rows; /* [n_logits] rows whose logits are wanted, in output order */
    int n_logits;
} vox_batch;

/* A decoder projection y = out(in(x) @ w^T), x [M, K], w [N, K], as one operation:
 *   norm_w   when set, x is first replaced by rms_norm(x, norm_w, eps)
 *   bias     STORE and ADD only: added to the product, as matmul()'s bias
 *   out      STORE: y [M, N] = the product
 *            ADD: y [M, N] += the product (a residual add; the separate operations round the
 *            product, then the sum; a backend may round once, after the sum)
 *            SWIGLU: y [M, N/2] = swiglu(the product), w being gate|up
 *            ROPE_CACHE: rope_cache(y, k_pool, v_pool, the product, n_heads, n_kv_heads,
 *            head_dim, theta) for the rows of the current batch, w being q|k|v
 * Each equals the separate operations it replaces, up to the order of the products' sums. */
typedef enum {
    VOX_PROJ_STORE,
    VOX_PROJ_ADD,
    VOX_PROJ_SWIGLU,
    VOX_PROJ_ROPE_CACHE
} vox_projection_out;
typedef struct vox_projection {
    vox_tensor *y;
    const vox_tensor *x, *w;
    const vox_tensor *norm_w;
    const vox_tensor *bias;
    float eps;
    vox_projection_out out;
    vox_tensor *k_pool, *v_pool; /* ROPE_CACHE */
    int n_heads, n_kv_heads, head_dim;
    double theta;
    /* Scratch the backend may use (vox_project sets them; NULL where the caller has none):
     * h [rows of x, cols of x] for the normalised input, tmp [rows of x, n] for the product
     * before its epilogue (ADD, SWIGLU, ROPE_CACHE). */
    vox_tensor *h, *tmp;
} vox_projection;

/* One decode step of the batch's sequences, each decoding one row (n_decode = n_rows = n_seqs =
 * n_logits, sequence i at row i), with every decoder layer and the lm_head in one operation
 * (decode_fused): the weights of each layer, its KV pools, and what the step reads and writes.
 * The backend returns false, doing nothing, where it has no such operation for the step (its
 * rows, the model's shape, the device); the caller then runs the step op by op. */
typedef struct {
    const vox_tensor *attn_norm, *qkv, *o, *ffn_norm, *gate_up, *down;
    const vox_tensor *k_pool, *v_pool;
} vox_fused_layer;
typedef struct vox_fused_decode {
    const vox_fused_layer *layers;
    int n_layers, heads, kv_heads, head_dim;
    float eps, attn_scale;
    double theta;
    const vox_tensor *x;          /* [rows, hidden]: the embedded tokens (read) */
    const vox_tensor *final_norm, *lm_head;
    vox_tensor *logits;           /* [rows, vocab] (written) */
} vox_fused_decode;

/* The most rows of a decode-only step the backends take as one fused operation by default (the
 * cuda backend's persistent kernel, VOX_PDECODE_ROWS's default, and its matvec kernels); the
 * graph plan keeps such steps off the op-by-op recordings (pipeline/graphs.c). */
#define VOX_FUSED_DECODE_ROWS 4

struct vox_backend {
    const char *name;   /* "cpu" or "cuda:N" */
    const char *product; /* the device's own name ("NVIDIA H200"), or NULL */
    vox_dtype act_type; /* dtype of activations (F32 on cpu, BF16 on cuda) */
    int encoder_group;  /* chunks the audio encoder runs at once, unless VOX_ENCODER_GROUP says */
    void *impl;

    void (*destroy)(vox_backend *be);
    /* Makes the calling thread work on this backend's device (cuda: the current device is a
     * property of each host thread). NULL where there is nothing to do. */
    void (*bind_thread)(vox_backend *be);

    /* ---- memory ---- */
    /* Allocates t->data for t's dtype and shape (set by the caller). */
    vox_status (*alloc)(vox_backend *be, vox_tensor *t, vox_error *err);
    void (*free)(vox_backend *be, vox_tensor *t);
    /* Makes a weight from host memory of type src_type (a mapped file): cpu keeps a view of it,
     * cuda uploads it converted to its weight type (BF16), or to F32 when keep_f32 (tables the
     * reference keeps in float32, such as the encoder positions). F8_E4M3 weights (the text
     * decoder's linear layers) stay F8_E4M3 with `scale`, one float32 per row (shape[0]);
     * scale is NULL for every other type. A backend that cannot run FP8 refuses them here. */
    vox_status (*weight)(vox_backend *be, vox_tensor *dst, const void *src, vox_dtype src_type,
                         int ndim, const int64_t *shape, bool keep_f32, const float *scale,
                         vox_error *err);
    /* Releases what weight() made (nothing for a view). */
    void (*free_weight)(vox_backend *be, vox_tensor *t);
    /* Device memory weight() takes for a tensor of that type and shape: the model checks that
     * its weights fit before it uploads any. NULL where weights take none (cpu: views). */
    size_t (*weight_bytes)(vox_backend *be, vox_dtype src_type, int ndim, const int64_t *shape,
                           bool keep_f32);
    /* Optional (NULL where weight() is cheap: cpu's views). Between weights_begin and
     * weights_end, weight() may only allocate a weight whose source lies in one of `files` and
     * needs no conversion, and remember where its bytes are; weights_end(copy = true) then
     * reads all of them from the files on several threads into pinned buffers and uploads
     * them while the next are read. The weights hold their values once weights_end returned
     * VOX_OK; copy = false forgets the remembered copies (a load that failed before the end).
     * The files must stay open until weights_end returns. */
    void (*weights_begin)(vox_backend *be, const vox_weight_file *files, int n_files);
    vox_status (*weights_end)(vox_backend *be, bool copy, vox_error *err);
    /* Host float32 -> t (converted to t's dtype), n elements from the start of t. */
    void (*upload_f32)(vox_backend *be, vox_tensor *t, const float *src, size_t n);
    /* t -> host float32, n elements from the start of t (synchronises). */
    vox_status (*download_f32)(vox_backend *be, float *dst, const vox_tensor *t, size_t n,
                               vox_error *err);
    /* Waits for all enqueued work; reports what went wrong asynchronously. */
    vox_status (*sync)(vox_backend *be, vox_error *err);

    /* ---- compute ---- */
    /* Log-mel features (voxtral-spec.md section 1) of 16 kHz mono samples into features
     * [n_chunks, mel, 3000] of the activation type (cuda: bf16, as the reference casts them). */
    vox_status (*log_mel)(vox_backend *be, vox_tensor *features, const float *samples,
                          size_t n_samples, vox_error *err);
    /* y[M,N] = x[M,K] @ w[N,K]^T (+ bias[N]). With F8_E4M3 weights, the fp8_dynamic scheme
     * (common/fp8.h): each row of x is quantized to E4M3 with its own scale s_x, the codes'
     * products are summed in float32 and the sum times s_x * s_w[n] (so a row's result does
     * not depend on the other rows). */
    void (*matmul)(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                   const vox_tensor *bias);
    /* y[M,C] = LayerNorm(x[M,C]) * w + b (statistics in fp32). y may alias x. */
    void (*layer_norm)(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                       const vox_tensor *b, float eps);
    /* y[M,C] = x * rsqrt(mean(x^2) + eps) * w (statistics in fp32). y may alias x. */
    void (*rms_norm)(vox_backend *be, vox_tensor *y, const vox_tensor *x, const vox_tensor *w,
                     float eps);
    /* x = GELU(x), exact (erf) form, in place. */
    void (*gelu)(vox_backend *be, vox_tensor *x);
    /* y[M,F] = silu(gate) * up, from gate_up [M, 2F] holding (gate | up) in each row. */
    void (*swiglu)(vox_backend *be, vox_tensor *y, const vox_tensor *gate_up);
    /* y = a + b, same shapes. y may alias a or b. */
    void (*add)(vox_backend *be, vox_tensor *y, const vox_tensor *a, const vox_tensor *b);
    /* x[B*T, C] += p[T, C] for each of the B blocks of T rows (p is F32; the sum is formed in
     * fp32 and rounded once, as transformers adds the encoder positions). */
    void (*add_rows_f32)(vox_backend *be, vox_tensor *x, const vox_tensor *p);
    /* Convolution with kernel 3, padding 1, stride 1 or 2, over B independent sequences:
     * x is [B, C_in, T_in] when x_channels_first, else [B*T_in, C_in] (time-major);
     * y is [B*T_out, C_out] (time-major), T_out = (T_in - 1) / stride + 1; w [C_out, C_in, 3]. */
    void (*conv1d_k3)(vox_backend *be, vox_tensor *y, const vox_tensor *x, bool x_channels_first,
                      int batch, int t_in, const vox_tensor *w, const vox_tensor *bias, int stride);
    /* ---- the decoder over a batch (vox_batch) ---- */
    /* Makes b the current batch: the operations below read its rows and sequences until the
     * next batch_set. The arrays are copied (cuda: to fixed device buffers, so that a recorded
     * step replays with the new batch); b must fit the capacity given at creation time
     * (batch_reserve). */
    vox_status (*batch_set)(vox_backend *be, const vox_batch *b, vox_error *err);
    /* Sizes what batch_set copies to: at most max_rows rows, max_seqs sequences, table_width
     * blocks a sequence, block_size positions a block. Not during a recording. */
    vox_status (*batch_reserve)(vox_backend *be, int max_rows, int max_seqs, int table_width,
                                int block_size, int n_heads, int head_dim, vox_error *err);
    /* y [n_decode, C] = table[ids] of the current batch. */
    void (*embed_batch)(vox_backend *be, vox_tensor *y, const vox_tensor *table);
    /* From qkv [n_rows, (H + 2 Hkv) * D] = (q | k | v) per row: q_out [n_rows, H*D] = rope(q);
     * pool row row_slot[r] of k_pool and v_pool [rows, Hkv*D] = rope(k) and v of row r.
     * Rotary embedding with the rotate-half pairing (dim i with i + D/2), inv_freq_i =
     * theta^(-2i/D), row r at position row_pos[r]. */
    void (*rope_cache)(vox_backend *be, vox_tensor *q_out, vox_tensor *k_pool, vox_tensor *v_pool,
                       const vox_tensor *qkv, int n_heads, int n_kv_heads, int head_dim,
                       double theta);
    /* Causal attention of every sequence of the current batch against its paged keys and values:
     * out [n_rows, H*D] like q; row r of sequence s (position row_pos[r]) sees positions
     * 0 .. row_pos[r] of s. Query head h uses key/value head h / (H/Hkv). fp32 softmax. */
    void (*paged_attention)(vox_backend *be, vox_tensor *out, const vox_tensor *q,
                            const vox_tensor *k_pool, const vox_tensor *v_pool, int n_heads,
                            int n_kv_heads, int head_dim, float scale);
    /* y [n_logits, C] = rows logit_rows of x [n_rows, C]. */
    void (*gather_rows)(vox_backend *be, vox_tensor *y, const vox_tensor *x);
    /* Scaled dot-product attention over `batch` independent sequences, fp32 softmax.
     * q [batch*Tq, Hq*D], k and v [batch*S, Hkv*D] with S >= Tk rows a sequence (a cache may
     * pass all its rows; only the first Tk are attended), out like q.
     * Query head h uses key/value head h / (Hq/Hkv). causal: query row i (absolute position
     * q_pos0 + i) sees key rows j <= q_pos0 + i; otherwise all Tk keys. */
    void (*attention)(vox_backend *be, vox_tensor *out, const vox_tensor *q, const vox_tensor *k,
                      const vox_tensor *v, int batch, int t_q, int t_k, int n_heads,
                      int n_kv_heads, int head_dim, float scale, bool causal, int64_t q_pos0);
    /* y[n, C] = table[ids[i]] for host ids. */
    void (*embed)(vox_backend *be, vox_tensor *y, const vox_tensor *table, const int32_t *ids,
                  size_t n);
    /* dst = src, same element count and dtype (views allowed). */
    void (*copy)(vox_backend *be, vox_tensor *dst, const vox_tensor *src);
    /* Statistics of each row of logits [n, V] (see vox_logits_stats) into out[0 .. n-1]; chosen
     * (n entries, or NULL) gives the id each row reports, < 0 meaning the argmax; k <= 20.
     * Synchronises: the only device-to-host traffic of a decode step. */
    vox_status (*logits_stats)(vox_backend *be, const vox_tensor *logits, const int32_t *chosen,
                               int k, vox_logits_stats *out, vox_error *err);

    /* ---- fused decoder projections (optional: NULL where the backend has none) ---- */
    /* One projection with what surrounds it fused in (see vox_projection). Returns false,
     * enqueuing nothing, when the backend does not take it (the cuda backend takes a few rows,
     * i.e. decode steps, residual adds of any size, and FP8 weights at any size, using the
     * scratch tensors h and tmp); the caller then runs the separate operations (vox_project in
     * pipeline/ does both). */
    bool (*projection)(vox_backend *be, const struct vox_projection *p);
    /* The decoder layers and the lm_head of a decode-only step (the current batch: every
     * sequence decoding one row), as one operation: the same results as the layers run op by
     * op, up to the order of fp32 sums. Returns false, enqueuing nothing, when the backend does
     * not take it (the cuda backend: a persistent kernel on sm_90 for bf16 and FP8 decoders, one
     * to VOX_PDECODE_ROWS rows (default 4, at most 8); VOX_DECODE=graph switches it off); the
     * caller then runs the layers op by op. */
    bool (*decode_fused)(vox_backend *be, const vox_fused_decode *f);

    /* ---- graphs (optional: NULL where the backend has none) ---- */
    /* Between graph_begin and graph_end, operations are recorded instead of run: one decode
     * step over the current batch's shape. What batch_set copies is not frozen: graph_replay
     * runs the step over the current batch (same n_rows, n_seqs and n_decode). */
    void (*graph_begin)(vox_backend *be);
    vox_status (*graph_end)(vox_backend *be, void **graph, vox_error *err);
    vox_status (*graph_replay)(vox_backend *be, void *graph, vox_error *err);
    void (*graph_free)(vox_backend *be, void *graph);

    /* ---- timing ---- */
    /* Records a time mark in stream order; returns its index. elapsed_ms(a, b) after sync(). */
    int (*mark)(vox_backend *be);
    double (*elapsed_ms)(vox_backend *be, int a, int b);
    /* Free and total bytes of the device's memory (cpu: available and total RAM). */
    void (*mem_info)(vox_backend *be, size_t *free_bytes, size_t *total_bytes);
    /* Live and peak bytes held by the allocator (tensors and weights). */
    void (*memory)(vox_backend *be, size_t *live, size_t *peak);

    vox_load_stats load; /* filled by creation, weight() and weights_end */
};

/* Creates a backend by device name: "cpu", "cuda", "cuda:N". */
vox_status vox_backend_create(const char *device, vox_backend **out, vox_error *err);
/* True when a CUDA device is usable (driver present, at least one GPU). */
bool vox_backend_cuda_available(void);
/* Usable CUDA devices (0 without the CUDA backend). */
int vox_backend_cuda_count(void);
void vox_backend_destroy(vox_backend *be);

/* Helpers that allocate a fresh tensor with the given shape. */
vox_status vox_tensor_new(vox_backend *be, vox_tensor *t, vox_dtype dtype, int ndim,
                          const int64_t *shape, vox_error *err);
vox_status vox_tensor_new2(vox_backend *be, vox_tensor *t, vox_dtype dtype, int64_t rows,
                           int64_t cols, vox_error *err);
void vox_tensor_free(vox_backend *be, vox_tensor *t);
/* Frees n tensors laid out one after another (a workspace struct made only of vox_tensor). */
void vox_tensors_free(vox_backend *be, vox_tensor *t, size_t n);

vox_status vox_backend_cpu_create(vox_backend **out, vox_error *err);
#ifdef VOX_HAVE_CUDA
vox_status vox_backend_cuda_create(int device, vox_backend **out, vox_error *err);
#endif

#ifdef __cplusplus
}
#endif
#endif
