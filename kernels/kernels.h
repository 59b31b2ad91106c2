/* The CUDA kernels' C interface: one launcher per operation, each enqueued on `stream`.
 *
 * Types: "bf16" pointers hold __nv_bfloat16 (raw 16-bit words to C), "f32" hold float. All
 * matrices are row-major and contiguous. Arithmetic is fp32 inside every kernel (statistics,
 * softmax, accumulation); each output is rounded to bf16 once, as torch does for the same op.
 * Launchers never synchronise and never allocate; a launch error is left for the caller's next
 * cudaGetLastError / stream check.
 *
 * GEMMs are cuBLASLt's, called by the backend; only the decode-shaped projections (a few rows,
 * one pass over the weights with the operations around them fused) are here (matvec.cu).
 *
 * Launchers marked [PDL] may start before the previous kernel in the stream has finished
 * (programmatic dependent launch on sm_90+; common.cuh says what that allows). */
#ifndef VOX_KERNELS_H
#define VOX_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device scalars (kernels/scalars.cu) ---- */
void vox_k_fill_i32(int32_t *dst, int32_t value, int n, cudaStream_t stream);

/* ---- GEMM epilogue (kernels/bias.cu) ---- */
/* y[m, n] = bf16(acc[m, n] + bias[n]) (bias may be NULL): one rounding. */
void vox_k_add_bias_round(void *y_bf16, const float *acc, const void *bias_bf16, int64_t m,
                          int64_t n, cudaStream_t stream);

/* ---- FP8 scheme around cuBLASLt's FP8 GEMMs (kernels/fp8.cu; common/fp8.h is the scheme) ---- */
/* For each of `rows` rows of x bf16 [rows, k]: scale[r] = max|x_r| / 448 (1 for a zero row) and
 * q[r, :] = E4M3 codes of clamp(x_r / scale[r], -448, 448), round to nearest even: the codes and
 * scales common/fp8.c's vox_fp8_quantize_row gives for the same values. */
void vox_k_fp8_quantize_rows(uint8_t *q, float *scale, const void *x_bf16, int64_t rows, int64_t k,
                             cudaStream_t stream);
/* The scheme's scales applied to a float32 GEMM result acc [m, n] of codes by what consumes the
 * product P = bf16(acc[i, j] * (x_scale[i] * w_scale[j])), in one pass (cuBLASLt's plain FP8
 * GEMMs stream the weights faster than its scaled ones at few rows, NOTES-2026-12-02-fp8-fused):
 *   VOX_K_FP8_STORE    y [m, n] = P
 *   VOX_K_FP8_ADD      y [m, n] = bf16(y + P), as vox_k_add(y, y, P)
 *   VOX_K_FP8_SWIGLU   y [m, n/2] = vox_k_swiglu of P = (gate | up) per row (n even)
 * Each output equals, bit for bit, P stored as bf16 and then consumed by that kernel. */
typedef enum { VOX_K_FP8_STORE, VOX_K_FP8_ADD, VOX_K_FP8_SWIGLU } vox_k_fp8_consumer;
void vox_k_fp8_scale_apply(vox_k_fp8_consumer op, void *y_bf16, const float *acc,
                           const float *x_scale, const float *w_scale, int64_t m, int64_t n,
                           cudaStream_t stream);

/* ---- log-mel front end (kernels/mel.cu; the DFT and mel products are GEMMs by the caller) ---- */
/* frames [nt, 400] f32 for frames t0.. of the padded signal x [n]: periodic-Hann-windowed,
 * centred, reflect-padded at both ends of x. */
void vox_k_mel_frames(float *frames, const float *x, int64_t n, int64_t t0, int64_t nt,
                      const float *window, cudaStream_t stream);
/* power [nt, 201] = re^2 + im^2 of spec [nt, 402] laid out as (201 cosine sums | 201 sine sums). */
void vox_k_mel_power(float *power, const float *spec, int64_t nt, cudaStream_t stream);
/* logmel [chunks, 128, 3000] f32 (chunk-major) at frames t0.. = log10(max(mel [nt, 128], 1e-10));
 * atomically raises *max_key (an order-preserving encoding of the float maximum; start at 0). */
void vox_k_mel_log(float *logmel, const float *mel, int64_t t0, int64_t nt, unsigned *max_key,
                   cudaStream_t stream);
