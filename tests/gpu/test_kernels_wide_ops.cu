// kernels/wide_ops.cuh, the wide persistent decode step's projections, one launch running ops
// one after the other on the block's units, against a CPU reference with the op-by-op path's
// rounding points: q|k|v (RMSNorm'd input; stored, or with RoPE into queries and the KV cache's
// rows), o- and down-like (copied input, residual add, the rows' sums of squares over each tile),
// gate|up (RMSNorm'd, SwiGLU), and the RMSNorm as an op of its own (EPI_NORM).
//
// The bound, every element (derived, not fitted): the kernel's fp32 sum P' of a row's products
// differs from the exact sum P of the reference's staged values by
//  - the fp32 chain: (K / 16 + S + 32) * 2^-23 * sum |a_i w_i| (tensor cores' 16-product sums,
//    which may truncate, then K / 16 + S additions, and slack), and
//  - the staged elements whose RMSNorm rounding is ambiguous: x * inv within 2^-20 (relative)
//    of a bf16 rounding boundary, where the device's rsqrtf (~2^-22) may land on either side;
//    each adds |its two candidates' difference| * |w_i|;
// then every bf16 rounding after it adds half an ulp (2^-8 relative) of both values, and
// SwiGLU carries gate's and up's bounds through silu (|silu'| <= 1.1) and the product. A wrong
// row, column, slice, tile or scale is off by the order of the output's rms on most elements,
// far past the bound. EPI_NORM is exact: each element the reference's, or either candidate where
// the rounding is ambiguous. Also checked: the sums of squares (EPI_ADD) against the kernel's own
// y, relative 1e-5 (128 fp32 additions in another order), and the tickets left zero.
//
// Cases: awkward rows (1, 9, 17, 24, 33, 50, 64), n not a multiple of a tile, k not of a k-block,
// more slices than k-blocks, fewer units than blocks and several a block; ops chained in one
// launch as the step chains them (o -> gate|up -> down, and o -> norm -> gate|up -> down), each
// checked on the inputs the kernel gave it; three independent ops in one launch (the ring's count
// and the dealing's offset carried from op to op). WIDE_OPS_SMALL=1 runs the small ones only
// (compute-sanitizer). sm_90a only; skips elsewhere.
//
// Timing (unless --no-timing): the decoder's four projections (q|k|v with its RoPE and cache
// write) at 16, 32 and 64 rows, streamed one after the other through copies of a layer's weights
// larger than L2, as TB/s of weights: each op alone, whole layers, layers chained (every op waits
// for the one before, as in the step), and with the RMSNorms as ops of their own.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "gpu_test_util.h"
#include "wide_ops.cuh"

using wide::Op;

namespace {

__global__ void __launch_bounds__(wide::kThreads, 1) wide_ops_kernel(const Op *ops, int n_ops, int rows, bool tma) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) unsigned char smem_raw[];
    wide::Shared &sm = wide::shared_init(smem_raw, tma);
    // 512 threads start with 128 registers each: the copiers give 72 of theirs to the stagers
    // (whose loop holds an op, the staging's and the attention's state: at 128 they spilled)
    if (threadIdx.x >= wide::kConsumers + wide::kCopiers) {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 200;\n");
        wide::stage_inputs(sm, ops, n_ops, rows);
        return;
    }
    if (threadIdx.x >= wide::kConsumers) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
        wide::copy_weights(sm, ops, n_ops);
        return;
    }
    wide::consume(sm, ops, n_ops, rows);
#else
    (void)ops, (void)n_ops, (void)rows, (void)tma;
#endif
}

gtu_rng g_rng = gtu_rng_seed(0x71de);
int g_grid;
bool g_tma = false; // the ops carry tensor maps (Op::wmap) and the copiers use them

// A device copy of w's tensor map (wide::encode_weight_map), or NULL without g_tma.
const CUtensorMap *weight_map(const void *w, int n, int k, std::vector<void *> &dev) {
    if (!g_tma || n == 0) return nullptr;
    CUtensorMap map;
    CHECK_MSG(wide::encode_weight_map(&map, w, n, k), "the driver encodes a tensor map of %d x %d", n, k);
    CUtensorMap *d;
    GTU_CUDA(cudaMalloc(&d, sizeof map));
    GTU_CUDA(cudaMemcpy(d, &map, sizeof map, cudaMemcpyHostToDevice));
    dev.push_back(d);
    return d;
}

