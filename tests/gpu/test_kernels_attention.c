/* The attention kernels (kernels/attention.cu) against the CPU reference backend.
 *
 * Every implementation (the simple kernel, each tiled variant, what vox_k_attention picks) runs on
 * random bf16 inputs (fixed seed) of awkward sizes; every output element is compared with the
 * CPU backend's float32 attention over the same bf16 values. K/V rows the kernels must not read
 * (between sequences when kv_seq_stride > t_k, past each decode length) hold NaN, so reading one
 * poisons the output; output buffers start as NaN and are followed by guard words that must stay
 * untouched. Then the full-size shapes are timed (printed, not asserted).
 *
 * Paged caches (vox_k_decode_attention_paged, vox_k_attention_paged): the contiguous caches are
 * scattered block by block, in a random order, into a pool whose other rows hold NaN, through
 * block tables with entries past each sequence pointing at NaN blocks. The paged launch must give
 * the contiguous launch's outputs bit for bit (the same kernel and arithmetic, other addresses),
 * for every variant, and meet the same tolerances against the CPU reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kernels.h"

/* Test hooks exported by kernels/attention.cu (not part of kernels.h). variant -1: what the
 * public launcher picks, 0: the simple kernel, 1..count-1: tiled variants. They return 0, launching
 * nothing, when the variant does not take the shape. */
int vox_k_attention_variant_count(void);
const char *vox_k_attention_variant_name(int variant);
int vox_k_attention_variant(int variant, void *out_bf16, const void *q_bf16, const void *k_bf16,
                            const void *v_bf16, int batch, int t_q, int t_k, int64_t kv_seq_stride,
                            int n_heads, int n_kv_heads, int head_dim, float scale, int causal,
                            int64_t q_pos0, cudaStream_t stream);
int vox_k_attention_variant_info(int variant, int *regs, int *smem_bytes, int *blocks_per_sm);
/* Decode variants: -1 auto, 0 simple, 1 split over the sequence, 2 one split per sequence,
 * 3 split with two pipeline stages. */
int vox_k_decode_attention_variant(int variant, void *out_bf16, const void *q_bf16,
                                   const void *k_bf16, const void *v_bf16, int batch,
                                   const int32_t *kv_len_dev, int64_t max_kv,
                                   int64_t kv_seq_stride, int n_heads, int n_kv_heads,
                                   int head_dim, float scale, void *workspace,
                                   cudaStream_t stream);
/* The same over a paged cache (variants numbered as above). */
int vox_k_attention_paged_variant(int variant, void *out_bf16, const void *q_bf16,
                                  const void *k_pool, const void *v_pool, int t_q, int64_t q_pos0,
                                  const int32_t *table_dev, int block_size, int n_heads,
                                  int n_kv_heads, int head_dim, float scale, cudaStream_t stream);
int vox_k_attention_paged_batch_variant(int variant, void *out_bf16, const void *q_bf16,
                                        const void *k_pool, const void *v_pool, int n_seqs,
                                        int max_t_q, const int32_t *seq_row0_dev,
                                        const int32_t *row_pos_dev, const int32_t *tables_dev,
                                        int table_width, int block_size, int n_heads,
                                        int n_kv_heads, int head_dim, float scale,
                                        cudaStream_t stream);
int vox_k_decode_attention_paged_variant(int variant, void *out_bf16, const void *q_bf16,
                                         const void *k_pool, const void *v_pool, int batch,
                                         const int32_t *kv_len_dev, const int32_t *tables_dev,
                                         int table_width, int block_size, int n_heads,
                                         int n_kv_heads, int head_dim, float scale,
                                         void *workspace, cudaStream_t stream);
int vox_k_decode_attention_variant_count(void);
const char *vox_k_decode_attention_variant_name(int variant);
int vox_k_decode_attention_variant_info(int variant, int head_dim, int *regs, int *smem_bytes,
                                        int *blocks_per_sm);
#define DECODE_VARIANTS vox_k_decode_attention_variant_count()
static const char *decode_variant_name(int v) { return vox_k_decode_attention_variant_name(v); }

/* ---- tolerances ------------------------------------------------------------------------------
 * V is uniform in [-1, 1), so every output lies in [-1, 1] and |sum_j p_j v_j| / l <= 1.
 * Tiled kernels: P is rounded to bf16 before P@V (relative error <= 2^-9 per weight), which moves
 * the output by at most 2^-9 * sum_j p_j |v_j| / l <= 2^-9; the output's own bf16 rounding adds
 * <= 2^-9 |ref|; fp32 score differences (summation order; scores reach a few hundred in the
 * large-magnitude cases, fp32 ulp ~3e-5 there) and exp2 approximations move weights by ~1e-4
 * relative, i.e. <= 1e-4 absolute. Bound: 2^-9 + 1e-4 + 2^-9 |ref|; we allow twice that:
 * atol 2^-8, rtol 2^-8.
 * Simple kernel: P stays fp32, so only the output rounding (2^-9 |ref|) and the ~1e-4 of score
 * rounding remain: atol 2^-10, rtol 2^-8.
 * Fast vs simple at full size: the two errors add: atol 2^-8 + 2^-10, rtol 2^-7. */
#define TOL_FAST_ATOL (1.0 / 256)
#define TOL_FAST_RTOL (1.0 / 256)
#define TOL_SIMPLE_ATOL (1.0 / 1024)
#define TOL_SIMPLE_RTOL (1.0 / 256)
#define TOL_PAIR_ATOL (1.0 / 256 + 1.0 / 1024)
#define TOL_PAIR_RTOL (1.0 / 128)

#define BF16_NAN 0x7fc0u
#define GUARD 256 /* bf16 words after every output that no kernel may write */

static vox_backend *g_cpu;
static gtu_rng g_rng;

/* ---- inputs ---------------------------------------------------------------------------------- */

/* n bf16 uniform in [-amp, amp) with its exact float mirror. */
static uint16_t *rand_bf16(size_t n, float amp, float **mirror) {
    return gtu_rand_bf16(&g_rng, n, -amp, amp, mirror);
}

/* A K or V cache of `batch` sequences, `stride` rows each, `width` columns. Row j of sequence b is
 * random when j < len[b] (scaled by 1 + 3j/len when ramp, so scores grow along the keys and the
 * running max keeps moving), else NaN. *packed gets the valid rows, contiguous, as floats. */
static uint16_t *make_cache(int batch, const int64_t *len, int64_t stride, int64_t width,
                            float amp, int ramp, float **packed) {
    int64_t total = 0;
    for (int b = 0; b < batch; b++) total += len[b];
    uint16_t *h = gtu_malloc((size_t)(batch * stride * width + 1) * sizeof *h);
    float *f = gtu_malloc((size_t)(total * width + 1) * sizeof *f);
    int64_t at = 0;
    for (int b = 0; b < batch; b++) {
        for (int64_t j = 0; j < stride; j++) {
            uint16_t *row = h + (b * stride + j) * width;
            if (j >= len[b]) {
                for (int64_t c = 0; c < width; c++) row[c] = BF16_NAN;
                continue;
            }
            float gain = ramp ? 1.0f + 3.0f * (float)j / (float)len[b] : 1.0f;
            for (int64_t c = 0; c < width; c++) {
                row[c] = vox_f32_to_bf16(gain * gtu_uniform(&g_rng, -amp, amp));
                f[at * width + c] = vox_bf16_to_f32(row[c]);
            }
            at++;
        }
    }
    *packed = f;
    return h;
}

/* ---- checking -------------------------------------------------------------------------------- */

/* Where the bad elements of an output [rows, heads*d] are, to tell a fragment-layout or masking
 * bug from a numerical one: the first few with coordinates, and which rows mod 16, column groups
 * of 8 and heads hold them. */
static void diagnose(const float *got, const float *ref, int64_t rows, int t_q, int heads, int d,
                     double atol, double rtol) {
    int64_t by_row16[16] = {0}, by_col8[32] = {0}, by_head[64] = {0}, first_row = -1, last_row = -1;
    int shown = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++)
            for (int c = 0; c < d; c++) {
                int64_t i = (r * heads + h) * d + c;
                double diff = fabs((double)got[i] - ref[i]);
                if (diff <= atol + rtol * fabs(ref[i])) continue;
                if (shown++ < 8)
                    fprintf(stderr, "    bad: seq %lld row %lld head %d dim %d: got %.6g ref %.6g\n",
                            (long long)(r / t_q), (long long)(r % t_q), h, c, got[i], ref[i]);
                by_row16[(r % t_q) % 16]++;
                by_col8[(c / 8) % 32]++;
                by_head[h % 64]++;
                if (first_row < 0) first_row = r % t_q;
                if (r % t_q > last_row) last_row = r % t_q;
            }
    if (!shown) return;
    fprintf(stderr, "    bad rows within a sequence span %lld..%lld\n    by row%%16:",
            (long long)first_row, (long long)last_row);
    for (int i = 0; i < 16; i++) fprintf(stderr, " %lld", (long long)by_row16[i]);
    fprintf(stderr, "\n    by dim/8:");
    for (int i = 0; i < d / 8 && i < 32; i++) fprintf(stderr, " %lld", (long long)by_col8[i]);
    fprintf(stderr, "\n    by head:");
    for (int i = 0; i < heads && i < 64; i++) fprintf(stderr, " %lld", (long long)by_head[i]);
    fprintf(stderr, "\n");
}

/* Downloads n bf16 outputs plus the guard behind them; checks the guard, every element against
 * ref, and that the output is not all zero. Returns the output as floats (caller frees). */