/* out[i] = (max(logmel[i], max - 8) + 4) / 4, as bf16 (out_is_bf16) or f32. */
void vox_k_mel_finish(void *out, int out_is_bf16, const float *logmel, int64_t n,
                      const unsigned *max_key, cudaStream_t stream);

/* ---- conversions and elementwise ---- */
void vox_k_f32_to_bf16(void *dst_bf16, const float *src, int64_t n, cudaStream_t stream);
void vox_k_bf16_to_f32(float *dst, const void *src_bf16, int64_t n, cudaStream_t stream);
/* x = GELU(x), exact erf form, in place. */
void vox_k_gelu(void *x_bf16, int64_t n, cudaStream_t stream);
/* y = a + b (y may alias a or b). */
void vox_k_add(void *y_bf16, const void *a_bf16, const void *b_bf16, int64_t n, cudaStream_t stream);
/* x[r, c] = bf16(float(x[r, c]) + p[r % t, c]) for r < rows: x bf16 [rows, C], p f32 [t, C]. */
void vox_k_add_rows_f32(void *x_bf16, const float *p, int64_t rows, int64_t t, int64_t c,
                        cudaStream_t stream);

/* ---- fused decoder operations (kernels/fused.cu) ---- */
/* From qkv [t, (H + 2 Hkv) * D] (q | k | v): q_out [t, H*D] = rope(q), k_cache rows
 * [*pos_dev, *pos_dev + t) = rope(k), v_cache rows = v; row r at position *pos_dev + r,
 * rotate-half pairing, transformers' rounding steps (see fused.cu). With n_kv_heads = 0 it is
 * RoPE alone, and q_out may be qkv (in place). */
void vox_k_qkv_rope_cache(void *q_out, void *k_cache, void *v_cache, const void *qkv, int64_t t,
                          int n_heads, int n_kv_heads, int head_dim, const int64_t *pos_dev,
                          double theta, cudaStream_t stream);
/* As vox_k_qkv_rope_cache, but row r is at position row_pos[r] and its rotated key and its value
 * go to physical row row_slot[r] of k_pool / v_pool (device int32 arrays of t entries; the
 * slots of one call must be distinct). Same rounding steps: row r's outputs equal, bit for bit,
 * those of vox_k_qkv_rope_cache on that row alone at *pos_dev = row_pos[r]. */
void vox_k_qkv_rope_cache_rows(void *q_out, void *k_pool, void *v_pool, const void *qkv, int64_t t,
                               int n_heads, int n_kv_heads, int head_dim, const int32_t *row_pos,
                               const int32_t *row_slot, double theta, cudaStream_t stream);
/* y [rows, f] = bf16(bf16(silu(gate)) * up) with gate_up [rows, 2f] = (gate | up) per row. */
void vox_k_swiglu(void *y, const void *gate_up, int64_t rows, int64_t f, cudaStream_t stream);

/* ---- normalisation ---- */
/* LayerNorm over the last dim, fp32 statistics: y = bf16((x - mean) * rstd * w + b). y may alias x. */
void vox_k_layer_norm(void *y_bf16, const void *x_bf16, const void *w_bf16, const void *b_bf16,
                      int64_t rows, int64_t c, float eps, cudaStream_t stream);
/* RMSNorm as transformers' LlamaRMSNorm: h = bf16(x * rsqrt(mean(x^2) + eps)) (fp32 inside),
 * y = bf16(w * h). y may alias x. */
void vox_k_rms_norm(void *y_bf16, const void *x_bf16, const void *w_bf16, int64_t rows, int64_t c,
                    float eps, cudaStream_t stream);
/* An FP8 projection's input in one pass (norm.cu's vector path): each row as vox_k_rms_norm
 * makes it (with w_bf16; with w_bf16 NULL, x's row as it is), written to y_bf16 unless that is
 * NULL, and its E4M3 codes q [rows, c] and scale [rows] as vox_k_fp8_quantize_rows gives for
 * those bf16 values. Returns 0, enqueuing nothing, where the vector path does not take the shape
 * (c % 8, c > 32768, x, w or y not 16-byte or q not 8-byte aligned): the caller then runs the
 * two kernels. */
int vox_k_rms_norm_fp8(uint8_t *q, float *scale, void *y_bf16, const void *x_bf16,
                       const void *w_bf16, int64_t rows, int64_t c, float eps, cudaStream_t stream);