float bfr(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
std::vector<__nv_bfloat16> to_bf16(const std::vector<float> &f) {
    std::vector<__nv_bfloat16> b(f.size());
    for (size_t i = 0; i < f.size(); i++) b[i] = __float2bfloat16_rn(f[i]);
    return b;
}
// n bf16 values (as floats) uniform in [lo, hi)
std::vector<float> rand_bf16(size_t n, float lo, float hi) {
    std::vector<float> f(n);
    for (auto &v : f) v = bfr(gtu_uniform(&g_rng, lo, hi));
    return f;
}
template <typename T> T *upload(const std::vector<T> &h) { // typed gtu_dev_upload (which takes n = 0)
    return (T *)gtu_dev_upload(h.data(), h.size() * sizeof(T));
}
double silu(double g) { return g / (1.0 + exp(-g)); }

struct Case {
    const char *name;
    int epi, rows, n, k, slices;
    bool norm;
    int kv_heads = 0; // EPI_QKV: n / 128 - 2 kv_heads query heads
};

// One op's data on both sides, its launch-ready Op, and its check.
struct OpCase {
    Case c;
    Op op;
    std::vector<float> x, g, resid, w, ssq_parts; // host mirrors (bf16 values as floats)
    int out_cols;                                 // y's columns
    std::vector<int32_t> pos, slot;               // EPI_QKV
    int n_slots = 0;
    std::vector<void *> dev;

    void make(const Case &cs) {
        c = cs;
        op = Op{};
        op.n = c.n, op.k = c.k, op.epi = c.epi;
        wide::wide_plan(op, c.slices);
        out_cols = c.epi == wide::EPI_GLU ? c.n / 2 : c.epi == wide::EPI_NORM ? c.k : c.n;
        x = rand_bf16((size_t)c.rows * c.k, -2.0f, 2.0f);
        w = rand_bf16((size_t)c.n * c.k, -1.0f / sqrtf((float)c.k), 1.0f / sqrtf((float)c.k));
        __nv_bfloat16 *dx = upload(to_bf16(x)), *dw = upload(to_bf16(w));
        dev.push_back(dx), dev.push_back(dw);
        op.w = dw, op.in = dx, op.in_stride = c.k, op.eps = 1e-5f;
        op.wmap = weight_map(dw, c.n, c.k, dev);
        if (c.norm) {
            g = rand_bf16(c.k, 0.5f, 1.5f);
            // the rows' sums of squares in parts of columns, as the op before would publish them
            const int parts = 3;
            ssq_parts.assign((size_t)parts * wide::kMaxRows, 0.0f);
            for (int r = 0; r < c.rows; r++)
                for (int k = 0; k < c.k; k++) {
                    const float v = x[(size_t)r * c.k + k];
                    ssq_parts[(size_t)(k % parts) * wide::kMaxRows + r] += v * v;
                }
            __nv_bfloat16 *dg = upload(to_bf16(g));
            float *ds = upload(ssq_parts);
            dev.push_back(dg), dev.push_back(ds);
            op.norm = dg, op.ssq = ds, op.ssq_parts = parts;
        }
        if (c.epi == wide::EPI_ADD) {
            resid = rand_bf16((size_t)c.rows * c.n, -1.0f, 1.0f);
            __nv_bfloat16 *dr = upload(to_bf16(resid));
            float *dso;
            GTU_CUDA(cudaMalloc(&dso, (size_t)op.tiles * wide::kMaxRows * 4));
            GTU_CUDA(cudaMemset(dso, 0xff, (size_t)op.tiles * wide::kMaxRows * 4));
            dev.push_back(dr), dev.push_back(dso);
            op.resid = dr, op.ssq_out = dso;
        }
        if (c.epi == wide::EPI_QKV) { // distinct slots in a larger cache, positions far apart
            op.kv_heads = c.kv_heads, op.heads = c.n / wide::kTileRows - 2 * c.kv_heads, op.theta = 1e6;
            out_cols = op.heads * wide::kTileRows;
            n_slots = 2 * c.rows + 3;
            pos.resize(c.rows), slot.resize(c.rows);
            for (int r = 0; r < c.rows; r++) pos[r] = 17 + 37 * r, slot[r] = n_slots - 1 - 2 * r;
            const size_t cn = (size_t)n_slots * op.kv_heads * wide::kTileRows;
            std::vector<__nv_bfloat16> sentinel(cn, __float2bfloat16_rn(1.0f));
            __nv_bfloat16 *kc = upload(sentinel), *vc = upload(sentinel);
            int32_t *dpos = upload(pos), *dslot = upload(slot);
            dev.push_back(kc), dev.push_back(vc), dev.push_back(dpos), dev.push_back(dslot);
            op.k_cache = kc, op.v_cache = vc, op.pos = dpos, op.slot = dslot;
        }
        __nv_bfloat16 *dy;
        GTU_CUDA(cudaMalloc(&dy, (size_t)c.rows * out_cols * 2));
        GTU_CUDA(cudaMemset(dy, 0xff, (size_t)c.rows * out_cols * 2)); // NaN: an element never written shows
        dev.push_back(dy);
        op.y = dy, op.y_stride = out_cols;
        if (op.tiles > 0) { // EPI_NORM has none
            const size_t pn = (size_t)op.tiles * op.slices * wide::kMaxRows * wide::kTileRows;
            float *dp;
            unsigned *dt;
            GTU_CUDA(cudaMalloc(&dp, pn * 4));
            GTU_CUDA(cudaMemset(dp, 0xff, pn * 4)); // NaN: a partial never written shows
            GTU_CUDA(cudaMalloc(&dt, (size_t)op.tiles * 4));
            GTU_CUDA(cudaMemset(dt, 0, (size_t)op.tiles * 4));
            dev.push_back(dp), dev.push_back(dt);
            op.part = dp, op.tickets = dt;
        }
    }

    // The exact sum of weight row n's products with staged row r, and its bound beside the
    // kernel's fp32 sum (the fp32 chain and the ambiguous stagings).
    void row_sums(const std::vector<double> &a, const std::vector<double> &amb, int r, int n, double &p,
                  double &e) const {
        double mag = 0, ambig = 0;
        p = 0;
        for (int k = 0; k < c.k; k++) {
            const double t = a[(size_t)r * c.k + k] * w[(size_t)n * c.k + k];
            p += t;
            mag += fabs(t);
            ambig += amb[(size_t)r * c.k + k] * fabs(w[(size_t)n * c.k + k]);
        }
        e = (c.k / 16.0 + op.slices + 32) * ldexp(1.0, -23) * mag + ambig;
    }

    // EPI_NORM, exact: every element the reference's value, or where the rounding of x * inv is
    // ambiguous, either candidate
    void check_norm(const std::vector<__nv_bfloat16> &yb, const std::vector<double> &a, const std::vector<double> &a_lo,
                    const std::vector<double> &a_hi, const std::vector<double> &amb) const {
        int bad = 0;
        for (size_t i = 0; i < yb.size(); i++) {
            const double got = __bfloat162float(yb[i]);
            if (!(got == a[i] || (amb[i] > 0 && (got == a_lo[i] || got == a_hi[i])))) {
                if (bad < 5)
                    fprintf(stderr, "  %s: y[%zu][%zu] = %.6g, reference %.6g\n", c.name, i / c.k, i % c.k, got, a[i]);
                bad++;
            }
        }
        CHECK_MSG(bad == 0, "%s: %d of %zu elements not the reference's", c.name, bad, yb.size());
        printf("check %-28s rows %2d k %5d: %s (exact)\n", c.name, c.rows, c.k, bad ? "FAIL" : "ok");
    }

    // EPI_QKV: the queries in y, the keys and values in their cache rows, every other cache row
    // untouched. RoPE's bound: the inputs' bounds through the rotation, one bf16 ulp (2^-7
    // relative) of cos and sin (the device's sincosf and the host's cos may round apart), and the
    // three roundings.
    void check_qkv(const std::vector<__nv_bfloat16> &yb, const std::vector<double> &a, const std::vector<double> &amb) {
        const double h = ldexp(1.0, -8);
        const int H = op.heads, KV = op.kv_heads, D = wide::kTileRows, kd = KV * D;
        const size_t cn = (size_t)n_slots * kd;
        std::vector<__nv_bfloat16> kc(cn), vc(cn);
        GTU_CUDA(cudaMemcpy(kc.data(), op.k_cache, cn * 2, cudaMemcpyDeviceToHost));
        GTU_CUDA(cudaMemcpy(vc.data(), op.v_cache, cn * 2, cudaMemcpyDeviceToHost));
        int bad = 0;
        double worst = 0;
        auto expect = [&](const char *what, double got, double ref, double bound, int r, int col) {
            const double d = fabs(got - ref);
            if (!(d <= bound)) {
                if (bad < 5)
                    fprintf(stderr, "  %s: %s row %d column %d = %.6g, reference %.6g, bound %.3g\n", c.name, what, r,
                            col, got, ref, bound);
                bad++;
            }
            if (bound > 0 && d / bound > worst) worst = d / bound;
        };
        for (int r = 0; r < c.rows; r++)
            for (int hd = 0; hd < H + 2 * KV; hd++)
                for (int cl = 0; cl < D; cl++) {
                    double P, e;
                    row_sums(a, amb, r, hd * D + cl, P, e);
                    const double ba = e + h * (2 * fabs(P) + e);
                    if (hd >= H + KV) { // a value: stored as it is
                        expect("value", __bfloat162float(vc[(size_t)slot[r] * kd + (hd - H - KV) * D + cl]),
                               bfr((float)P), ba, r, hd * D + cl);
                        continue;
                    }
                    const int i = cl % (D / 2);
                    double P1, e1, P2, e2;
                    row_sums(a, amb, r, hd * D + i, P1, e1);
                    row_sums(a, amb, r, hd * D + i + D / 2, P2, e2);
                    const double x1 = bfr((float)P1), x2 = bfr((float)P2);
                    const double b1 = e1 + h * (2 * fabs(P1) + e1), b2 = e2 + h * (2 * fabs(P2) + e2);
                    const float invf = (float)(1.0 / pow(op.theta, (double)(2 * i) / D));
                    const float ang = (float)pos[r] * invf;
                    const double cs = bfr((float)cos((double)ang)), sn = bfr((float)sin((double)ang));
                    double ref, prop;
                    if (cl < D / 2) {
                        ref = bfr((float)(bfr((float)(x1 * cs)) - bfr((float)(x2 * sn))));
                        prop = fabs(cs) * b1 + fabs(sn) * b2;
                    } else {
                        ref = bfr((float)(bfr((float)(x2 * cs)) + bfr((float)(x1 * sn))));
                        prop = fabs(cs) * b2 + fabs(sn) * b1;
                    }
                    const double mag = fabs(x1 * cs) + fabs(x2 * sn) + fabs(x2 * cs) + fabs(x1 * sn);
                    prop += ldexp(1.0, -7) * mag + 2 * h * mag;
                    const double bound = prop + h * (2 * fabs(ref) + prop);
                    const double got = hd < H ? __bfloat162float(yb[(size_t)r * out_cols + hd * D + cl])
                                              : __bfloat162float(kc[(size_t)slot[r] * kd + (hd - H) * D + cl]);
                    expect(hd < H ? "query" : "key", got, ref, bound, r, hd * D + cl);
                }
        std::vector<char> written(n_slots, 0);
        for (int r = 0; r < c.rows; r++) written[slot[r]] = 1;
        int touched = 0;
        for (int sl = 0; sl < n_slots; sl++)
            if (!written[sl])
                for (int j = 0; j < kd; j++)
                    touched += __bfloat162float(kc[(size_t)sl * kd + j]) != 1.0f ||
                               __bfloat162float(vc[(size_t)sl * kd + j]) != 1.0f;
        CHECK_MSG(bad == 0, "%s: %d elements outside their bound", c.name, bad);
        CHECK_MSG(touched == 0, "%s: %d elements of cache rows no row owns were written", c.name, touched);
        printf("check %-28s rows %2d heads %d + 2 x %d, k %5d slices %d: %s (worst at %.2f of its bound)\n", c.name,
               c.rows, H, KV, c.k, op.slices, bad || touched ? "FAIL" : "ok", worst);
    }

    void check() {
        const double h = ldexp(1.0, -8); // half a bf16 ulp, relative
        // the staged input, and where its rounding is ambiguous, the candidates' difference
        std::vector<double> a(x.begin(), x.end()), amb(x.size(), 0.0);
        std::vector<double> a_lo(c.norm ? x.size() : 0), a_hi(c.norm ? x.size() : 0); // the candidates
        if (c.norm)
            for (int r = 0; r < c.rows; r++) {
                float ss = 0.0f;
                for (int i = 0; i < op.ssq_parts; i++) ss += ssq_parts[(size_t)i * wide::kMaxRows + r];
                const double inv = 1.0 / sqrt((double)(ss / (float)c.k + op.eps));
                for (int k = 0; k < c.k; k++) {
                    const double v = x[(size_t)r * c.k + k] * inv;
                    const float lo = bfr((float)(v * (1 - ldexp(1.0, -20)))), hi = bfr((float)(v * (1 + ldexp(1.0, -20))));
                    const float s_lo = bfr(g[k] * lo), s_hi = bfr(g[k] * hi);
                    a[(size_t)r * c.k + k] = bfr(g[k] * bfr((float)v));
                    amb[(size_t)r * c.k + k] = fabs((double)s_hi - s_lo);
                    a_lo[(size_t)r * c.k + k] = s_lo, a_hi[(size_t)r * c.k + k] = s_hi;
                }
            }
        std::vector<__nv_bfloat16> yb((size_t)c.rows * out_cols);
        GTU_CUDA(cudaMemcpy(yb.data(), op.y, yb.size() * 2, cudaMemcpyDeviceToHost));
        if (c.epi == wide::EPI_NORM) return check_norm(yb, a, a_lo, a_hi, amb);
        if (c.epi == wide::EPI_QKV) return check_qkv(yb, a, amb);
        int bad = 0;
        double worst = 0;
        for (int r = 0; r < c.rows; r++)
            for (int j = 0; j < out_cols; j++) {
                const double got = __bfloat162float(yb[(size_t)r * out_cols + j]);
                double ref, bound, p, e;
                row_sums(a, amb, r, j, p, e);
                const double pr = bfr((float)p), bp = e + h * (2 * fabs(p) + e); // bf16(P), its bound
                if (c.epi == wide::EPI_STORE) {
                    ref = pr, bound = bp;
                } else if (c.epi == wide::EPI_ADD) {
                    const double rs = resid[(size_t)r * c.n + j];
                    ref = bfr((float)(rs + pr));
                    bound = bp + h * (2 * fabs(ref) + bp);
                } else { // gate row j, up row ffn + j
                    double pu, eu;
                    row_sums(a, amb, r, out_cols + j, pu, eu);
                    const double ur = bfr((float)pu), bu = eu + h * (2 * fabs(pu) + eu);
                    const double sr = bfr((float)silu(pr)), bs = 1.1 * bp + h * (2 * fabs(sr) + 1.1 * bp);
                    ref = bfr((float)(sr * ur));
                    const double prod = fabs(sr) * bu + fabs(ur) * bs + bs * bu;
                    bound = prod + h * (2 * fabs(ref) + prod);
                }
                const double d = fabs(got - ref);
                if (!(d <= bound)) {
                    if (bad < 5)
                        fprintf(stderr, "  %s: y[%d][%d] = %.6g, reference %.6g, bound %.3g\n", c.name, r, j, got,
                                ref, bound);
                    bad++;
                }
                if (bound > 0 && d / bound > worst) worst = d / bound;
            }
        CHECK_MSG(bad == 0, "%s: %d of %d elements outside their bound", c.name, bad, c.rows * out_cols);
        int bad_ss = 0;
        if (c.epi == wide::EPI_ADD) { // the tiles' sums of squares of y, as the kernel wrote y
            std::vector<float> so((size_t)op.tiles * wide::kMaxRows);
            GTU_CUDA(cudaMemcpy(so.data(), op.ssq_out, so.size() * 4, cudaMemcpyDeviceToHost));
            for (int t = 0; t < op.tiles; t++)
                for (int r = 0; r < c.rows; r++) {
                    double want = 0;
                    for (int j = t * wide::kTileRows; j < std::min(c.n, (t + 1) * wide::kTileRows); j++) {
                        const double v = __bfloat162float(yb[(size_t)r * out_cols + j]);
                        want += v * v;
                    }
                    const double got = so[(size_t)t * wide::kMaxRows + r];
                    if (!(fabs(got - want) <= 1e-5 * want + 1e-30)) {
                        if (bad_ss < 5)
                            fprintf(stderr, "  %s: ssq tile %d row %d = %.9g, want %.9g\n", c.name, t, r, got, want);
                        bad_ss++;
                    }
                }
            CHECK_MSG(bad_ss == 0, "%s: %d sums of squares wrong", c.name, bad_ss);
        }
        int tickets_left = 0;
        if (op.slices > 1) {
            std::vector<unsigned> tk(op.tiles);
            GTU_CUDA(cudaMemcpy(tk.data(), op.tickets, tk.size() * 4, cudaMemcpyDeviceToHost));
            for (unsigned v : tk) tickets_left += v != 0;
            CHECK_MSG(tickets_left == 0, "%s: %d tickets not left zero", c.name, tickets_left);
        }
        printf("check %-28s rows %2d n %5d k %5d slices %d tiles %3d: %s (worst at %.2f of its bound)\n", c.name,
               c.rows, c.n, c.k, op.slices, op.tiles, bad || bad_ss || tickets_left ? "FAIL" : "ok", worst);
    }
    void release() {
        for (void *d : dev) cudaFree(d);
        dev.clear();
    }
};

void launch(const Op *d_ops, int n_ops, int rows, cudaStream_t st) {
    wide_ops_kernel<<<g_grid, wide::kThreads, wide::kSmemBytes, st>>>(d_ops, n_ops, rows, g_tma);
    GTU_CUDA(cudaGetLastError());
}

// The cases of one launch: made, run, checked.
void check_launch(std::initializer_list<Case> cases) {
    std::vector<OpCase> oc(cases.size());
    std::vector<Op> ops;
    int rows = 0, i = 0;
    for (const Case &c : cases) {
        oc[i].make(c);
        ops.push_back(oc[i++].op);
        rows = c.rows; // one launch, one row count
    }
    for (const Case &c : cases) CHECK_MSG(c.rows == rows, "a launch's cases share their rows");
    for (const Op &op : ops)
        CHECK_MSG(wide::op_supported(op) && wide::units_of(op) <= wide::kUnitSlots * g_grid,
                  "the case's op is one the kernel takes");
    Op *d_ops = upload(ops);
    launch(d_ops, (int)ops.size(), rows, 0);
    GTU_CUDA(cudaDeviceSynchronize());
    for (auto &o : oc) o.check(), o.release();
    cudaFree(d_ops);
}

std::vector<float> download_bf16(const __nv_bfloat16 *d, size_t n) { // gtu_download_bf16_as_f32 as a vector
    float *h = gtu_download_bf16_as_f32(d, n);
    std::vector<float> f(h, h + n);
    free(h);
    return f;
}

// oc's ops chained in one launch as a layer chains them: op i + 1 reads what op i wrote once every
// block has finished it (Op::after / done). Checks that every block counted itself on each op.
void run_chained(std::vector<OpCase> &oc, int rows) {
    const int n = (int)oc.size();
    unsigned *counters;
    GTU_CUDA(cudaMalloc(&counters, n * sizeof(unsigned)));
    GTU_CUDA(cudaMemset(counters, 0, n * sizeof(unsigned)));
    std::vector<Op> ops;
    for (int i = 0; i < n; i++) {
        oc[i].op.done = counters + i;
        oc[i].op.after = i ? counters + i - 1 : nullptr;
        CHECK_MSG(wide::op_supported(oc[i].op), "%s: an op the kernel takes", oc[i].c.name);
        ops.push_back(oc[i].op);
    }
    Op *d_ops = upload(ops);
    launch(d_ops, n, rows, 0);
    GTU_CUDA(cudaDeviceSynchronize());
    std::vector<unsigned> cnt(n);
    GTU_CUDA(cudaMemcpy(cnt.data(), counters, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        CHECK_MSG(cnt[i] == (unsigned)g_grid, "%s: %u of %d blocks counted themselves", oc[i].c.name, cnt[i], g_grid);
    cudaFree(d_ops), cudaFree(counters);
}

// A layer's chain from o on: o (the residual add, its sums of squares) -> gate|up (RMSNorm'd with
// those sums, SwiGLU) -> down (adds to o's output); with norm_pass the RMSNorm is an op of its own
// (EPI_NORM) between o and gate|up, which copies. Each op is checked against the reference on the
// inputs the kernel gave it (its predecessor's output as written), so a missing wait shows as a
// wrong element and the bounds stay those of one op.
void check_chain(int rows, int hidden, int attn, int ffn, bool norm_pass) {
    std::vector<OpCase> oc(norm_pass ? 4 : 3);
    OpCase &o = oc[0], &gu = oc[norm_pass ? 2 : 1], &dn = oc[norm_pass ? 3 : 2];
    o.make({norm_pass ? "norm chain: o" : "chain: o", wide::EPI_ADD, rows, hidden, attn, 4, false});
    if (norm_pass) oc[1].make({"norm chain: norm after o", wide::EPI_NORM, rows, 0, hidden, 1, true});
    gu.make({norm_pass ? "norm chain: gate|up after norm" : "chain: gate|up after o", wide::EPI_GLU, rows, 2 * ffn,
             hidden, 2, !norm_pass});
    dn.make({norm_pass ? "norm chain: down after gate|up" : "chain: down after gate|up", wide::EPI_ADD, rows, hidden,
             ffn, 8, false});
    OpCase &normed = oc[1]; // the op that applies the RMSNorm: the norm pass, or gate|up
    normed.op.in = o.op.y, normed.op.in_stride = o.op.y_stride;
    normed.op.ssq = o.op.ssq_out, normed.op.ssq_parts = o.op.tiles;
    if (norm_pass) gu.op.in = oc[1].op.y, gu.op.in_stride = oc[1].op.y_stride;
    dn.op.in = gu.op.y, dn.op.in_stride = gu.op.y_stride, dn.op.resid = o.op.y;
    run_chained(oc, rows);
    // what each op read, as the kernel wrote it
    normed.x = download_bf16(o.op.y, (size_t)rows * hidden);
    normed.ssq_parts.assign((size_t)o.op.tiles * wide::kMaxRows, 0.0f);
    GTU_CUDA(cudaMemcpy(normed.ssq_parts.data(), o.op.ssq_out, normed.ssq_parts.size() * 4, cudaMemcpyDeviceToHost));
    if (norm_pass) gu.x = download_bf16(oc[1].op.y, (size_t)rows * hidden);
    dn.x = download_bf16(gu.op.y, (size_t)rows * ffn);
    dn.resid = normed.x;
    for (auto &c : oc) c.check(), c.release();
}

// EPI_ATTN against the exact softmax in double: rows of awkward lengths (1 key, one split exactly,
// one key past it, several splits), a paged cache whose blocks are shuffled, GQA groups of 2 and
// 4. The bound, every element: P rounded to bf16 (from the running maximum, as the kernel does)
// moves each weight by at most 2^-8, so the output by 2^-7 x sum p |v| / sum p with slack for
// the rounding's scale; the scores' fp32 sums (128 x 2^-24 x sum |q k|, scaled) move each p by
// e^(2 ds); half an ulp for the output's rounding; 1e-6 of sum p |v| / sum p for the fp32
// accumulation, ex2.approx and the splits' merge.
// with_qkv: a q|k|v op (EPI_QKV) runs first in the same launch, chained, writing the queries and
// each row's newest key and value into the cache; the attention is then checked on the queries
// and the cache as the kernel left them, so it must have waited for them.
void check_attention(const char *name, int rows, int kv, int G, int block_size, int split, int max_len,
                     bool with_qkv = false) {
    const int heads = kv * G, D = wide::kTileRows, kd = kv * D;
    std::vector<int32_t> len(rows);
    for (int r = 0; r < rows; r++) len[r] = 1 + (r * 97 + 13) % max_len;
    const int fixed[] = {1, split, split + 1, max_len};
    for (int i = 0; i < 4 && i < rows; i++) len[i] = std::min(fixed[i], max_len);
    int width = 0, blocks = 0;
    for (int r = 0; r < rows; r++) {
        width = std::max(width, (len[r] + block_size - 1) / block_size);
        blocks += (len[r] + block_size - 1) / block_size;
    }
    blocks += 3; // blocks no row owns
    std::vector<int32_t> perm(blocks), table((size_t)rows * width, 0);
    for (int i = 0; i < blocks; i++) perm[i] = i;
    for (int i = blocks - 1; i > 0; i--) std::swap(perm[i], perm[gtu_next_u64(&g_rng) % (i + 1)]);
    for (int r = 0, next = 0; r < rows; r++)
        for (int i = 0; i < (len[r] + block_size - 1) / block_size; i++) table[(size_t)r * width + i] = perm[next++];
    const size_t n_slots = (size_t)blocks * block_size;
    std::vector<float> q = rand_bf16((size_t)rows * heads * D, -1.0f, 1.0f);
    std::vector<float> kc = rand_bf16(n_slots * kd, -1.0f, 1.0f), vc = rand_bf16(n_slots * kd, -1.0f, 1.0f);
    const float scale = 1.0f / sqrtf((float)D);
    int S = 0;
    for (int r = 0; r < rows; r++) S = std::max(S, (len[r] + split - 1) / split);
    std::vector<void *> dev;
    Op op = {};
    op.epi = wide::EPI_ATTN, op.heads = heads, op.kv_heads = kv;
    wide::wide_plan(op, 1);
    __nv_bfloat16 *dq = upload(to_bf16(q)), *dk = upload(to_bf16(kc)), *dv = upload(to_bf16(vc));
    int32_t *dlen = upload(len), *dtab = upload(table);
    const size_t slots = (size_t)rows * kv * G * S;
    float *dpart;
    unsigned *dtk;
    __nv_bfloat16 *dy;
    GTU_CUDA(cudaMalloc(&dpart, slots * (D + 2) * 4));
    GTU_CUDA(cudaMemset(dpart, 0xff, slots * (D + 2) * 4));
    GTU_CUDA(cudaMalloc(&dtk, (size_t)rows * kv * 4));
    GTU_CUDA(cudaMemset(dtk, 0, (size_t)rows * kv * 4));
    GTU_CUDA(cudaMalloc(&dy, (size_t)rows * heads * D * 2));
    GTU_CUDA(cudaMemset(dy, 0xff, (size_t)rows * heads * D * 2));
    dev = {dq, dk, dv, dlen, dtab, dpart, dtk, dy};
    op.in = dq, op.in_stride = heads * D, op.k_cache = dk, op.v_cache = dv, op.len = dlen, op.table = dtab;
    op.table_width = width, op.block_size = block_size, op.scale_log2 = scale * 1.4426950408889634f;
    op.attn_split = split, op.attn_splits = S, op.part = dpart, op.tickets = dtk, op.y = dy, op.y_stride = heads * D;
    CHECK_MSG(wide::op_supported(op), "%s: an op the kernel takes", name);
    std::vector<Op> ops;
    unsigned *counters = nullptr;
    if (with_qkv) { // x [rows, 264] @ W^T -> queries into dq, the newest keys and values into the cache
        const int hidden = 264, n = (heads + 2 * kv) * D;
        std::vector<float> x = rand_bf16((size_t)rows * hidden, -2.0f, 2.0f);
        std::vector<float> w = rand_bf16((size_t)n * hidden, -1.0f / sqrtf((float)hidden), 1.0f / sqrtf((float)hidden));
        std::vector<int32_t> pos(rows), slot(rows);
        for (int r = 0; r < rows; r++) {
            const int j = len[r] - 1;
            pos[r] = j, slot[r] = table[(size_t)r * width + j / block_size] * block_size + j % block_size;
        }
        Op qk = {};
        qk.epi = wide::EPI_QKV, qk.n = n, qk.k = hidden;
        wide::wide_plan(qk, 2);
        __nv_bfloat16 *dx = upload(to_bf16(x)), *dw = upload(to_bf16(w));
        int32_t *dpos = upload(pos), *dslot = upload(slot);
        float *qpart;
        unsigned *qtk;
        const size_t pn = (size_t)qk.tiles * qk.slices * wide::kMaxRows * wide::kTileRows;
        GTU_CUDA(cudaMalloc(&qpart, pn * 4));
        GTU_CUDA(cudaMalloc(&qtk, (size_t)qk.tiles * 4));
        GTU_CUDA(cudaMemset(qtk, 0, (size_t)qk.tiles * 4));
        GTU_CUDA(cudaMalloc(&counters, 2 * sizeof(unsigned)));
        GTU_CUDA(cudaMemset(counters, 0, 2 * sizeof(unsigned)));
        dev.insert(dev.end(), {dx, dw, dpos, dslot, qpart, qtk, counters});
        qk.w = dw, qk.wmap = weight_map(dw, n, hidden, dev), qk.in = dx, qk.in_stride = hidden, qk.eps = 1e-5f;
        qk.heads = heads, qk.kv_heads = kv, qk.theta = 1e6, qk.pos = dpos, qk.slot = dslot;
        qk.k_cache = dk, qk.v_cache = dv, qk.y = dq, qk.y_stride = heads * D, qk.part = qpart, qk.tickets = qtk;
        qk.done = counters, op.after = counters, op.done = counters + 1;
        CHECK_MSG(wide::op_supported(qk), "%s: the q|k|v op is one the kernel takes", name);
        ops.push_back(qk);
    }
    ops.push_back(op);
    Op *d_ops = upload(ops);
    launch(d_ops, (int)ops.size(), rows, 0);
    GTU_CUDA(cudaDeviceSynchronize());
    if (with_qkv) { // the queries and the cache as the q|k|v op left them
        q = download_bf16(dq, q.size());
        kc = download_bf16(dk, kc.size());
        vc = download_bf16(dv, vc.size());
    }
    std::vector<float> y = download_bf16(dy, (size_t)rows * heads * D);
    std::vector<unsigned> tk((size_t)rows * kv);
    GTU_CUDA(cudaMemcpy(tk.data(), dtk, tk.size() * 4, cudaMemcpyDeviceToHost));
    int bad = 0, tickets_left = 0;
    double worst = 0;
    for (unsigned v : tk) tickets_left += v != 0;
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < heads; h++) {
            const int g = h / G;
            std::vector<double> sc(len[r]), pw(len[r]);
            double mx = -INFINITY, ds = 0;
            for (int j = 0; j < len[r]; j++) {
                const size_t slot = (size_t)table[(size_t)r * width + j / block_size] * block_size + j % block_size;
                double dot = 0, mag = 0;
                for (int d = 0; d < D; d++) {
                    const double t = (double)q[((size_t)r * heads + h) * D + d] * kc[slot * kd + (size_t)g * D + d];
                    dot += t, mag += fabs(t);
                }
                sc[j] = dot * scale;
                ds = std::max(ds, D * ldexp(1.0, -24) * mag * scale);
                mx = std::max(mx, sc[j]);
            }
            double L = 0;
            for (int j = 0; j < len[r]; j++) L += pw[j] = exp(sc[j] - mx);
            for (int d = 0; d < D; d++) {
                double o = 0, pv = 0;
                for (int j = 0; j < len[r]; j++) {
                    const size_t slot = (size_t)table[(size_t)r * width + j / block_size] * block_size + j % block_size;
                    const double v = vc[slot * kd + (size_t)g * D + d];
                    o += pw[j] * v, pv += pw[j] * fabs(v);
                }
                o /= L, pv /= L;
                const double bound = ldexp(1.0, -7) * pv + (exp(2 * ds) - 1) * pv + ldexp(1.0, -8) * fabs(o) + 1e-6 * pv;
                const double got = y[((size_t)r * heads + h) * D + d], diff = fabs(got - o);
                if (!(diff <= bound)) {
                    if (bad < 5)
                        fprintf(stderr, "  %s: row %d (%d keys) head %d dim %d = %.6g, reference %.6g, bound %.3g\n",
                                name, r, len[r], h, d, got, o, bound);
                    bad++;
                }
                if (bound > 0 && diff / bound > worst) worst = diff / bound;
            }
        }
    CHECK_MSG(bad == 0, "%s: %d elements outside their bound", name, bad);
    CHECK_MSG(tickets_left == 0, "%s: %d tickets not left zero", name, tickets_left);
    printf("check %-28s rows %2d heads %d / %d, blocks of %d, splits of %d (%d at most): %s (worst at %.2f of its "
           "bound)\n",
           name, rows, heads, kv, block_size, split, S, bad || tickets_left ? "FAIL" : "ok", worst);
    for (void *d : dev) cudaFree(d);
    cudaFree(d_ops);
}

// The decoder's projections streamed: `layers` copies of a layer's four weights (past L2), each
// layer's ops in the step's order, one launch; TB/s of weights.
// norm_pass: the two RMSNorms as ops of their own (EPI_NORM) before q|k|v and gate|up, which copy.
// o_slices: o's K-slices (4: 96 units, 36 of 132 blocks without one; 11: 264, two a block).
// attention: the decode attention (EPI_ATTN) between q|k|v and o, over kAttnKeys keys a row, each
// layer copy its own cache.
constexpr int kAttnKeys = 330;
void time_layers(int rows, int gu_slices, bool norms = true, bool chained = false, bool norm_pass = false,
                 int o_slices = 4, bool attention = false) {
    const int hidden = 3072, qkv = 6144, ffn = 8192, attn = 4096;
    const size_t per_layer = ((size_t)qkv * hidden + (size_t)hidden * attn + 2 * (size_t)ffn * hidden +
                              (size_t)hidden * ffn) * 2;
    const int layers = (int)(1.2e9 / per_layer) + 1;
    __nv_bfloat16 *wts, *act, *g, *y;
    float *ssq, *part;
    unsigned *tickets;
    GTU_CUDA(cudaMalloc(&wts, per_layer * layers));
    GTU_CUDA(cudaMemset(wts, 0x3c, per_layer * layers)); // values do not matter here
    GTU_CUDA(cudaMalloc(&act, (size_t)wide::kMaxRows * 2 * ffn * 2));
    GTU_CUDA(cudaMemset(act, 0x3c, (size_t)wide::kMaxRows * 2 * ffn * 2));
    GTU_CUDA(cudaMalloc(&g, (size_t)ffn * 2));
    GTU_CUDA(cudaMemset(g, 0x3c, (size_t)ffn * 2));
    GTU_CUDA(cudaMalloc(&y, (size_t)wide::kMaxRows * 2 * ffn * 2));
    __nv_bfloat16 *xn; // the norm pass's output
    GTU_CUDA(cudaMalloc(&xn, (size_t)wide::kMaxRows * hidden * 2));
    GTU_CUDA(cudaMalloc(&ssq, 64 * wide::kMaxRows * 4));
    GTU_CUDA(cudaMemset(ssq, 0, 64 * wide::kMaxRows * 4));
    // every op its own partials and tickets: ops that follow each other overlap
    const size_t unit_floats = (size_t)wide::kMaxRows * wide::kTileRows;
    GTU_CUDA(cudaMalloc(&part, (size_t)layers * 4 * 512 * unit_floats * 4)); // 512 units an op at most
    GTU_CUDA(cudaMalloc(&tickets, (size_t)layers * 4 * 256 * 4));
    GTU_CUDA(cudaMemset(tickets, 0, (size_t)layers * 4 * 256 * 4));
    struct Shape {
        const char *name;
        int n, k, slices, epi;
        bool norm;
    } shapes[4] = {{"q|k|v", qkv, hidden, 3, wide::EPI_QKV, true},
                   {"o", hidden, attn, o_slices, wide::EPI_ADD, false},
                   {"gate|up", 2 * ffn, hidden, gu_slices, wide::EPI_GLU, true},
                   {"down", hidden, ffn, 8, wide::EPI_ADD, false}};
    // q|k|v's RoPE and cache rows: positions ~300-ish, slot r for row r
    std::vector<int32_t> hpos(wide::kMaxRows), hslot(wide::kMaxRows);
    for (int r = 0; r < wide::kMaxRows; r++) hpos[r] = 200 + 7 * r, hslot[r] = r;
    int32_t *dpos = upload(hpos), *dslot = upload(hslot);
    __nv_bfloat16 *kcache, *vcache;
    GTU_CUDA(cudaMalloc(&kcache, (size_t)wide::kMaxRows * 1024 * 2));
    GTU_CUDA(cudaMalloc(&vcache, (size_t)wide::kMaxRows * 1024 * 2));
    // g_tma: every weight copy's tensor map
    CUtensorMap *maps = nullptr;
    if (g_tma) {
        std::vector<CUtensorMap> hm((size_t)layers * 4);
        for (int l = 0; l < layers; l++) {
            size_t off = l * per_layer / 2;
            for (int s = 0; s < 4; s++) {
                CHECK_MSG(wide::encode_weight_map(&hm[l * 4 + s], wts + off, shapes[s].n, shapes[s].k), "tensor map");
                off += (size_t)shapes[s].n * shapes[s].k;
            }
        }
        maps = upload(hm);
    }
    // chained: every op waits for the one before it (its counter), as in the step
    unsigned *counters;
    const size_t n_counters = (size_t)layers * 8;
    // the attention's caches (a layer copy each), its table (row r: blocks r * per_row ...), lengths,
    // partials and tickets
    const int bs = 16, per_row = (kAttnKeys + bs - 1) / bs, att_splits = (kAttnKeys + 63) / 64;
    const size_t cache_rows = (size_t)wide::kMaxRows * per_row * bs, cache_elems = cache_rows * 1024;
    const size_t att_slots = (size_t)wide::kMaxRows * 8 * 4 * att_splits;
    __nv_bfloat16 *att_k = nullptr, *att_v = nullptr, *att_out = nullptr;
    float *att_part = nullptr;
    unsigned *att_tk = nullptr;
    int32_t *att_len = nullptr, *att_tab = nullptr;
    if (attention) {
        GTU_CUDA(cudaMalloc(&att_k, cache_elems * 2 * layers));
        GTU_CUDA(cudaMalloc(&att_v, cache_elems * 2 * layers));
        GTU_CUDA(cudaMemset(att_k, 0x3c, cache_elems * 2 * layers));
        GTU_CUDA(cudaMemset(att_v, 0x3c, cache_elems * 2 * layers));
        GTU_CUDA(cudaMalloc(&att_out, (size_t)wide::kMaxRows * 4096 * 2));
        GTU_CUDA(cudaMalloc(&att_part, att_slots * (wide::kTileRows + 2) * 4 * layers));
        GTU_CUDA(cudaMalloc(&att_tk, (size_t)wide::kMaxRows * 8 * 4 * layers));
        GTU_CUDA(cudaMemset(att_tk, 0, (size_t)wide::kMaxRows * 8 * 4 * layers));
        std::vector<int32_t> hl(wide::kMaxRows, kAttnKeys), ht((size_t)wide::kMaxRows * per_row);
        for (size_t i = 0; i < ht.size(); i++) ht[i] = (int32_t)i;
        att_len = upload(hl), att_tab = upload(ht);
    }
    GTU_CUDA(cudaMalloc(&counters, n_counters * sizeof(unsigned)));
    for (int only = -1; only < (norm_pass ? 0 : 4); only++) { // each op alone streamed over the copies, then the layers
        std::vector<Op> ops;
        for (int l = 0; l < layers; l++) {
            size_t off = l * per_layer / 2;
            for (int s = 0; s < 4; s++) {
                if (norm_pass && shapes[s].norm) { // its RMSNorm first, once for every block
                    Op nm = {};
                    nm.epi = wide::EPI_NORM, nm.k = hidden;
                    wide::wide_plan(nm, 1);
                    nm.in = act, nm.in_stride = hidden, nm.norm = g, nm.ssq = ssq, nm.ssq_parts = 24, nm.eps = 1e-5f;
                    nm.y = xn, nm.y_stride = hidden;
                    if (chained) {
                        nm.done = counters + l * 8 + s + 4;
                        if (!ops.empty()) nm.after = ops.back().done;
                    }
                    ops.push_back(nm);
                }
                Op op = {};
                op.n = shapes[s].n, op.k = shapes[s].k, op.epi = shapes[s].epi;
                wide::wide_plan(op, shapes[s].slices);
                op.w = wts + off, op.in = act, op.in_stride = op.k, op.eps = 1e-5f;
                if (maps) op.wmap = maps + l * 4 + s;
                if (shapes[s].norm && norm_pass) op.in = xn;
                else if (shapes[s].norm && norms) op.norm = g, op.ssq = ssq, op.ssq_parts = 24;
                CHECK_MSG(wide::units_of(op) <= 512 && op.tiles <= 256, "the timing's buffers hold the op");
                op.part = part + (size_t)(l * 4 + s) * 512 * unit_floats, op.tickets = tickets + (l * 4 + s) * 256;
                op.y = y, op.y_stride = op.epi == wide::EPI_GLU ? op.n / 2 : op.n;
                if (op.epi == wide::EPI_QKV) {
                    op.heads = 32, op.kv_heads = 8, op.theta = 1e6, op.y_stride = 32 * 128;
                    op.pos = dpos, op.slot = dslot, op.k_cache = kcache, op.v_cache = vcache;
                }
                if (op.epi == wide::EPI_ADD) op.resid = act, op.ssq_out = ssq + 32 * wide::kMaxRows;
                off += (size_t)op.n * op.k;
                if (chained) {
                    op.done = counters + l * 8 + s; // the norms take + 4 and + 6, the attention + 5
                    if (!ops.empty()) op.after = ops.back().done;
                }
                if (only < 0 || only == s) ops.push_back(op);
                if (attention && s == 0 && only < 0) { // the attention after q|k|v
                    Op at = {};
                    at.epi = wide::EPI_ATTN, at.heads = 32, at.kv_heads = 8;
                    wide::wide_plan(at, 1);
                    at.in = y, at.in_stride = 32 * 128, at.y = att_out, at.y_stride = 32 * 128;
                    at.k_cache = att_k + cache_elems * l, at.v_cache = att_v + cache_elems * l;
                    at.len = att_len, at.table = att_tab, at.table_width = per_row, at.block_size = bs;
                    at.scale_log2 = 1.4426950408889634f / sqrtf(128.0f), at.attn_split = 64, at.attn_splits = att_splits;
                    at.part = att_part + att_slots * (wide::kTileRows + 2) * l, at.tickets = att_tk + wide::kMaxRows * 8 * l;
                    if (chained) at.done = counters + l * 8 + 5, at.after = ops.back().done;
                    ops.push_back(at);
                }
            }
        }
        Op *d_ops = upload(ops);
        auto run = [&]() { // the counters zeroed, then the launch
            GTU_CUDA(cudaMemsetAsync(counters, 0, n_counters * sizeof(unsigned)));
            launch(d_ops, (int)ops.size(), rows, 0);
        };
        double us;
        GTU_TIME_US(us, 3, run());
        us /= layers;
        double bytes = 0;
        for (int s = 0; s < 4; s++)
            if (only < 0 || only == s) bytes += (double)shapes[s].n * shapes[s].k * 2;
        if (only < 0) {
            printf("time layer   rows %2d gate|up slices %d, o slices %d%s%s%s: %7.1f us a layer, weights %.2f TB/s "
                   "(%.0f us a 30-layer step of projections)\n",
                   rows, gu_slices, o_slices, norm_pass ? ", norm pass" : norms ? "" : ", no RMSNorm",
                   chained ? ", chained" : "", g_tma ? ", TMA" : "", us, bytes / us * 1e-6, 30 * us);
            if (attention)
                printf("     (with the attention over %d keys a row: %.1f MB of K/V a layer)\n", kAttnKeys,
                       rows * (double)kAttnKeys * 1024 * 2 * 2 * 1e-6);
        } else {
            printf("time %-7s rows %2d slices %d%s: %6.1f us, weights %.2f TB/s\n", shapes[only].name, rows,
                   shapes[only].slices, g_tma ? ", TMA" : "", us, bytes / us * 1e-6);
        }
        cudaFree(d_ops);
    }
    cudaFree(wts), cudaFree(act), cudaFree(g), cudaFree(y), cudaFree(ssq), cudaFree(part), cudaFree(tickets);
    cudaFree(counters), cudaFree(xn), cudaFree(dpos), cudaFree(dslot), cudaFree(kcache), cudaFree(vcache);
    if (maps) cudaFree(maps);
    if (attention) cudaFree(att_k), cudaFree(att_v), cudaFree(att_out), cudaFree(att_part), cudaFree(att_tk),
        cudaFree(att_len), cudaFree(att_tab);
}

void run_checks(bool small) {
    // one op a launch
    check_launch({{"store, norm, one row", wide::EPI_STORE, 1, 200, 72, 1, true}});
    check_launch({{"store, norm, 3 slices", wide::EPI_STORE, 9, 1000, 1000, 3, true}});
    check_launch({{"store, copied, 7 slices > k-blocks", wide::EPI_STORE, 33, 263, 200, 7, false}});
    check_launch({{"add, one slice, awkward", wide::EPI_ADD, 50, 136, 520, 1, false}});
    check_launch({{"glu, norm, one slice", wide::EPI_GLU, 17, 400, 1544, 1, true}});
    check_launch({{"glu, copied, 5 slices", wide::EPI_GLU, 1, 2 * 72, 328, 5, false}});
    // several ops in one launch, chained as in the step, then independent (the ring and the
    // dealing carried from op to op)
    check_chain(24, 520, 264, 392, false);
    check_chain(24, 520, 264, 392, true);
    check_launch({{"norm alone, awkward", wide::EPI_NORM, 33, 0, 1000, 1, true}});
    check_launch({{"q|k|v, RoPE, cache, norm", wide::EPI_QKV, 9, (3 + 2 * 2) * 128, 520, 3, true, 2}});
    check_attention("attention, groups of 4", 6, 2, 4, 16, 64, 300);
    check_attention("attention, groups of 2, odd blocks", 5, 2, 2, 7, 32, 100);
    check_attention("attention after q|k|v, chained", 7, 2, 4, 16, 64, 200, true);
    if (!small) {
        check_launch({{"add, 4 slices", wide::EPI_ADD, 64, 3072, 4096, 4, false}});
        check_launch({{"add, 8 slices, k 8192", wide::EPI_ADD, 33, 520, 8192, 8, false}});
        check_launch({{"glu, norm, 2 slices", wide::EPI_GLU, 64, 2 * 1000, 3072, 2, true}});
        check_chain(17, 3072, 4096, 8192, false);
        check_chain(17, 3072, 4096, 8192, true);
        check_launch({{"q|k|v, RoPE, cache, decoder shape", wide::EPI_QKV, 24, (32 + 2 * 8) * 128, 3072, 3, true, 8}});
        check_attention("attention, decoder shape", 33, 8, 4, 16, 64, 450);
        check_launch({{"3 ops: store, norm", wide::EPI_STORE, 24, 6144, 3072, 3, true},
                      {"3 ops: add", wide::EPI_ADD, 24, 3072, 4096, 4, false},
                      {"3 ops: glu, norm", wide::EPI_GLU, 24, 2 * 520, 3072, 2, true}});
    }
}

// The LM head as the wide kernel's op: the final RMSNorm'd rows times lm_head [131072, 3072] into
// bf16 logits (EPI_STORE with a norm, one slice: 1024 tiles), two copies of the weights streamed
// (1.6 GB, past L2); us and TB/s a copy.
void time_lm(int rows) {
    const int vocab = 131072, hidden = 3072, copies = 2;
    const size_t wn = (size_t)vocab * hidden;
    __nv_bfloat16 *w, *x, *g, *logits;
    float *ssq, *part;
    unsigned *tickets;
    GTU_CUDA(cudaMalloc(&w, wn * 2 * copies));
    GTU_CUDA(cudaMemset(w, 0x3c, wn * 2 * copies));
    GTU_CUDA(cudaMalloc(&x, (size_t)wide::kMaxRows * hidden * 2));
    GTU_CUDA(cudaMemset(x, 0x3c, (size_t)wide::kMaxRows * hidden * 2));
    GTU_CUDA(cudaMalloc(&g, (size_t)hidden * 2));
    GTU_CUDA(cudaMemset(g, 0x3c, (size_t)hidden * 2));
    GTU_CUDA(cudaMalloc(&logits, (size_t)wide::kMaxRows * vocab * 2));
    GTU_CUDA(cudaMalloc(&ssq, 24 * wide::kMaxRows * 4));
    GTU_CUDA(cudaMemset(ssq, 0, 24 * wide::kMaxRows * 4));
    GTU_CUDA(cudaMalloc(&part, (size_t)copies * (vocab / wide::kTileRows) * wide::kMaxRows * wide::kTileRows * 4));
    GTU_CUDA(cudaMalloc(&tickets, (size_t)copies * (vocab / wide::kTileRows) * 4));
    GTU_CUDA(cudaMemset(tickets, 0, (size_t)copies * (vocab / wide::kTileRows) * 4));
    std::vector<CUtensorMap> hm(copies);
    std::vector<Op> ops;
    CUtensorMap *maps = nullptr;
    if (g_tma) {
        for (int c = 0; c < copies; c++)
            CHECK_MSG(wide::encode_weight_map(&hm[c], w + wn * c, vocab, hidden), "tensor map");
        maps = upload(hm);
    }
    for (int c = 0; c < copies; c++) {
        Op op = {};
        op.epi = wide::EPI_STORE, op.n = vocab, op.k = hidden;
        wide::wide_plan(op, 1);
        CHECK_MSG(wide::units_of(op) <= wide::kUnitSlots * g_grid, "the LM head's units fit the slots");
        op.w = w + wn * c, op.wmap = maps ? maps + c : nullptr, op.in = x, op.in_stride = hidden, op.eps = 1e-5f;
        op.norm = g, op.ssq = ssq, op.ssq_parts = 24, op.y = logits, op.y_stride = vocab;
        op.part = part + (size_t)c * op.tiles * wide::kMaxRows * wide::kTileRows, op.tickets = tickets + c * op.tiles;
        ops.push_back(op);
    }
    Op *d_ops = upload(ops);
    double us;
    GTU_TIME_US(us, 3, launch(d_ops, copies, rows, 0));
    us /= copies;
    printf("time lm_head rows %2d%s: %7.1f us, weights %.2f TB/s\n", rows, g_tma ? ", TMA" : "", us,
           wn * 2.0 / us * 1e-6);
    cudaFree(d_ops), cudaFree(w), cudaFree(x), cudaFree(g), cudaFree(logits), cudaFree(ssq), cudaFree(part);
    cudaFree(tickets);
    if (maps) cudaFree(maps);
}

void run_timing() {
    for (int rows : {16, 32, 64}) time_layers(rows, 2);
    time_layers(32, 1);
    time_layers(32, 1, false);
    for (int rows : {16, 32, 64}) time_layers(rows, 2, true, true);
    for (int rows : {16, 32, 64}) time_layers(rows, 2, true, false, true);
    for (int rows : {16, 32, 64}) time_layers(rows, 2, true, true, true);
    time_layers(32, 2, true, true, false, 11);
    time_layers(32, 2, true, true, true, 11);
    for (int rows : {16, 32, 64}) time_layers(rows, 2, true, true, true, 4, true); // a whole layer, chained
    for (int rows : {16, 32, 64}) time_lm(rows);
}

} // namespace

int main(int argc, char **argv) {
    int timing;
    g_grid = gtu_sm90_start(argc, argv, "the wide step", &timing);
    GTU_CUDA(cudaFuncSetAttribute(wide_ops_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)wide::kSmemBytes));
    // WIDE_OPS_SMALL=1: the small cases only (under compute-sanitizer, where the full-size ones
    // would take minutes)
    const char *small_env = getenv("WIDE_OPS_SMALL");
    const bool small = small_env && small_env[0] == '1';
    // every case with the copiers' cp.async, then with their tensor copies
    for (bool tma : {false, true}) {
        g_tma = tma;
        printf("copiers: %s\n", tma ? "tensor copies (TMA)" : "cp.async");
        run_checks(small);
    }
    if (timing)
        for (bool tma : {false, true}) {
            g_tma = tma;
            run_timing();
        }
    return test_finish("test_kernels_wide_ops");
}