static float *check_output(const char *what, const void *d_out, size_t n, const float *ref,
                           int64_t rows, int t_q, int heads, int d, double atol, double rtol) {
    uint16_t *h = gtu_malloc((n + GUARD) * sizeof *h);
    gtu_download(h, d_out, (n + GUARD) * sizeof *h);
    size_t touched = 0;
    for (size_t i = n; i < n + GUARD; i++) touched += h[i] != 0xffffu;
    CHECK_MSG(touched == 0, "%s: %zu guard words past the output were written", what, touched);
    float *f = gtu_bf16_to_f32_host(h, n);
    free(h);
    if (ref && !gtu_compare(what, f, ref, n, atol, rtol))
        diagnose(f, ref, rows, t_q, heads, d, atol, rtol);
    gtu_check_nonzero(what, f, n);
    return f;
}

/* ---- prefill / encoder attention ------------------------------------------------------------- */

typedef struct {
    const char *name;
    int batch, t_q, t_k;
    int64_t stride; /* kv_seq_stride (>= t_k) */
    int nh, nkv, d;
    int causal;
    int64_t q_pos0;
    float amp; /* q and k uniform in [-amp, amp): score std about amp^2/3 */
    int ramp;
} attn_case;

static void run_attn_case(const attn_case *c) {
    printf("%s: batch %d, t_q %d, t_k %d, stride %lld, heads %d/%d, d %d, %s q_pos0 %lld, "
           "amp %.1f%s\n",
           c->name, c->batch, c->t_q, c->t_k, (long long)c->stride, c->nh, c->nkv, c->d,
           c->causal ? "causal" : "bidirectional", (long long)c->q_pos0, c->amp,
           c->ramp ? ", ramp" : "");
    const int64_t qw = (int64_t)c->nh * c->d, kw = (int64_t)c->nkv * c->d;
    const size_t nq = (size_t)c->batch * c->t_q * qw;
    int64_t lens[16];
    for (int b = 0; b < c->batch; b++) lens[b] = c->t_k;
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16(nq, c->amp, &qf);
    uint16_t *kh = make_cache(c->batch, lens, c->stride, kw, c->amp, c->ramp, &kf);
    uint16_t *vh = make_cache(c->batch, lens, c->stride, kw, 1.0f, 0, &vf);

    float *ref = gtu_malloc(nq * sizeof *ref);
    vox_tensor to = gtu_cpu_tensor(ref, VOX_DTYPE_F32, (int64_t)c->batch * c->t_q, qw);
    vox_tensor tq = gtu_cpu_tensor(qf, VOX_DTYPE_F32, (int64_t)c->batch * c->t_q, qw);
    vox_tensor tk = gtu_cpu_tensor(kf, VOX_DTYPE_F32, (int64_t)c->batch * c->t_k, kw);
    vox_tensor tv = gtu_cpu_tensor(vf, VOX_DTYPE_F32, (int64_t)c->batch * c->t_k, kw);
    const float scale = 1.0f / sqrtf((float)c->d);
    g_cpu->attention(g_cpu, &to, &tq, &tk, &tv, c->batch, c->t_q, c->t_k, c->nh, c->nkv, c->d,
                     scale, c->causal != 0, c->q_pos0);

    const size_t kv_bytes = (size_t)c->batch * c->stride * kw * 2;
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, kv_bytes),
         *dv = gtu_dev_upload(vh, kv_bytes), *dout = gtu_dev_alloc((nq + GUARD) * 2);
    for (int variant = -1; variant < vox_k_attention_variant_count(); variant++) {
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        int ran = 1;
        if (variant < 0)
            vox_k_attention(dout, dq, dk, dv, c->batch, c->t_q, c->t_k, c->stride, c->nh, c->nkv,
                            c->d, scale, c->causal, c->q_pos0, 0);
        else
            ran = vox_k_attention_variant(variant, dout, dq, dk, dv, c->batch, c->t_q, c->t_k,
                                          c->stride, c->nh, c->nkv, c->d, scale, c->causal,
                                          c->q_pos0, 0);
        if (!ran) continue;
        char what[160];
        snprintf(what, sizeof what, "%s [%s]", c->name,
                 variant < 0 ? "vox_k_attention" : vox_k_attention_variant_name(variant));
        int simple = variant == 0;
        free(check_output(what, dout, nq, ref, (int64_t)c->batch * c->t_q, c->t_q, c->nh, c->d,
                          simple ? TOL_SIMPLE_ATOL : TOL_FAST_ATOL,
                          simple ? TOL_SIMPLE_RTOL : TOL_FAST_RTOL));
    }
    gtu_dev_free(dq);
    gtu_dev_free(dk);
    gtu_dev_free(dv);
    gtu_dev_free(dout);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(ref);
}

/* ---- decode ---------------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    int batch;
    int32_t lens[8];
    int64_t max_kv, stride;
    int nh, nkv, d;
    float amp;
    int ramp;
} decode_case;

/* CPU reference of one decode step: sequence by sequence, attention of 1 query row over len keys. */
static void decode_reference(float *ref, const float *qf, const float *kf, const float *vf,
                             int batch, const int32_t *lens, int nh, int nkv, int d) {
    const int64_t qw = (int64_t)nh * d, kw = (int64_t)nkv * d;
    int64_t at = 0;
    for (int b = 0; b < batch; b++) {
        if (lens[b] == 0) {
            memset(ref + b * qw, 0, (size_t)qw * sizeof *ref);
            continue;
        }
        vox_tensor to = gtu_cpu_tensor(ref + b * qw, VOX_DTYPE_F32, 1, qw);
        vox_tensor tq = gtu_cpu_tensor((float *)qf + b * qw, VOX_DTYPE_F32, 1, qw);
        vox_tensor tk = gtu_cpu_tensor((float *)kf + at * kw, VOX_DTYPE_F32, lens[b], kw);
        vox_tensor tv = gtu_cpu_tensor((float *)vf + at * kw, VOX_DTYPE_F32, lens[b], kw);
        g_cpu->attention(g_cpu, &to, &tq, &tk, &tv, 1, 1, lens[b], nh, nkv, d,
                         1.0f / sqrtf((float)d), false, 0);
        at += lens[b];
    }
}

static void run_decode_case(const decode_case *c) {
    printf("%s: batch %d, lens", c->name, c->batch);
    for (int b = 0; b < c->batch; b++) printf(" %d", c->lens[b]);
    printf(", max_kv %lld, stride %lld, heads %d/%d, d %d, amp %.1f%s\n", (long long)c->max_kv,
           (long long)c->stride, c->nh, c->nkv, c->d, c->amp, c->ramp ? ", ramp" : "");
    const int64_t qw = (int64_t)c->nh * c->d, kw = (int64_t)c->nkv * c->d;
    const size_t nq = (size_t)c->batch * qw;
    int64_t lens64[8];
    for (int b = 0; b < c->batch; b++) lens64[b] = c->lens[b];
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16(nq, c->amp, &qf);
    uint16_t *kh = make_cache(c->batch, lens64, c->stride, kw, c->amp, c->ramp, &kf);
    uint16_t *vh = make_cache(c->batch, lens64, c->stride, kw, 1.0f, 0, &vf);
    float *ref = gtu_malloc(nq * sizeof *ref);
    decode_reference(ref, qf, kf, vf, c->batch, c->lens, c->nh, c->nkv, c->d);

    const size_t kv_bytes = (size_t)c->batch * c->stride * kw * 2;
    const size_t ws_bytes = vox_k_decode_attention_workspace(c->batch, c->nh, c->d, c->max_kv);
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, kv_bytes),
         *dv = gtu_dev_upload(vh, kv_bytes), *dout = gtu_dev_alloc((nq + GUARD) * 2),
         *dlen = gtu_dev_upload(c->lens, (size_t)c->batch * sizeof(int32_t)),
         *dws = gtu_dev_alloc(ws_bytes);
    for (int variant = -1; variant < DECODE_VARIANTS; variant++) {
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        GTU_CUDA(cudaMemset(dws, 0xff, ws_bytes ? ws_bytes : 1)); /* NaN garbage */
        /* then the split counters zeroed, as an owner does once (each launch leaves them zero) */
        if (ws_bytes) vox_k_decode_attention_workspace_init(dws, c->batch, c->nh, 0);
        int ran = 1;
        if (variant < 0)
            vox_k_decode_attention(dout, dq, dk, dv, c->batch, dlen, c->max_kv, c->stride, c->nh,
                                   c->nkv, c->d, 1.0f / sqrtf((float)c->d), dws, 0);
        else
            ran = vox_k_decode_attention_variant(variant, dout, dq, dk, dv, c->batch, dlen,
                                                 c->max_kv, c->stride, c->nh, c->nkv, c->d,
                                                 1.0f / sqrtf((float)c->d), dws, 0);
        if (!ran) continue;
        char what[160];
        snprintf(what, sizeof what, "%s [%s]", c->name,
                 variant < 0 ? "vox_k_decode_attention" : decode_variant_name(variant));
        int simple = variant == 0;
        free(check_output(what, dout, nq, ref, c->batch, 1, c->nh, c->d,
                          simple ? TOL_SIMPLE_ATOL : TOL_FAST_ATOL,
                          simple ? TOL_SIMPLE_RTOL : TOL_FAST_RTOL));
    }
    gtu_dev_free(dq), gtu_dev_free(dk), gtu_dev_free(dv), gtu_dev_free(dout), gtu_dev_free(dlen);
    gtu_dev_free(dws);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(ref);
}

/* The decode launch captured once in a CUDA graph at max_kv, replayed after the lengths on the
 * device change (the decode loop's use): each replay must match the reference for its lengths. */