/* ---- convolution (as im2col + GEMM) ---- */
/* cols [batch * t_out, c_in * 3] with cols[b*t_out + t, ci*3 + k] = x at time t*stride + k - 1
 * (zero outside [0, t_in)), x being [batch, c_in, t_in] (channels_first) or [batch*t_in, c_in]. */
void vox_k_im2col_k3(void *cols_bf16, const void *x_bf16, int channels_first, int batch,
                     int c_in, int t_in, int stride, cudaStream_t stream);

/* ---- embedding ---- */
/* y[i] = table[ids[i]] for i < n; ids on the device. */
void vox_k_embed(void *y_bf16, const void *table_bf16, const int32_t *ids_dev, int64_t n,
                 int64_t c, cudaStream_t stream);

/* ---- attention ---- */
/* Flash-style attention, fp32 online softmax, never materialising the score matrix.
 * q [batch*t_q, n_heads*head_dim], k/v [batch*t_k, n_kv_heads*head_dim] (row stride of k/v may
 * exceed t_k rows per sequence: kv_seq_stride rows between sequences), out like q.
 * Query head h reads kv head h / (n_heads / n_kv_heads). causal: query row i sees key rows
 * j <= q_pos0 + i. head_dim in {64, 128}. */
void vox_k_attention(void *out_bf16, const void *q_bf16, const void *k_bf16, const void *v_bf16,
                     int batch, int t_q, int t_k, int64_t kv_seq_stride, int n_heads,
                     int n_kv_heads, int head_dim, float scale, int causal, int64_t q_pos0,
                     cudaStream_t stream);
/* Single-query attention (decode) against a KV cache whose lengths are read on the device
 * (sequence b attends to its first kv_len_dev[b] keys, so a captured graph can replay as the
 * caches grow), split across the sequence into chunks that the last one to finish reduces.
 * q/out [batch, n_heads*head_dim], k/v caches [batch * kv_seq_stride, n_kv_heads*head_dim].
 * workspace: vox_k_decode_attention_workspace() bytes, set up once by
 * vox_k_decode_attention_workspace_init(). [PDL] */
size_t vox_k_decode_attention_workspace(int batch, int n_heads, int head_dim, int64_t max_kv);
/* Zeroes the split counters at the start of a workspace (of non-zero size) for up to `batch`
 * sequences of n_heads (each launch leaves them zero again): once before the first launch of
 * that size. Returns the bytes it zeroes (and only that when workspace is NULL). */
size_t vox_k_decode_attention_workspace_init(void *workspace, int batch, int n_heads,
                                             cudaStream_t stream);
void vox_k_decode_attention(void *out_bf16, const void *q_bf16, const void *k_bf16,
                            const void *v_bf16, int batch, const int32_t *kv_len_dev,
                            int64_t max_kv, int64_t kv_seq_stride, int n_heads, int n_kv_heads,
                            int head_dim, float scale, void *workspace, cudaStream_t stream);

/* Paged KV cache: a layer's K (and V) pool is one matrix [n_blocks * block_size,
 * n_kv_heads*head_dim]; a sequence's key j (position j) is at pool row
 * table[j / block_size] * block_size + j % block_size, `table` being its row of a device int32
 * block table. Only the rows of valid keys are read, and only their table entries. Both run the
 * kernels above (same choice, same arithmetic): results equal, bit for bit, those of the
 * contiguous launchers on a copy of the same keys. A NULL table or a block_size <= 0 makes an
 * impossible launch (an error at the caller's next check). */
/* vox_k_decode_attention over a paged cache: sequence b (q/out row b) attends to its first
 * kv_len_dev[b] keys, key j at the physical row given by its block table
 * tables_dev[b * table_width + j / block_size]. max_kv = table_width * block_size bounds every
 * length (the grid and workspace are sized from it, so a captured launch replays at any length).
 * Workspace as vox_k_decode_attention_workspace(batch, n_heads, head_dim, max_kv) and its _init. [PDL] */
void vox_k_decode_attention_paged(void *out_bf16, const void *q_bf16, const void *k_pool,
                                  const void *v_pool, int batch, const int32_t *kv_len_dev,
                                  const int32_t *tables_dev, int table_width, int block_size,
                                  int n_heads, int n_kv_heads, int head_dim, float scale,
                                  void *workspace, cudaStream_t stream);