static void run_decode_graph(void) {
    enum { B = 2, NH = 32, NKV = 8, D = 128 };
    const int64_t max_kv = 4097, stride = 4104, qw = NH * D, kw = NKV * D;
    printf("decode graph: batch %d, captured at max_kv %lld, replayed with new lengths\n", B,
           (long long)max_kv);
    int64_t full[B] = {max_kv, max_kv};
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16((size_t)B * qw, 3.0f, &qf);
    uint16_t *kh = make_cache(B, full, stride, kw, 3.0f, 0, &kf);
    uint16_t *vh = make_cache(B, full, stride, kw, 1.0f, 0, &vf);
    const size_t kv_bytes = (size_t)B * stride * kw * 2, nq = (size_t)B * qw;
    const size_t ws_bytes = vox_k_decode_attention_workspace(B, NH, D, max_kv);
    int32_t lens[B] = {1, 1};
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, kv_bytes),
         *dv = gtu_dev_upload(vh, kv_bytes), *dout = gtu_dev_alloc((nq + GUARD) * 2),
         *dlen = gtu_dev_upload(lens, sizeof lens), *dws = gtu_dev_alloc(ws_bytes);
    if (ws_bytes) vox_k_decode_attention_workspace_init(dws, B, NH, 0);

    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GTU_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    GTU_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    vox_k_decode_attention(dout, dq, dk, dv, B, dlen, max_kv, stride, NH, NKV, D,
                           1.0f / sqrtf((float)D), dws, s);
    GTU_CUDA(cudaStreamEndCapture(s, &graph));
    GTU_CUDA(cudaGraphInstantiate(&exec, graph, 0));

    /* The valid rows of each sequence are its first len rows of the full cache; pack them. */
    static const int32_t sets[][B] = {{1, 4097}, {400, 5}, {64, 65}, {0, 130}, {4097, 4096}};
    float *kp = gtu_malloc((size_t)2 * max_kv * kw * sizeof *kp);
    float *vp = gtu_malloc((size_t)2 * max_kv * kw * sizeof *vp);
    float *ref = gtu_malloc(nq * sizeof *ref);
    for (size_t t = 0; t < sizeof sets / sizeof sets[0]; t++) {
        int64_t at = 0;
        for (int b = 0; b < B; b++) {
            memcpy(kp + at * kw, kf + b * max_kv * kw, (size_t)sets[t][b] * kw * sizeof *kp);
            memcpy(vp + at * kw, vf + b * max_kv * kw, (size_t)sets[t][b] * kw * sizeof *vp);
            at += sets[t][b];
        }
        decode_reference(ref, qf, kp, vp, B, sets[t], NH, NKV, D);
        /* on s itself: s does not wait for the legacy default stream */
        GTU_CUDA(cudaMemcpyAsync(dlen, sets[t], sizeof sets[t], cudaMemcpyHostToDevice, s));
        GTU_CUDA(cudaMemsetAsync(dout, 0xff, (nq + GUARD) * 2, s));
        GTU_CUDA(cudaGraphLaunch(exec, s));
        GTU_CUDA(cudaStreamSynchronize(s));
        char what[96];
        snprintf(what, sizeof what, "decode graph replay lens %d,%d", sets[t][0], sets[t][1]);
        free(check_output(what, dout, nq, ref, B, 1, NH, D, TOL_FAST_ATOL, TOL_FAST_RTOL));
    }
    GTU_CUDA(cudaGraphExecDestroy(exec));
    GTU_CUDA(cudaGraphDestroy(graph));
    GTU_CUDA(cudaStreamDestroy(s));
    gtu_dev_free(dq), gtu_dev_free(dk), gtu_dev_free(dv), gtu_dev_free(dout), gtu_dev_free(dlen);
    gtu_dev_free(dws);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(kp), free(vp), free(ref);
}

/* ---- paged caches ---------------------------------------------------------------------------- */

/* A paged copy of contiguous caches: sequence b's key j (row b * stride + j of kh / vh) goes to
 * pool row tables[b * width + j / bs] * bs + j % bs. Blocks are handed out in a random order
 * (in order, 0, 1, 2, ..., when !shuffle: for timing the cost of the order alone);
 * the pool rows of a used block past the sequence's length, the blocks no sequence uses (at least
 * two), and so the table entries past a sequence's blocks (which point to those) hold NaN: a
 * kernel that reads a row or a table entry it should not gets NaN into its output. */
typedef struct {
    int32_t *tables; /* [batch, width] block ids */
    int width, n_blocks, bs;
    uint16_t *k, *v; /* pools [n_blocks * bs, cols] */
} paged_pool;

static paged_pool make_paged(const uint16_t *kh, const uint16_t *vh, int batch,
                             const int32_t *lens, int64_t stride, int64_t cols, int bs, int width,
                             int n_blocks, int shuffle) {
    paged_pool pp = {NULL, width, n_blocks, bs, NULL, NULL};
    int used = 0;
    for (int b = 0; b < batch; b++) {
        const int nb = (lens[b] + bs - 1) / bs;
        if (nb > width || lens[b] > stride) {
            fprintf(stderr, "make_paged: length %d does not fit (width %d, stride %lld)\n",
                    lens[b], width, (long long)stride);
            exit(1);
        }
        used += nb;
    }
    if (used + 2 > n_blocks) {
        fprintf(stderr, "make_paged: %d blocks used, pool of %d\n", used, n_blocks);
        exit(1);
    }
    int32_t *perm = gtu_malloc((size_t)n_blocks * sizeof *perm);
    for (int i = 0; i < n_blocks; i++) perm[i] = i;
    for (int i = n_blocks - 1; shuffle && i > 0; i--) {
        const int j = (int)(gtu_next_u64(&g_rng) % (uint64_t)(i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    const size_t rows = (size_t)n_blocks * bs;
    pp.tables = gtu_malloc((size_t)batch * width * sizeof *pp.tables);
    pp.k = gtu_malloc(rows * cols * sizeof *pp.k);
    pp.v = gtu_malloc(rows * cols * sizeof *pp.v);
    for (size_t i = 0; i < rows * cols; i++) pp.k[i] = pp.v[i] = BF16_NAN;
    int next = 0;
    for (int b = 0; b < batch; b++) {
        const int nb = (lens[b] + bs - 1) / bs;
        for (int i = 0; i < width; i++) {
            if (i >= nb) { /* a spare block: never to be read */
                pp.tables[b * width + i] = perm[used + (int)(gtu_next_u64(&g_rng) % (uint64_t)(n_blocks - used))];
                continue;
            }
            const int32_t blk = perm[next++];
            pp.tables[b * width + i] = blk;
            for (int r = 0; r < bs; r++) {
                const int64_t j = (int64_t)i * bs + r;
                if (j >= lens[b]) break;
                memcpy(pp.k + ((size_t)blk * bs + r) * cols, kh + (b * stride + j) * cols,
                       (size_t)cols * sizeof *pp.k);
                memcpy(pp.v + ((size_t)blk * bs + r) * cols, vh + (b * stride + j) * cols,
                       (size_t)cols * sizeof *pp.v);
            }
        }
    }
    free(perm);
    return pp;
}

static void free_paged(paged_pool *pp) { free(pp->tables), free(pp->k), free(pp->v); }

/* The paged launch against the contiguous one on the same keys: the same kernel doing the same
 * arithmetic, only the addresses of the K/V rows differ, so every output must have the same bits. */
static void check_same_bits(const char *what, const void *d_paged, const void *d_contig, size_t n) {
    uint16_t *a = gtu_malloc(n * sizeof *a), *b = gtu_malloc(n * sizeof *b);
    gtu_download(a, d_paged, n * sizeof *a);
    gtu_download(b, d_contig, n * sizeof *b);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i] && bad++ == 0) first = i;
    CHECK_MSG(bad == 0, "%s: %zu of %zu outputs differ in their bits from the contiguous launch "
                        "(first [%zu]: %04x, contiguous %04x)",
              what, bad, n, first, bad ? a[first] : 0, bad ? b[first] : 0);
    if (!bad) printf("  ok %-44s n=%-9zu bit-identical to the contiguous launch\n", what, n);
    free(a), free(b);
}

typedef struct {
    const char *name;
    int batch, bs;
    int32_t max_len;
    int nh, nkv, d;
    float amp;
    int ramp, with_zero;
} paged_decode_case;

/* Lengths: the longest first, then 1 and the block edges bs - 1, bs, bs + 1, 2 bs, 2 bs + 1 and
 * the decode tile's 63, 64, 65, then random in [1, max_len]; with_zero makes the last one 0. */
static void paged_lens(int32_t *lens, const paged_decode_case *c) {
    const int bs = c->bs;
    const int32_t edges[] = {c->max_len, 1, bs + 1, bs - 1, bs, 2 * bs, 2 * bs + 1, 63, 64, 65};
    for (int b = 0; b < c->batch; b++) {
        int32_t l = b < 10 ? edges[b] : 1 + (int32_t)(gtu_next_u64(&g_rng) % (uint64_t)c->max_len);
        lens[b] = l < 1 ? 1 : l > c->max_len ? c->max_len : l;
    }
    if (c->with_zero && c->batch > 1) lens[c->batch - 1] = 0;
}

/* Every decode variant on a paged cache against the same variant on the contiguous cache it was
 * scattered from (bit for bit) and against the CPU reference (the tolerances above). The table
 * is one entry wider than the longest sequence needs, so every sequence has entries it must not
 * read; max_kv = width * bs for both launches (same splits). */
static void run_paged_decode_case(const paged_decode_case *c) {
    int32_t lens[64];
    paged_lens(lens, c);
    printf("%s: batch %d, block_size %d, heads %d/%d, d %d, amp %.1f%s, lens", c->name, c->batch,
           c->bs, c->nh, c->nkv, c->d, c->amp, c->ramp ? " ramp" : "");
    for (int b = 0; b < c->batch && b < 12; b++) printf(" %d", lens[b]);
    printf("%s\n", c->batch > 12 ? " ..." : "");
    const int64_t qw = (int64_t)c->nh * c->d, kw = (int64_t)c->nkv * c->d;
    const size_t nq = (size_t)c->batch * qw;
    int64_t lens64[64], stride = 0;
    int blocks = 0;
    for (int b = 0; b < c->batch; b++) {
        lens64[b] = lens[b];
        if (lens[b] > stride) stride = lens[b];
        blocks += (lens[b] + c->bs - 1) / c->bs;
    }
    const int width = (int)((stride + c->bs - 1) / c->bs) + 1;
    const int64_t max_kv = (int64_t)width * c->bs;
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16(nq, c->amp, &qf);
    uint16_t *kh = make_cache(c->batch, lens64, stride, kw, c->amp, c->ramp, &kf);
    uint16_t *vh = make_cache(c->batch, lens64, stride, kw, 1.0f, 0, &vf);
    float *ref = gtu_malloc(nq * sizeof *ref);
    decode_reference(ref, qf, kf, vf, c->batch, lens, c->nh, c->nkv, c->d);
    paged_pool pp = make_paged(kh, vh, c->batch, lens, stride, kw, c->bs, width, blocks + 3, 1);

    const size_t kv_bytes = (size_t)c->batch * stride * kw * 2;
    const size_t pool_bytes = (size_t)pp.n_blocks * c->bs * kw * 2;
    const size_t ws_bytes = vox_k_decode_attention_workspace(c->batch, c->nh, c->d, max_kv);
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, kv_bytes),
         *dv = gtu_dev_upload(vh, kv_bytes), *dkp = gtu_dev_upload(pp.k, pool_bytes),
         *dvp = gtu_dev_upload(pp.v, pool_bytes),
         *dtab = gtu_dev_upload(pp.tables, (size_t)c->batch * width * sizeof(int32_t)),
         *dlen = gtu_dev_upload(lens, (size_t)c->batch * sizeof(int32_t)),
         *dout = gtu_dev_alloc((nq + GUARD) * 2), *dcon = gtu_dev_alloc((nq + GUARD) * 2),
         *dws = gtu_dev_alloc(ws_bytes);
    const float scale = 1.0f / sqrtf((float)c->d);
    for (int variant = -1; variant < DECODE_VARIANTS; variant++) {
        int ran_p = 1, ran_c = 1;
        GTU_CUDA(cudaMemset(dcon, 0xff, (nq + GUARD) * 2));
        GTU_CUDA(cudaMemset(dws, 0xff, ws_bytes ? ws_bytes : 1));
        if (ws_bytes) vox_k_decode_attention_workspace_init(dws, c->batch, c->nh, 0);
        if (variant < 0)
            vox_k_decode_attention(dcon, dq, dk, dv, c->batch, dlen, max_kv, stride, c->nh, c->nkv,
                                   c->d, scale, dws, 0);
        else
            ran_c = vox_k_decode_attention_variant(variant, dcon, dq, dk, dv, c->batch, dlen,
                                                   max_kv, stride, c->nh, c->nkv, c->d, scale, dws,
                                                   0);
        GTU_SYNC_CHECK();
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        GTU_CUDA(cudaMemset(dws, 0xff, ws_bytes ? ws_bytes : 1));
        if (ws_bytes) vox_k_decode_attention_workspace_init(dws, c->batch, c->nh, 0);
        if (variant < 0)
            vox_k_decode_attention_paged(dout, dq, dkp, dvp, c->batch, dlen, dtab, width, c->bs,
                                         c->nh, c->nkv, c->d, scale, dws, 0);
        else
            ran_p = vox_k_decode_attention_paged_variant(variant, dout, dq, dkp, dvp, c->batch,
                                                         dlen, dtab, width, c->bs, c->nh, c->nkv,
                                                         c->d, scale, dws, 0);
        CHECK_MSG(ran_p == ran_c, "%s [%s]: paged variant ran %d, contiguous %d", c->name,
                  decode_variant_name(variant), ran_p, ran_c);
        if (!ran_p || !ran_c) continue;
        char what[160];
        snprintf(what, sizeof what, "%s [%s]", c->name,
                 variant < 0 ? "vox_k_decode_attention_paged" : decode_variant_name(variant));
        const int simple = variant == 0;
        free(check_output(what, dout, nq, ref, c->batch, 1, c->nh, c->d,
                          simple ? TOL_SIMPLE_ATOL : TOL_FAST_ATOL,
                          simple ? TOL_SIMPLE_RTOL : TOL_FAST_RTOL));
        check_same_bits(what, dout, dcon, nq);
    }
    gtu_dev_free(dq), gtu_dev_free(dk), gtu_dev_free(dv), gtu_dev_free(dkp), gtu_dev_free(dvp);
    gtu_dev_free(dtab), gtu_dev_free(dlen), gtu_dev_free(dout), gtu_dev_free(dcon);
    gtu_dev_free(dws);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(ref);
    free_paged(&pp);
}

/* The paged decode launch captured once in a graph, replayed after the lengths, the block tables
 * and the pool contents all change (the continuous-batching loop: sequences come and go, blocks
 * are reassigned): each replay must match the reference for its lengths. */
static void run_paged_decode_graph(void) {
    enum { B = 3, NH = 32, NKV = 8, D = 128, BS = 16, W = 130 };
    const int64_t max_kv = (int64_t)W * BS, qw = NH * D, kw = NKV * D;
    const int n_blocks = B * W + 5;
    printf("paged decode graph: batch %d, block_size %d, table width %d (max_kv %lld), captured "
           "once, replayed with new lengths, tables and pools\n",
           B, BS, W, (long long)max_kv);
    int64_t full[B] = {max_kv, max_kv, max_kv};
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16((size_t)B * qw, 3.0f, &qf);
    uint16_t *kh = make_cache(B, full, max_kv, kw, 3.0f, 0, &kf);
    uint16_t *vh = make_cache(B, full, max_kv, kw, 1.0f, 0, &vf);
    const size_t nq = (size_t)B * qw, pool_bytes = (size_t)n_blocks * BS * kw * 2;
    const size_t ws_bytes = vox_k_decode_attention_workspace(B, NH, D, max_kv);
    void *dq = gtu_dev_upload(qh, nq * 2), *dkp = gtu_dev_alloc(pool_bytes),
         *dvp = gtu_dev_alloc(pool_bytes), *dtab = gtu_dev_alloc((size_t)B * W * sizeof(int32_t)),
         *dlen = gtu_dev_alloc(B * sizeof(int32_t)), *dout = gtu_dev_alloc((nq + GUARD) * 2),
         *dws = gtu_dev_alloc(ws_bytes);
    if (ws_bytes) vox_k_decode_attention_workspace_init(dws, B, NH, 0);

    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GTU_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    GTU_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    vox_k_decode_attention_paged(dout, dq, dkp, dvp, B, dlen, dtab, W, BS, NH, NKV, D,
                                 1.0f / sqrtf((float)D), dws, s);
    GTU_CUDA(cudaStreamEndCapture(s, &graph));
    GTU_CUDA(cudaGraphInstantiate(&exec, graph, 0));

    static const int32_t sets[][B] = {{1, 2080, 17}, {16, 0, 1000}, {2079, 33, 2080}, {64, 65, 1}};
    float *kp = gtu_malloc((size_t)B * max_kv * kw * sizeof *kp);
    float *vp = gtu_malloc((size_t)B * max_kv * kw * sizeof *vp);
    float *ref = gtu_malloc(nq * sizeof *ref);
    for (size_t t = 0; t < sizeof sets / sizeof sets[0]; t++) {
        int64_t at = 0;
        for (int b = 0; b < B; b++) {
            memcpy(kp + at * kw, kf + b * max_kv * kw, (size_t)sets[t][b] * kw * sizeof *kp);
            memcpy(vp + at * kw, vf + b * max_kv * kw, (size_t)sets[t][b] * kw * sizeof *vp);
            at += sets[t][b];
        }
        decode_reference(ref, qf, kp, vp, B, sets[t], NH, NKV, D);
        paged_pool pp = make_paged(kh, vh, B, sets[t], max_kv, kw, BS, W, n_blocks, 1);
        /* on s itself: s does not wait for the legacy default stream */
        GTU_CUDA(cudaMemcpyAsync(dkp, pp.k, pool_bytes, cudaMemcpyHostToDevice, s));
        GTU_CUDA(cudaMemcpyAsync(dvp, pp.v, pool_bytes, cudaMemcpyHostToDevice, s));
        GTU_CUDA(cudaMemcpyAsync(dtab, pp.tables, (size_t)B * W * sizeof(int32_t),
                                 cudaMemcpyHostToDevice, s));
        GTU_CUDA(cudaMemcpyAsync(dlen, sets[t], sizeof sets[t], cudaMemcpyHostToDevice, s));
        GTU_CUDA(cudaMemsetAsync(dout, 0xff, (nq + GUARD) * 2, s));
        GTU_CUDA(cudaGraphLaunch(exec, s));
        GTU_CUDA(cudaStreamSynchronize(s));
        char what[96];
        snprintf(what, sizeof what, "paged decode graph replay lens %d,%d,%d", sets[t][0],
                 sets[t][1], sets[t][2]);
        free(check_output(what, dout, nq, ref, B, 1, NH, D, TOL_FAST_ATOL, TOL_FAST_RTOL));
        free_paged(&pp);
    }
    GTU_CUDA(cudaGraphExecDestroy(exec));
    GTU_CUDA(cudaGraphDestroy(graph));
    GTU_CUDA(cudaStreamDestroy(s));
    gtu_dev_free(dq), gtu_dev_free(dkp), gtu_dev_free(dvp), gtu_dev_free(dtab);
    gtu_dev_free(dlen), gtu_dev_free(dout), gtu_dev_free(dws);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(kp), free(vp), free(ref);
}

typedef struct {
    const char *name;
    int t_q;
    int64_t q_pos0;
    int bs, nh, nkv, d;
    float amp;
} paged_prefill_case;