/* Causal attention for t_q query rows of ONE sequence at positions q_pos0 .. q_pos0 + t_q - 1
 * (q/out [t_q, n_heads*head_dim]) against keys 0 .. q_pos0 + t_q - 1 of a paged cache (the
 * sequence's block table tables_dev[0 .. ], block_size rows a block). Row i sees keys j <= q_pos0 + i. */
void vox_k_attention_paged(void *out_bf16, const void *q_bf16, const void *k_pool, const void *v_pool,
                           int t_q, int64_t q_pos0, const int32_t *table_dev, int block_size,
                           int n_heads, int n_kv_heads, int head_dim, float scale,
                           cudaStream_t stream);

/* vox_k_attention_paged for the prompt chunks of n_seqs sequences in one launch: sequence b's
 * query rows are q/out rows seq_row0_dev[b] .. seq_row0_dev[b + 1] - 1 (absolute row indices),
 * at positions row_pos_dev[seq_row0_dev[b]] onwards, against its keys through its block table
 * tables_dev[b * table_width ..]. max_t_q (the longest chunk, from the host) sizes the grid.
 * Returns 0, launching nothing, where only the simple kernel takes the shape (head_dim other
 * than 64/128, unaligned tensors): the caller then launches each sequence with
 * vox_k_attention_paged. Same arithmetic as those launches: the same bits. */
int vox_k_attention_paged_batch(void *out_bf16, const void *q_bf16, const void *k_pool,
                                const void *v_pool, int n_seqs, int max_t_q,
                                const int32_t *seq_row0_dev, const int32_t *row_pos_dev,
                                const int32_t *tables_dev, int table_width, int block_size,
                                int n_heads, int n_kv_heads, int head_dim, float scale,
                                cudaStream_t stream);

/* ---- decode-shaped projections (kernels/matvec.cuh; bf16 in matvec.cu, FP8 in
 *      fp8_matvec.cu) [PDL] ---- */
/* y = epilogue(prologue(x) @ w^T) for x [m, k] with m <= VOX_K_MATVEC_MAX_M, w [n, k], bf16.
 * With w_scale set, w is F8_E4M3 codes [n, k] with row scales w_scale [n] (the fp8_dynamic
 * scheme, common/fp8.h): after the prologue each row of x is quantized to E4M3 with its own
 * scale s_x (the codes vox_k_fp8_quantize_rows makes), P = (sum of code products) * s_x * s_w,
 * then the epilogue; k must then be a multiple of 16.
 * prologue: with norm_w, x is replaced by RMSNorm(x) * norm_w (rounded as vox_k_rms_norm).
 * epilogue, on the product P [m, n] (fp32, rounded to bf16 as a GEMM output would be):
 *   STORE            y [m, n] = P
 *   ADD              y [m, n] = bf16(y + bf16(P)): a residual add (y must not alias x)
 *   SWIGLU           y [m, n/2] = as vox_k_swiglu on P = (gate | up) per row
 *   QKV_ROPE_CACHE   as vox_k_qkv_rope_cache on P = (q | k | v): y = q_out [m, H*D], k_cache
 *                    and v_cache rows at positions *pos_dev + row; n = (H + 2 Hkv) * D.
 *                    With row_slot set, as vox_k_qkv_rope_cache_rows instead: row mm at
 *                    position row_pos[mm], its k/v to row row_slot[mm] of k_cache/v_cache (the
 *                    pools); pos_dev is then not read (may be NULL)
 * Returns 0, launching nothing, when it does not take the arguments (m, k % 8, alignment, m * k
 * over 100K elements, an odd n for SWIGLU or head_dim for QKV_ROPE_CACHE, and for
 * QKV_ROPE_CACHE neither pos_dev nor row_pos with row_slot): the caller then runs the separate
 * operations. */
#define VOX_K_MATVEC_MAX_M 4
typedef enum {
    VOX_K_MATVEC_STORE,
    VOX_K_MATVEC_ADD,
    VOX_K_MATVEC_SWIGLU,
    VOX_K_MATVEC_QKV_ROPE_CACHE
} vox_k_matvec_epilogue;
typedef struct {
    const void *w, *x, *norm_w;
    const float *w_scale; /* F8_E4M3 weights' row scales; NULL: w is bf16 */
    int64_t n, k;
    int m;
    float eps;
    vox_k_matvec_epilogue epilogue;
    void *y, *k_cache, *v_cache;
    int n_heads, n_kv_heads, head_dim;
    const int64_t *pos_dev;
    double theta;
    const int32_t *row_pos, *row_slot; /* QKV_ROPE_CACHE per row (NULL: *pos_dev + row) */
} vox_k_matvec_args;
int vox_k_matvec(const vox_k_matvec_args *args, cudaStream_t stream);