/* A chunk of one sequence's prompt against its paged cache: every prefill variant against the
 * same variant of vox_k_attention on the contiguous cache (batch 1, t_k = q_pos0 + t_q, causal,
 * same q_pos0), bit for bit, and against the CPU reference (the tolerances above). */
static void run_paged_prefill_case(const paged_prefill_case *c) {
    const int t_k = (int)(c->q_pos0 + c->t_q);
    printf("%s: t_q %d at q_pos0 %lld (t_k %d), block_size %d, heads %d/%d, d %d, amp %.1f\n",
           c->name, c->t_q, (long long)c->q_pos0, t_k, c->bs, c->nh, c->nkv, c->d, c->amp);
    const int64_t qw = (int64_t)c->nh * c->d, kw = (int64_t)c->nkv * c->d;
    const size_t nq = (size_t)c->t_q * qw;
    const int64_t stride = t_k + 5; /* NaN rows behind the sequence's keys */
    int64_t len64 = t_k;
    const int32_t len = t_k;
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16(nq, c->amp, &qf);
    uint16_t *kh = make_cache(1, &len64, stride, kw, c->amp, 0, &kf);
    uint16_t *vh = make_cache(1, &len64, stride, kw, 1.0f, 0, &vf);
    float *ref = gtu_malloc(nq * sizeof *ref);
    vox_tensor to = gtu_cpu_tensor(ref, VOX_DTYPE_F32, c->t_q, qw);
    vox_tensor tq = gtu_cpu_tensor(qf, VOX_DTYPE_F32, c->t_q, qw);
    vox_tensor tk = gtu_cpu_tensor(kf, VOX_DTYPE_F32, t_k, kw);
    vox_tensor tv = gtu_cpu_tensor(vf, VOX_DTYPE_F32, t_k, kw);
    const float scale = 1.0f / sqrtf((float)c->d);
    g_cpu->attention(g_cpu, &to, &tq, &tk, &tv, 1, c->t_q, t_k, c->nh, c->nkv, c->d, scale, true,
                     c->q_pos0);
    const int width = (t_k + c->bs - 1) / c->bs + 2;
    const int blocks = (t_k + c->bs - 1) / c->bs + 3;
    paged_pool pp = make_paged(kh, vh, 1, &len, stride, kw, c->bs, width, blocks, 1);

    const size_t kv_bytes = (size_t)stride * kw * 2, pool_bytes = (size_t)blocks * c->bs * kw * 2;
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, kv_bytes),
         *dv = gtu_dev_upload(vh, kv_bytes), *dkp = gtu_dev_upload(pp.k, pool_bytes),
         *dvp = gtu_dev_upload(pp.v, pool_bytes),
         *dtab = gtu_dev_upload(pp.tables, (size_t)width * sizeof(int32_t)),
         *dout = gtu_dev_alloc((nq + GUARD) * 2), *dcon = gtu_dev_alloc((nq + GUARD) * 2);
    for (int variant = -1; variant < vox_k_attention_variant_count(); variant++) {
        int ran_p = 1, ran_c = 1;
        GTU_CUDA(cudaMemset(dcon, 0xff, (nq + GUARD) * 2));
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        if (variant < 0) {
            vox_k_attention(dcon, dq, dk, dv, 1, c->t_q, t_k, stride, c->nh, c->nkv, c->d, scale,
                            1, c->q_pos0, 0);
            vox_k_attention_paged(dout, dq, dkp, dvp, c->t_q, c->q_pos0, dtab, c->bs, c->nh,
                                  c->nkv, c->d, scale, 0);
        } else {
            ran_c = vox_k_attention_variant(variant, dcon, dq, dk, dv, 1, c->t_q, t_k, stride,
                                            c->nh, c->nkv, c->d, scale, 1, c->q_pos0, 0);
            ran_p = vox_k_attention_paged_variant(variant, dout, dq, dkp, dvp, c->t_q, c->q_pos0,
                                                  dtab, c->bs, c->nh, c->nkv, c->d, scale, 0);
        }
        CHECK_MSG(ran_p == ran_c, "%s [%s]: paged variant ran %d, contiguous %d", c->name,
                  variant < 0 ? "auto" : vox_k_attention_variant_name(variant), ran_p, ran_c);
        if (!ran_p || !ran_c) continue;
        char what[160];
        snprintf(what, sizeof what, "%s [%s]", c->name,
                 variant < 0 ? "vox_k_attention_paged" : vox_k_attention_variant_name(variant));
        const int simple = variant == 0;
        free(check_output(what, dout, nq, ref, c->t_q, c->t_q, c->nh, c->d,
                          simple ? TOL_SIMPLE_ATOL : TOL_FAST_ATOL,
                          simple ? TOL_SIMPLE_RTOL : TOL_FAST_RTOL));
        check_same_bits(what, dout, dcon, nq);
    }
    gtu_dev_free(dq), gtu_dev_free(dk), gtu_dev_free(dv), gtu_dev_free(dkp), gtu_dev_free(dvp);
    gtu_dev_free(dtab), gtu_dev_free(dout), gtu_dev_free(dcon);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(ref);
    free_paged(&pp);
}

#define PB_MAX_SEQS 8
typedef struct {
    const char *name;
    int n_seqs, skip_rows; /* skip_rows: rows before the first chunk (a step's decode rows) */
    int t_q[PB_MAX_SEQS];
    int q_pos0[PB_MAX_SEQS];
    int bs, nh, nkv, d;
} paged_prefill_batch_case;

/* Prompt chunks of several sequences in one launch (a continuous-batching step): every variant
 * against the same variant launched once per sequence (bit for bit), the auto launch against the
 * CPU reference, and the rows before the chunks (the step's decode rows) left untouched. */
static void run_paged_prefill_batch_case(const paged_prefill_batch_case *c) {
    const int64_t qw = (int64_t)c->nh * c->d, kw = (int64_t)c->nkv * c->d;
    int32_t row0[PB_MAX_SEQS + 1], lens[PB_MAX_SEQS];
    int64_t lens64[PB_MAX_SEQS], stride = 0;
    int max_t_q = 0;
    row0[0] = c->skip_rows;
    for (int i = 0; i < c->n_seqs; i++) {
        row0[i + 1] = row0[i] + c->t_q[i];
        lens[i] = c->q_pos0[i] + c->t_q[i];
        lens64[i] = lens[i];
        if (lens[i] + 3 > stride) stride = lens[i] + 3;
        if (c->t_q[i] > max_t_q) max_t_q = c->t_q[i];
    }
    const int rows = row0[c->n_seqs];
    printf("%s: %d sequences, %d rows after %d skipped, block_size %d, heads %d/%d, d %d\n", c->name,
           c->n_seqs, rows - c->skip_rows, c->skip_rows, c->bs, c->nh, c->nkv, c->d);
    int32_t *pos = gtu_malloc((size_t)rows * sizeof *pos);
    for (int r = 0; r < c->skip_rows; r++) pos[r] = -1;
    for (int i = 0; i < c->n_seqs; i++)
        for (int r = row0[i]; r < row0[i + 1]; r++) pos[r] = c->q_pos0[i] + (r - row0[i]);
    const size_t nq = (size_t)rows * qw;
    float *qf, *kf, *vf;
    uint16_t *qh = rand_bf16(nq, 3.0f, &qf);
    uint16_t *kh = make_cache(c->n_seqs, lens64, stride, kw, 3.0f, 0, &kf);
    uint16_t *vh = make_cache(c->n_seqs, lens64, stride, kw, 1.0f, 0, &vf);
    const float scale = 1.0f / sqrtf((float)c->d);
    /* CPU reference per sequence (rows before the chunks stay 0xffff in the device outputs) */
    float *ref = gtu_malloc(nq * sizeof *ref);
    int64_t kat = 0;
    for (int i = 0; i < c->n_seqs; i++) {
        vox_tensor to = gtu_cpu_tensor(ref + (size_t)row0[i] * qw, VOX_DTYPE_F32, c->t_q[i], qw);
        vox_tensor tq = gtu_cpu_tensor(qf + (size_t)row0[i] * qw, VOX_DTYPE_F32, c->t_q[i], qw);
        vox_tensor tk = gtu_cpu_tensor(kf + kat * kw, VOX_DTYPE_F32, lens[i], kw);
        vox_tensor tv = gtu_cpu_tensor(vf + kat * kw, VOX_DTYPE_F32, lens[i], kw);
        g_cpu->attention(g_cpu, &to, &tq, &tk, &tv, 1, c->t_q[i], lens[i], c->nh, c->nkv, c->d,
                         scale, true, c->q_pos0[i]);
        kat += lens[i];
    }
    int width = 0;
    for (int i = 0; i < c->n_seqs; i++)
        if ((lens[i] + c->bs - 1) / c->bs + 1 > width) width = (lens[i] + c->bs - 1) / c->bs + 1;
    int blocks = 3;
    for (int i = 0; i < c->n_seqs; i++) blocks += (lens[i] + c->bs - 1) / c->bs;
    paged_pool pp = make_paged(kh, vh, c->n_seqs, lens, stride, kw, c->bs, width, blocks, 1);
    const size_t pool_bytes = (size_t)blocks * c->bs * kw * 2;
    void *dq = gtu_dev_upload(qh, nq * 2), *dkp = gtu_dev_upload(pp.k, pool_bytes),
         *dvp = gtu_dev_upload(pp.v, pool_bytes),
         *dtab = gtu_dev_upload(pp.tables, (size_t)c->n_seqs * width * sizeof(int32_t)),
         *drow0 = gtu_dev_upload(row0, sizeof row0), *dpos = gtu_dev_upload(pos, (size_t)rows * sizeof *pos),
         *dout = gtu_dev_alloc((nq + GUARD) * 2), *done = gtu_dev_alloc((nq + GUARD) * 2);
    const size_t skipped = (size_t)c->skip_rows * qw;
    for (int variant = -1; variant < vox_k_attention_variant_count(); variant++) {
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        GTU_CUDA(cudaMemset(done, 0xff, (nq + GUARD) * 2));
        int ran_b = vox_k_attention_paged_batch_variant(
            variant, dout, dq, dkp, dvp, c->n_seqs, max_t_q, (const int32_t *)drow0,
            (const int32_t *)dpos, (const int32_t *)dtab, width, c->bs, c->nh, c->nkv, c->d,
            scale, 0);
        int ran_1 = 1;
        for (int i = 0; i < c->n_seqs; i++) {
            const size_t off = (size_t)row0[i] * qw * 2;
            ran_1 &= vox_k_attention_paged_variant(variant < 0 ? -1 : variant, (char *)done + off,
                                                   (const char *)dq + off, dkp, dvp, c->t_q[i],
                                                   c->q_pos0[i], (const int32_t *)dtab + i * width,
                                                   c->bs, c->nh, c->nkv, c->d, scale, 0);
        }
        const char *vname = variant < 0 ? "vox_k_attention_paged_batch" : vox_k_attention_variant_name(variant);
        if (variant == 0) { /* the simple kernel takes one sequence a launch */
            CHECK_MSG(ran_b == 0, "%s [simple]: the batched launch ran the simple kernel", c->name);
            continue;
        }
        if (variant < 0 && !ran_b) { /* the caller falls back to a launch a sequence */
            CHECK_MSG(c->d != 64 && c->d != 128, "%s: the batched launch refused head_dim %d",
                      c->name, c->d);
            printf("  ok %-44s not taken (head_dim %d): one launch a sequence\n", c->name, c->d);
            continue;
        }
        CHECK_MSG(ran_b == ran_1, "%s [%s]: batched launch ran %d, per sequence %d", c->name, vname,
                  ran_b, ran_1);
        if (!ran_b || !ran_1) continue;
        char what[160];
        snprintf(what, sizeof what, "%s [%s]", c->name, vname);
        /* the rows before the chunks: untouched */
        uint16_t *head = gtu_malloc((skipped + 1) * sizeof *head);
        gtu_download(head, dout, (skipped + 1) * sizeof *head);
        size_t touched = 0;
        for (size_t i = 0; i < skipped; i++) touched += head[i] != 0xffffu;
        CHECK_MSG(touched == 0, "%s: %zu outputs of the skipped rows were written", what, touched);
        free(head);
        if (variant < 0) {
            /* compare from the first chunk row: the skipped rows hold no output */
            free(check_output(what, (const char *)dout + skipped * 2, nq - skipped, ref + skipped,
                              rows - c->skip_rows, rows - c->skip_rows, c->nh, c->d, TOL_FAST_ATOL,
                              TOL_FAST_RTOL));
        }
        check_same_bits(what, dout, done, nq);
    }
    gtu_dev_free(dq), gtu_dev_free(dkp), gtu_dev_free(dvp), gtu_dev_free(dtab);
    gtu_dev_free(drow0), gtu_dev_free(dpos), gtu_dev_free(dout), gtu_dev_free(done);
    free(qh), free(kh), free(vh), free(qf), free(kf), free(vf), free(ref), free(pos);
    free_paged(&pp);
}

/* ---- timing ---------------------------------------------------------------------------------- */

/* Median over 3 measurements of the mean of `iters` back-to-back launches. */
#define TIME_MEDIAN_US(us, iters, stmt)                                                      \
    do {                                                                                     \
        double t_[3];                                                                        \
        for (int r_ = 0; r_ < 3; r_++) GTU_TIME_US(t_[r_], iters, stmt);                     \
        double lo_ = fmin(t_[0], fmin(t_[1], t_[2])), hi_ = fmax(t_[0], fmax(t_[1], t_[2])); \
        (us) = t_[0] + t_[1] + t_[2] - lo_ - hi_;                                            \
    } while (0)

/* Times every variant of a prefill shape; checks the auto choice and every tiled variant against
 * the simple kernel at this size (the simple kernel is held to the CPU reference above). */
static void time_prefill(const char *name, int batch, int t, int nh, int nkv, int d, int causal,
                         int iters) {
    const int64_t qw = (int64_t)nh * d, kw = (int64_t)nkv * d;
    const size_t nq = (size_t)batch * t * qw, nk = (size_t)batch * t * kw;
    uint16_t *qh = rand_bf16(nq, 2.0f, NULL), *kh = rand_bf16(nk, 2.0f, NULL),
             *vh = rand_bf16(nk, 1.0f, NULL);
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, nk * 2),
         *dv = gtu_dev_upload(vh, nk * 2), *dout = gtu_dev_alloc((nq + GUARD) * 2);
    const float scale = 1.0f / sqrtf((float)d);
    /* visible (query, key) pairs: t*t, or t(t+1)/2 when causal; 4 flops per pair and dim */
    const double pairs = causal ? (double)t * (t + 1) / 2 : (double)t * t;
    const double flop = 4.0 * batch * nh * pairs * d;

    GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
    vox_k_attention_variant(0, dout, dq, dk, dv, batch, t, t, t, nh, nkv, d, scale, causal, 0, 0);
    char what[160];
    snprintf(what, sizeof what, "%s [simple]", name);
    float *simple = check_output(what, dout, nq, NULL, batch * t, t, nh, d, 0, 0);

    printf("time %s: batch %d, t %d, heads %d/%d, d %d, %s, %.2f GFLOP\n", name, batch, t, nh, nkv,
           d, causal ? "causal" : "bidirectional", flop * 1e-9);
    for (int variant = -1; variant < vox_k_attention_variant_count(); variant++) {
        if (variant == 0 && t > 4096) continue; /* the simple kernel takes seconds there */
        if (variant > 0 && !vox_k_attention_variant(variant, dout, dq, dk, dv, batch, t, t, t, nh,
                                                     nkv, d, scale, causal, 0, 0))
            continue;
        double us;
        TIME_MEDIAN_US(us, iters,
                       vox_k_attention_variant(variant, dout, dq, dk, dv, batch, t, t, t, nh, nkv,
                                               d, scale, causal, 0, 0));
        printf("  %-22s %10.1f us %8.1f TFLOP/s\n",
               variant < 0 ? "auto (vox_k_attention)" : vox_k_attention_variant_name(variant), us,
               flop / (us * 1e-6) * 1e-12);
        if (variant != 0) {
            GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
            vox_k_attention_variant(variant, dout, dq, dk, dv, batch, t, t, t, nh, nkv, d, scale,
                                    causal, 0, 0);
            snprintf(what, sizeof what, "%s [%s] vs simple", name,
                     variant < 0 ? "auto" : vox_k_attention_variant_name(variant));
            free(check_output(what, dout, nq, simple, batch * t, t, nh, d, TOL_PAIR_ATOL,
                              TOL_PAIR_RTOL));
        }
    }
    /* batch 1, causal (a prompt): the same keys in a paged cache, blocks of 16 in order, of 16
     * and of 64 in a random order */
    for (int cfg = 0; batch == 1 && causal && cfg < 3; cfg++) {
        const int bs = cfg == 2 ? 64 : 16, shuffle = cfg > 0, width = (t + bs - 1) / bs;
        const int32_t len = t;
        paged_pool pp = make_paged(kh, vh, 1, &len, t, kw, bs, width, width + 2, shuffle);
        const size_t pool_bytes = (size_t)(width + 2) * bs * kw * 2;
        void *dkp = gtu_dev_upload(pp.k, pool_bytes), *dvp = gtu_dev_upload(pp.v, pool_bytes),
             *dtab = gtu_dev_upload(pp.tables, (size_t)width * sizeof(int32_t));
        double us;
        TIME_MEDIAN_US(us, iters,
                       vox_k_attention_paged(dout, dq, dkp, dvp, t, 0, dtab, bs, nh, nkv, d, scale,
                                             0));
        char label[48];
        snprintf(label, sizeof label, "paged bs%d %s", bs, shuffle ? "shuffled" : "in order");
        printf("  %-22s %10.1f us %8.1f TFLOP/s\n", label, us, flop / (us * 1e-6) * 1e-12);
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        vox_k_attention_paged(dout, dq, dkp, dvp, t, 0, dtab, bs, nh, nkv, d, scale, 0);
        snprintf(what, sizeof what, "%s [%s] vs simple", name, label);
        free(check_output(what, dout, nq, simple, batch * t, t, nh, d, TOL_PAIR_ATOL,
                          TOL_PAIR_RTOL));
        gtu_dev_free(dkp), gtu_dev_free(dvp), gtu_dev_free(dtab);
        free_paged(&pp);
    }
    gtu_dev_free(dq), gtu_dev_free(dk), gtu_dev_free(dv), gtu_dev_free(dout);
    free(qh), free(kh), free(vh), free(simple);
}

/* Decode at one length: each variant back to back on the stream, and the auto path as 30 launches
 * (one per layer) captured in a graph, which is how the decoder runs it. */