/* ---- GEMMs of a few rows (kernels/skinny_gemm.cu) [PDL] ---- */
/* y [m, n] (bf16) = x [m, k] @ w [n, k]^T with fp32 sums, for m = 1..VOX_K_SKINNY_MAX_M (the
 * batched decode step's projections, where cuBLASLt streams the small weight matrices well below
 * the card's bandwidth). bf16 x and w; or, with w_scale set, issue 10's scheme: x and w are E4M3
 * codes with row scales x_scale [m] and w_scale [n] (x quantized by vox_k_fp8_quantize_rows), the
 * product is the sum of code products times x_scale * w_scale (compute capability 8.9+).
 * accumulate: y = bf16(y + product), one rounding (cuBLASLt's beta = 1; y must not alias x).
 * n <= VOX_K_SKINNY_MAX_N. The workspace (vox_k_skinny_gemm_workspace_bytes() bytes on the current
 * device) must be zeroed once before the first call; each call leaves it ready for the next.
 * Calls sharing a workspace must be ordered (one stream). The result does not depend on run or
 * grid timing (partial sums are added in a fixed order). Returns 0, launching nothing, when it
 * does not take the arguments (m; n not a positive multiple of 8; rows not whole 16-byte
 * vectors; x or w not 16-byte aligned; scales given for one of x, w only; FP8 below 8.9;
 * workspace too small). */
#define VOX_K_SKINNY_MAX_M 64
#define VOX_K_SKINNY_MAX_N (1 << 19)
typedef struct {
    void *y;
    const void *x, *w;
    const float *x_scale, *w_scale; /* FP8 codes' row scales; both NULL for bf16 */
    int m;
    int64_t n, k;
    int accumulate;
    void *workspace;
    size_t workspace_bytes;
} vox_k_skinny_args;
size_t vox_k_skinny_gemm_workspace_bytes(void);
int vox_k_skinny_gemm(const vox_k_skinny_args *args, cudaStream_t stream);
/* The same with configuration `variant` (0 .. count - 1; -1: the default, or VOX_SKINNY_VARIANT
 * from the environment), for the tests' comparisons; its name for their tables. */
int vox_k_skinny_gemm_variant(int variant, const vox_k_skinny_args *args, cudaStream_t stream);
int vox_k_skinny_gemm_variant_count(void);
const char *vox_k_skinny_gemm_variant_name(int variant);

/* ---- one decode step of 1 to 8 sequences as one persistent kernel (kernels/pdecode.cu) ---- */
/* Every layer of the text decoder and the lm_head for `rows` sequences, one row each, in one
 * launch of one block per SM (bench/DESIGN-persistent-decode.md): the same results as the
 * op-by-op path (embed first, then matvec QKV_ROPE_CACHE, decode attention, matvec ADD, SWIGLU,
 * ADD per layer, the final norm and the lm_head as STORE) up to the order of fp32 sums.
 * x [rows, hidden] are the embedded tokens (read only); logits [rows, vocab] bf16 are written;
 * row b's new key and value go to the cache rows at slot[b]; it attends to keys 0 .. len[b] - 1
 * through its block table (table + b * table_width), key pos[b] being the new one. Layers are
 * FP8 when their scale pointers are set (fp8 = 1: all of them).
 * The workspace (vox_k_pdecode_workspace_bytes, the same for any rows) must be zeroed once
 * before the first launch; every launch leaves it zeroed where that matters. One launch at a
 * time per workspace.
 * Returns 0, launching nothing, when the shape or the device is not supported (below sm_90,
 * head_dim other than 32/64/128, more than 4 query heads a kv head, weight rows not multiples
 * of 8, K not whole 16-byte vectors, K over 16384 at one row, over 8192 at 2 to 8 rows, hidden
 * over 3072 at 5 to 8 rows); the caller then runs the op-by-op path. */