static void time_decode(const char *name, int batch, int32_t len, int nh, int nkv, int d) {
    const int64_t qw = (int64_t)nh * d, kw = (int64_t)nkv * d, stride = len;
    const size_t nq = (size_t)batch * qw, nk = (size_t)batch * stride * kw;
    uint16_t *qh = rand_bf16(nq, 2.0f, NULL), *kh = rand_bf16(nk, 2.0f, NULL),
             *vh = rand_bf16(nk, 1.0f, NULL);
    int32_t lens[1024];
    if (batch > 1024) { fprintf(stderr, "time_decode: batch %d > 1024\n", batch); exit(1); }
    for (int b = 0; b < batch; b++) lens[b] = len;
    const size_t ws_bytes = vox_k_decode_attention_workspace(batch, nh, d, len);
    void *dq = gtu_dev_upload(qh, nq * 2), *dk = gtu_dev_upload(kh, nk * 2),
         *dv = gtu_dev_upload(vh, nk * 2), *dout = gtu_dev_alloc((nq + GUARD) * 2),
         *dlen = gtu_dev_upload(lens, (size_t)batch * sizeof(int32_t)), *dws = gtu_dev_alloc(ws_bytes);
    if (ws_bytes) vox_k_decode_attention_workspace_init(dws, batch, nh, 0);
    const float scale = 1.0f / sqrtf((float)d);
    const double bytes = 2.0 * batch * len * kw * 2; /* K and V read once */

    GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
    vox_k_decode_attention_variant(0, dout, dq, dk, dv, batch, dlen, len, stride, nh, nkv, d,
                                   scale, dws, 0);
    char what[160];
    snprintf(what, sizeof what, "%s [simple]", name);
    float *simple = check_output(what, dout, nq, NULL, batch, 1, nh, d, 0, 0);

    printf("time %s: batch %d, kv %d, heads %d/%d, d %d, %.2f MB of K/V\n", name, batch, len, nh,
           nkv, d, bytes * 1e-6);
    for (int variant = -1; variant < DECODE_VARIANTS; variant++) {
        double us;
        TIME_MEDIAN_US(us, 50,
                       vox_k_decode_attention_variant(variant, dout, dq, dk, dv, batch, dlen, len,
                                                      stride, nh, nkv, d, scale, dws, 0));
        printf("  %-22s %10.2f us %8.1f GB/s (stream, back to back)\n", decode_variant_name(variant),
               us, bytes / (us * 1e-6) * 1e-9);
        GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
        vox_k_decode_attention_variant(variant, dout, dq, dk, dv, batch, dlen, len, stride, nh,
                                       nkv, d, scale, dws, 0);
        snprintf(what, sizeof what, "%s [%s] vs simple", name, decode_variant_name(variant));
        free(check_output(what, dout, nq, simple, batch, 1, nh, d, TOL_PAIR_ATOL, TOL_PAIR_RTOL));
    }
    /* the same keys in a paged cache: blocks of 16 in order, of 16 and of 64 in a random order */
    for (int cfg = 0; cfg < 3; cfg++) {
        const int bs = cfg == 2 ? 64 : 16, shuffle = cfg > 0;
        const int width = (len + bs - 1) / bs, n_blocks = batch * width + 2;
        paged_pool pp = make_paged(kh, vh, batch, lens, stride, kw, bs, width, n_blocks, shuffle);
        const size_t pool_bytes = (size_t)n_blocks * bs * kw * 2;
        const size_t pws_bytes =
            vox_k_decode_attention_workspace(batch, nh, d, (int64_t)width * bs);
        void *dkp = gtu_dev_upload(pp.k, pool_bytes), *dvp = gtu_dev_upload(pp.v, pool_bytes),
             *dtab = gtu_dev_upload(pp.tables, (size_t)batch * width * sizeof(int32_t)),
             *dpws = gtu_dev_alloc(pws_bytes);
        if (pws_bytes) vox_k_decode_attention_workspace_init(dpws, batch, nh, 0);
        /* auto on each layout; every split variant on blocks of 16 shuffled (the engine's) */
        for (int variant = -1; variant < (cfg == 1 ? DECODE_VARIANTS : 0); variant++) {
            if (variant == 0) continue; /* the simple kernel: timed above */
            double us;
            TIME_MEDIAN_US(us, 50,
                           vox_k_decode_attention_paged_variant(variant, dout, dq, dkp, dvp, batch,
                                                                dlen, dtab, width, bs, nh, nkv, d,
                                                                scale, dpws, 0));
            char label[64];
            snprintf(label, sizeof label, "paged bs%d %s%s%s", bs, shuffle ? "shuffled" : "in order",
                     variant < 0 ? "" : " ", variant < 0 ? "" : decode_variant_name(variant));
            printf("  %-22s %10.2f us %8.1f GB/s (stream, back to back)\n", label, us,
                   bytes / (us * 1e-6) * 1e-9);
            GTU_CUDA(cudaMemset(dout, 0xff, (nq + GUARD) * 2));
            vox_k_decode_attention_paged_variant(variant, dout, dq, dkp, dvp, batch, dlen, dtab,
                                                 width, bs, nh, nkv, d, scale, dpws, 0);
            snprintf(what, sizeof what, "%s [%s] vs simple", name, label);
            free(check_output(what, dout, nq, simple, batch, 1, nh, d, TOL_PAIR_ATOL,
                              TOL_PAIR_RTOL));
        }
        gtu_dev_free(dkp), gtu_dev_free(dvp), gtu_dev_free(dtab), gtu_dev_free(dpws);
        free_paged(&pp);
    }

    cudaStream_t s;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GTU_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    GTU_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int layer = 0; layer < 30; layer++)
        vox_k_decode_attention(dout, dq, dk, dv, batch, dlen, len, stride, nh, nkv, d, scale, dws, s);
    GTU_CUDA(cudaStreamEndCapture(s, &graph));
    GTU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t a, b;
    GTU_CUDA(cudaEventCreate(&a));
    GTU_CUDA(cudaEventCreate(&b));
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        GTU_CUDA(cudaGraphLaunch(exec, s)); /* warm-up on the first pass */
        GTU_CUDA(cudaEventRecord(a, s));
        GTU_CUDA(cudaGraphLaunch(exec, s));
        GTU_CUDA(cudaEventRecord(b, s));
        GTU_CUDA(cudaStreamSynchronize(s));
        float ms;
        GTU_CUDA(cudaEventElapsedTime(&ms, a, b));
        if (ms < best) best = ms;
    }
    printf("  %-22s %10.2f us per call (30 calls in one graph, best of 5)\n", "auto in a graph",
           best * 1000.0 / 30);
    GTU_CUDA(cudaEventDestroy(a));
    GTU_CUDA(cudaEventDestroy(b));
    GTU_CUDA(cudaGraphExecDestroy(exec));
    GTU_CUDA(cudaGraphDestroy(graph));
    GTU_CUDA(cudaStreamDestroy(s));
    gtu_dev_free(dq), gtu_dev_free(dk), gtu_dev_free(dv), gtu_dev_free(dout), gtu_dev_free(dlen);
    gtu_dev_free(dws);
    free(qh), free(kh), free(vh), free(simple);
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
    gtu_require_device();
    g_cpu = gtu_cpu_backend();
    g_rng = gtu_rng_seed(20261130);
    int timing = !(argc > 1 && strcmp(argv[1], "--no-timing") == 0);

    static const attn_case cases[] = {
        /* name                     batch t_q  t_k  stride nh nkv d  causal q_pos0 amp ramp */
        {"enc 1x1", 1, 1, 1, 1, 20, 20, 64, 0, 0, 1.0f, 0},
        {"enc 7x17 strided", 2, 7, 17, 22, 20, 20, 64, 0, 0, 1.0f, 0},
        {"enc 17x130 large", 3, 17, 130, 133, 20, 20, 64, 0, 0, 4.0f, 0},
        {"enc 130x17", 2, 130, 17, 17, 20, 20, 64, 0, 0, 2.0f, 0},
        {"enc 1500x1", 2, 1500, 1, 3, 20, 20, 64, 0, 0, 1.0f, 0},
        {"enc 1500 chunks", 3, 1500, 1500, 1500, 20, 20, 64, 0, 0, 1.5f, 0},
        {"enc 1500 large ramp", 1, 1500, 1500, 1501, 20, 20, 64, 0, 0, 4.0f, 1},
        /* the edges of the sm90 kernel's tiles: 128 or 192 query rows, 128 keys */
        {"enc 129x257 ramp", 2, 129, 257, 260, 20, 20, 64, 0, 0, 2.0f, 1},
        {"enc 193x128", 1, 193, 128, 128, 20, 20, 64, 0, 0, 3.0f, 0},
        {"gqa d64 bidir 200x300", 2, 200, 300, 310, 8, 2, 64, 0, 0, 2.0f, 0},
        {"gqa d64 causal 130", 2, 130, 130, 140, 4, 2, 64, 1, 0, 2.0f, 0},
        {"gqa d64 causal pos0 17", 1, 130, 147, 147, 32, 8, 64, 1, 17, 3.0f, 0},
        {"dec causal 130", 2, 130, 130, 130, 4, 2, 128, 1, 0, 2.0f, 0},
        {"dec causal 7", 3, 7, 7, 9, 32, 8, 128, 1, 0, 1.0f, 0},
        {"dec causal pos0 113", 1, 17, 130, 200, 32, 8, 128, 1, 113, 4.0f, 1},
        {"dec causal pos0 1493", 2, 7, 1500, 1600, 4, 2, 128, 1, 1493, 3.0f, 0},
        {"dec causal 1500", 1, 1500, 1500, 1500, 32, 8, 128, 1, 0, 4.0f, 0},
        {"dec causal 1500 ramp", 2, 1500, 1500, 1503, 4, 2, 128, 1, 0, 5.0f, 1},
        {"dec bidir 130x1500", 1, 130, 1500, 1500, 20, 20, 128, 0, 0, 2.0f, 0},
        {"causal t_q > t_k", 1, 17, 7, 7, 4, 2, 128, 1, 0, 1.0f, 0},
        {"dec causal pos0 32761", 1, 7, 32768, 32768, 32, 8, 128, 1, 32761, 3.0f, 0},
        /* the d128 sm90 kernel's edges: 128-row tiles heaviest first, 128-key tiles, key tiles
         * skipped past a tile's last row, a prompt chunk after earlier chunks, GQA 3 to 1 */
        {"dec causal 389", 1, 389, 389, 389, 32, 8, 128, 1, 0, 4.0f, 0},
        {"dec causal pos0 200 300x500 ramp", 2, 300, 500, 510, 32, 8, 128, 1, 200, 3.0f, 1},
        {"dec chunk 70@380", 1, 70, 450, 460, 32, 8, 128, 1, 380, 3.0f, 0},
        {"dec causal 64@64 (128 keys)", 1, 64, 128, 128, 32, 8, 128, 1, 64, 2.0f, 0},
        {"dec causal 65@64 (129 keys)", 2, 65, 129, 131, 32, 8, 128, 1, 64, 2.0f, 0},
        {"gqa 6/2 d128 causal pos0 37", 2, 150, 187, 190, 6, 2, 128, 1, 37, 3.0f, 0},
        {"gqa 6/2 d128 bidir 257x300", 1, 257, 300, 300, 6, 2, 128, 0, 0, 2.0f, 0},
        {"head_dim 96 (simple)", 2, 17, 130, 130, 4, 2, 96, 1, 113, 2.0f, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_attn_case(&cases[i]);

    static const decode_case dcases[] = {
        /* name                 batch lens                    max_kv stride nh nkv d amp ramp */
        {"decode 1", 1, {1}, 1, 1, 32, 8, 128, 1.0f, 0},
        {"decode 5", 1, {5}, 5, 8, 32, 8, 128, 3.0f, 0},
        {"decode 400", 1, {400}, 400, 512, 32, 8, 128, 3.0f, 0},
        {"decode 4097", 1, {4097}, 4097, 4097, 32, 8, 128, 4.0f, 1},
        {"decode mixed", 4, {1, 5, 400, 4097}, 4097, 4100, 32, 8, 128, 3.0f, 0},
        {"decode tile edges", 4, {0, 64, 65, 128}, 4097, 4100, 32, 8, 128, 2.0f, 0},
        {"decode d64 mha", 2, {17, 130}, 200, 201, 20, 20, 64, 2.0f, 0},
        {"decode d64 group 32", 2, {130, 7}, 130, 130, 32, 1, 64, 2.0f, 0},
        {"decode d128 4/2 ramp", 3, {1500, 7, 999}, 1500, 1500, 4, 2, 128, 5.0f, 1},
        {"decode 32768", 1, {32768}, 32768, 32768, 32, 8, 128, 3.0f, 0},
        {"decode head_dim 96 (simple)", 2, {7, 130}, 130, 130, 4, 2, 96, 2.0f, 0},
    };
    for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) run_decode_case(&dcases[i]);
    run_decode_graph();

    static const paged_decode_case pcases[] = {
        /* name                          batch bs max_len nh nkv d  amp ramp with_zero */
        {"paged decode b1 bs16", 1, 16, 1000, 32, 8, 128, 3.0f, 0, 0},
        {"paged decode b3 bs1", 3, 1, 130, 32, 8, 128, 3.0f, 0, 0},
        {"paged decode b3 bs3 ramp", 3, 3, 2999, 32, 8, 128, 5.0f, 1, 0},
        {"paged decode b17 bs16 d64", 17, 16, 2000, 32, 8, 64, 2.0f, 0, 1},
        {"paged decode b17 bs64 group 16", 17, 64, 777, 16, 1, 128, 2.0f, 0, 0},
        {"paged decode b64 bs32", 64, 32, 2000, 32, 8, 128, 3.0f, 0, 1},
        {"paged decode b64 bs16 d64 mha", 64, 16, 500, 20, 20, 64, 2.0f, 0, 0},
        {"paged decode b64 bs3 d64 group 32", 64, 3, 300, 32, 1, 64, 2.0f, 1, 1},
        {"paged decode b3 head_dim 96 (simple)", 3, 16, 130, 4, 2, 96, 2.0f, 0, 1},
    };
    for (size_t i = 0; i < sizeof pcases / sizeof pcases[0]; i++) run_paged_decode_case(&pcases[i]);
    run_paged_decode_graph();

    static const paged_prefill_case ppcases[] = {
        /* name                              t_q q_pos0 bs nh nkv d  amp */
        {"paged prefill 1@0 bs16", 1, 0, 16, 32, 8, 128, 3.0f},
        {"paged prefill 7@0 bs3", 7, 0, 3, 32, 8, 128, 3.0f},
        {"paged prefill 64@0 bs64", 64, 0, 64, 32, 8, 128, 3.0f},
        {"paged prefill 130@0 bs1", 130, 0, 1, 32, 8, 128, 3.0f},
        {"paged prefill 389@0 bs16", 389, 0, 16, 32, 8, 128, 4.0f},
        {"paged prefill 1@5 bs3", 1, 5, 3, 32, 8, 128, 3.0f},
        {"paged prefill 7@5 bs16", 7, 5, 16, 32, 8, 128, 3.0f},
        {"paged prefill 130@5 bs32 d64", 130, 5, 32, 32, 8, 64, 3.0f},
        {"paged prefill 130@5 bs1 d64 mha", 130, 5, 1, 20, 20, 64, 2.0f},
        {"paged prefill 1@380 bs64", 1, 380, 64, 32, 8, 128, 3.0f},
        {"paged prefill 64@380 bs16", 64, 380, 16, 32, 8, 128, 3.0f},
        {"paged prefill 389@380 bs32", 389, 380, 32, 32, 8, 128, 3.0f},
        {"paged prefill 389@380 bs3 d64", 389, 380, 3, 32, 8, 64, 3.0f},
        {"paged prefill 70@380 bs16", 70, 380, 16, 32, 8, 128, 3.0f},
        {"paged prefill 70@380 bs64", 70, 380, 64, 32, 8, 128, 3.0f},
        {"paged prefill 389@0 bs64", 389, 0, 64, 32, 8, 128, 4.0f},
        {"paged prefill 150@37 bs16 gqa 6/2", 150, 37, 16, 6, 2, 128, 3.0f},
        {"paged prefill 129@127 bs64 gqa 6/2", 129, 127, 64, 6, 2, 128, 3.0f},
        {"paged prefill 17@130 head_dim 96 (simple)", 17, 130, 16, 4, 2, 96, 2.0f},
    };
    for (size_t i = 0; i < sizeof ppcases / sizeof ppcases[0]; i++)
        run_paged_prefill_case(&ppcases[i]);

    static const paged_prefill_batch_case pbcases[] = {
        /* name, n_seqs, skip_rows, t_q[], q_pos0[], bs, nh, nkv, d */
        {"paged prefill batch 1 seq", 1, 0, {389}, {0}, 16, 32, 8, 128},
        {"paged prefill batch 5 seqs", 5, 3, {1, 130, 64, 389, 7}, {0, 5, 380, 0, 200}, 16, 32, 8, 128},
        {"paged prefill batch 4 seqs bs3", 4, 1, {65, 1, 200, 129}, {17, 64, 0, 3}, 3, 32, 8, 128},
        {"paged prefill batch 3 seqs d64", 3, 2, {130, 1, 77}, {5, 0, 300}, 32, 32, 8, 64},
        {"paged prefill batch 3 seqs bs64", 3, 2, {70, 389, 130}, {380, 0, 250}, 64, 32, 8, 128},
        {"paged prefill batch 4 seqs bs16 gqa 6/2", 4, 1, {129, 1, 70, 257}, {0, 300, 380, 5}, 16, 6, 2, 128},
        {"paged prefill batch 2 seqs head_dim 96 (simple)", 2, 1, {17, 5}, {130, 0}, 16, 4, 2, 96},
    };
    for (size_t i = 0; i < sizeof pbcases / sizeof pbcases[0]; i++)
        run_paged_prefill_batch_case(&pbcases[i]);

    if (timing) {
        printf("\nkernels: registers/thread, dynamic smem, resident blocks/SM\n");
        for (int v = 0; v < vox_k_attention_variant_count(); v++) {
            int regs, smem, blocks;
            if (vox_k_attention_variant_info(v, &regs, &smem, &blocks))
                printf("  %-22s %4d regs %7d B smem %3d blocks/SM\n", vox_k_attention_variant_name(v),
                       regs, smem, blocks);
        }
        for (int v = 1; v < DECODE_VARIANTS; v++)
            for (int d = 64; d <= 128; d += 64) {
                int regs, smem, blocks;
                if (vox_k_decode_attention_variant_info(v, d, &regs, &smem, &blocks))
                    printf("  decode %-16s d%-3d %4d regs %7d B smem %3d blocks/SM\n",
                           decode_variant_name(v), d, regs, smem, blocks);
            }
        printf("\ntimings (printed, not asserted):\n");
        time_prefill("encoder chunk x1", 1, 1500, 20, 20, 64, 0, 20);
        time_prefill("encoder chunk x8", 8, 1500, 20, 20, 64, 0, 10);
        time_prefill("prefill 388", 1, 388, 32, 8, 128, 1, 50);
        /* a prompt step's prompts: six 30 s prompts in one launch (z = sequence) */
        time_prefill("prefill 388 x6", 6, 388, 32, 8, 128, 1, 30);
        time_prefill("prefill 2048", 1, 2048, 32, 8, 128, 1, 20);
        time_prefill("prefill 4096", 1, 4096, 32, 8, 128, 1, 10);
        time_prefill("prefill 32768", 1, 32768, 32, 8, 128, 1, 2);
        time_decode("decode 400", 1, 400, 32, 8, 128);
        time_decode("decode 400 batch 8", 8, 400, 32, 8, 128);
        time_decode("decode 450 batch 32", 32, 450, 32, 8, 128);
        time_decode("decode 450 batch 128", 128, 450, 32, 8, 128);
        /* the same bytes with one KV head a sequence: each sequence's K (and V) one contiguous
         * run, against 256-byte rows 2 KB apart above (what the memory system makes of them) */
        time_decode("decode 450 batch 1024 kv1", 1024, 450, 4, 1, 128);
        time_decode("decode 32768", 1, 32768, 32, 8, 128);
    }
    vox_backend_destroy(g_cpu);
    return test_finish("test_kernels_attention");
}