typedef struct {
    const void *qkv, *o, *gate_up, *down; /* bf16 [n, k], or F8_E4M3 codes with the scales: */
    const float *qkv_scale, *o_scale, *gate_up_scale, *down_scale; /* NULL for bf16 */
    const void *attn_norm, *ffn_norm;                           /* bf16 [hidden] */
    void *k_cache, *v_cache; /* bf16 pools of this layer [rows, kv_heads * head_dim] */
} vox_k_pdecode_layer;
#define VOX_K_PDECODE_MAX_LAYERS 64
#define VOX_K_PDECODE_MAX_ROWS 8
typedef struct {
    const vox_k_pdecode_layer *layers; /* host memory: n_layers entries (copied at the launch) */
    int n_layers, hidden, heads, kv_heads, head_dim, ffn;
    int rows; /* sequences, 1 .. VOX_K_PDECODE_MAX_ROWS (0 counts as 1) */
    int64_t vocab;
    int fp8;
    float eps, attn_scale;
    double theta;
    const void *x, *final_norm, *lm_head; /* bf16 */
    void *logits;                         /* bf16 [vocab] */
    const int32_t *pos, *slot, *len; /* device arrays: a value a row */
    const int32_t *table;            /* device [rows, table_width] block ids */
    int block_size, table_width;     /* table_width: read only where rows > 1 */
    void *workspace;
    /* for profiling, or NULL: per block (SM) and op (5 a layer, then the lm_head), the
     * %globaltimer ns when its wait ended and when its share was done: 2 x SMs x ops words;
     * then 10 x SMs x n_layers words of marks inside the attention units (pdecode.cu) */
    unsigned long long *stamps;
    /* who sums a projection: 0 the default (2; VOX_PDECODE_CONSUMER=row picks 1), 1 the CUDA
     * cores, a warp a row; 2 the tensor cores, a warp a column slice of every page (taken where
     * every K is at most 8192, else 1) */
    int consumer;
    /* the most weight pages a block's producer keeps in flight; 0: VOX_PDECODE_INFLIGHT, else
     * the kernel's default (kInflightPages) */
    int inflight;
} vox_k_pdecode_args;
int vox_k_pdecode_supported(const vox_k_pdecode_args *a);
/* VOX_PDECODE_INFLIGHT (pages; 0 turns the cap off), or -1 where it is unset. */
int vox_k_pdecode_inflight_env(void);
/* Launches the step `a` once, then `rounds` times at each in-flight cap of caps[0 .. n - 1]
 * (n, rounds <= 16), in a rotating order, and returns the cap of the least time (us[i]: cap i's
 * least time in microseconds, if us is not NULL). The step's results are those of one launch.
 * Returns 0 where a launch or the timing failed. Synchronizes the stream. */
int vox_k_pdecode_tune(const vox_k_pdecode_args *a, const int *caps, int n, int rounds, float *us,
                       cudaStream_t stream);
size_t vox_k_pdecode_workspace_bytes(const vox_k_pdecode_args *a);
int vox_k_pdecode(const vox_k_pdecode_args *a, cudaStream_t stream);

/* ---- logits ---- */
/* Statistics of one row of bf16 logits [v]: argmax (first on ties), top-2 margin, logsumexp,
 * the k (<= 20) best ids and logits, and the logit of `chosen` (-1: argmax), written to a
 * small device struct the host copies back in one transfer. */
typedef struct {
    int32_t argmax;
    float max_logit, second_logit, logsumexp;
    float chosen_logit;
    int32_t k;
    int32_t top_ids[20];
    float top_logits[20];
} vox_k_logits_result;
size_t vox_k_logits_workspace(int64_t v);
void vox_k_logits_stats(vox_k_logits_result *out_dev, const void *logits_bf16, int64_t v,
                        int32_t chosen, int k, void *workspace, cudaStream_t stream);
/* vox_k_logits_stats for each of `rows` rows of logits [rows, v]: out_dev[r] for row r, with
 * chosen_dev[r] the id whose logit is reported (-1 or chosen_dev NULL: the argmax). Row r's
 * result equals, bit for bit, vox_k_logits_stats on that row alone. rows <= 65535. */
size_t vox_k_logits_workspace_rows(int rows, int64_t v);
void vox_k_logits_stats_rows(vox_k_logits_result *out_dev, const void *logits_bf16, int rows,
                             int64_t v, const int32_t *chosen_dev, int k, void *workspace,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
