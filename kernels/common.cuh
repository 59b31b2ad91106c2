// Small helpers shared by the kernels/*.cu files (device code only, internal to vox_kernels):
//   bf16 <-> fp32 of single values and of 8-wide (16-byte) vectors, an alignment test,
//   warp sums / maxima by shuffles, a block sum, a bf16 dot product of 8, the merge of
//   flash-decoding partials, VOX_K_LAUNCH_CHECK, programmatic dependent launch (vk_launch,
//   vk_pdl_wait, vk_pdl_trigger), the per-device shared-memory opt-in (vk_ensure_smem), exp2 by
//   ex2.approx (vk_fast_exp2), shared-memory addresses and mbarriers (vk_smem_u32, vk_mbar_*),
//   cp.async, ldmatrix and the bf16 mma.sync (vk_cp_async*, vk_ldmatrix_x4*, vk_mma_bf16_16816).
// Everything is static inline: each .cu file is its own translation unit.
#ifndef VOX_KERNELS_COMMON_CUH
#define VOX_KERNELS_COMMON_CUH

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>

typedef __nv_bfloat16 vk_bf16;

// Launchers never synchronise (they may run inside a captured graph), and leave launch errors
// to the caller's next cudaGetLastError. Building with -DVOX_KERNELS_DEBUG makes every launch
// check its own error at once and abort with the file and line, for bisecting a bad launch.
#ifdef VOX_KERNELS_DEBUG
#define VOX_K_LAUNCH_CHECK()                                                                  \
    do {                                                                                      \
        cudaError_t e_ = cudaGetLastError();                                                  \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d: kernel launch failed: %s\n", __FILE__, __LINE__,          \
                    cudaGetErrorString(e_));                                                  \
            abort();                                                                          \
        }                                                                                     \
    } while (0)
#else
#define VOX_K_LAUNCH_CHECK() ((void)0)
#endif

// Raises a kernel's dynamic shared-memory limit once per device (outside any hot loop; the call
// is not a stream operation, so it is also safe during graph capture). done: one per kernel.
template <typename Kernel>
static void vk_ensure_smem(Kernel kernel, size_t bytes, std::atomic<uint64_t> &done) {
    if (bytes <= 48 * 1024) return;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return;
    const uint64_t bit = dev < 64 ? (1ull << dev) : 0;
    if (bit && (done.load() & bit)) return;
    if (cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)bytes) == cudaSuccess)
        done.fetch_or(bit);
}

static inline int64_t vk_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Attribute `attr` of the current device, asked once per device (cache: a static array of the
// caller's, one per attribute); -1 when it cannot be asked.
static inline int vk_device_attribute(cudaDeviceAttr attr, std::atomic<int> (&cache)[64]) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return -1;
    const int known = cache[dev].load(std::memory_order_relaxed); // the value + 1, 0 unknown
    if (known) return known - 1;
    int v = 0;
    if (cudaDeviceGetAttribute(&v, attr, dev) != cudaSuccess || v < 0) return -1;
    cache[dev].store(v + 1, std::memory_order_relaxed);
    return v;
}

// Multiprocessors of the current device, for sizing grids (1 when the device cannot be asked: a
// launch on it fails and is reported anyway).
static inline int vk_sm_count() {
    static std::atomic<int> cache[64];
    const int n = vk_device_attribute(cudaDevAttrMultiProcessorCount, cache);
    return n > 0 ? n : 1;
}

// The current device's compute capability as major * 10 + minor (90 for an H100/H200), 0 when
// the device cannot be asked.
static inline int vk_compute_capability() {
    static std::atomic<int> major_cache[64], minor_cache[64];
    const int major = vk_device_attribute(cudaDevAttrComputeCapabilityMajor, major_cache);
    const int minor = vk_device_attribute(cudaDevAttrComputeCapabilityMinor, minor_cache);
    return major < 0 || minor < 0 ? 0 : major * 10 + minor;
}

// The configuration a launcher picks when not told: `var` from the environment when it names one
// of lo .. count - 1 (for A/B runs of a kernel's configurations), else `fallback`. Read once per
// call site: pass a static int initialised to -2 as `cache`.
static inline int vk_env_variant(const char *var, int lo, int count, int fallback, int &cache) {
    if (cache == -2) {
        const char *e = getenv(var);
        const int n = e && *e ? atoi(e) : -1;
        cache = n >= lo && n < count ? n : fallback;
    }
    return cache;
}

static inline bool vk_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

static __device__ __forceinline__ float vk_f(vk_bf16 x) { return __bfloat162float(x); }
// Round to nearest even, as torch's cast to bfloat16.
static __device__ __forceinline__ vk_bf16 vk_bf(float x) { return __float2bfloat16_rn(x); }
// x rounded to bf16 and back: the value torch holds after an op's output cast.
static __device__ __forceinline__ float vk_round(float x) { return vk_f(vk_bf(x)); }

// The 8 bf16 of a 16-byte word, as floats.
static __device__ __forceinline__ void vk_unpack8(uint4 u, float f[8]) {
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}
// 8 bf16 in one 16-byte word (the pointer must be 16-byte aligned).
static __device__ __forceinline__ void vk_load8(const void *p, float f[8]) {
    vk_unpack8(*(const uint4 *)p, f);
}
static __device__ __forceinline__ void vk_store8(void *p, const float f[8]) {
    uint4 u;
    __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    *(uint4 *)p = u;
}

// The dot product of 8 bf16 (one 16-byte word) with 8 floats: fp32 products, summed in order.
static __device__ __forceinline__ float vk_dot8_bf16(uint4 w, const float x[8]) {
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&w;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __bfloat1622float2(h[i]);
        s = fmaf(f.x, x[2 * i], s);
        s = fmaf(f.y, x[2 * i + 1], s);
    }
    return s;
}

// The merge of n flash-decoding partials: m(s) and l(s) are slot s's max (log2 units) and sum,
// o(s) its unnormalised output element; sum 2^(m - M) o over sum 2^(m - M) l (0 when that is 0),
// in slot order. MAXN > 0: n <= MAXN, and the loops run over constant indices (callers that hold
// the partials in registers index them with constants).
template <int MAXN, class M, class L, class O>
static __device__ __forceinline__ float vk_merge(int n, M m, L l, O o) {
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < (MAXN > 0 ? MAXN : n); s++)
        if (s < n) mx = fmaxf(mx, m(s));
    const float base = mx == -INFINITY ? 0.0f : mx;
    float acc = 0.0f, sum = 0.0f;
#pragma unroll
    for (int s = 0; s < (MAXN > 0 ? MAXN : n); s++) {
        if (s >= n) break;
        const float f = exp2f(m(s) - base);
        acc += f * o(s);
        sum += f * l(s);
    }
    return sum > 0.0f ? acc / sum : 0.0f;
}

// Element d of the merge of the partials at slots slot0 .. slot0 + n - 1: ml holds each slot's
// (max, sum), o its output [D], read through L2 (other blocks wrote them).
static __device__ __forceinline__ float vk_merge_partials(const float *ml, const float *o,
                                                          int64_t slot0, int n, int D, int d) {
    return vk_merge<0>(
        n, [&](int s) { return __ldcg(&ml[(slot0 + s) * 2]); },
        [&](int s) { return __ldcg(&ml[(slot0 + s) * 2 + 1]); },
        [&](int s) { return __ldcg(&o[(slot0 + s) * D + d]); });
}

// 2^x by the hardware's approximation (ex2.approx, about 2 ulp, as exp2f), flushing results
// below 2^-126 to zero: those weigh nothing next to a softmax row's maximum, which is 1. exp2f
// itself spends a compare and two multiplies per call to keep such denormal results, on the
// hottest line of the softmax. exp2(-inf) = 0, as the masking needs.
static __device__ __forceinline__ float vk_fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
// One step of the online softmax's running maximum m (log2 units): m grows to take in mx_log2, a
// block of scores' maximum times the log2 scale. Returns the exponent base of that block's p (0
// while every score so far is -inf, so that no inf - inf arises) and sets alpha, the factor that
// rescales the sums so far.
static __device__ __forceinline__ float vk_softmax_raise(float &m, float mx_log2, float &alpha) {
    const float m_new = fmaxf(m, mx_log2);
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    alpha = vk_fast_exp2(m - base);
    m = m_new;
    return base;
}

// ---- shared-memory addresses and mbarriers (the barrier PTX is sm_90's; only sm_90 kernel
// bodies call these) ----
static __device__ __forceinline__ uint32_t vk_smem_u32(const void *p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void vk_mbar_init(uint32_t bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void vk_mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// An arrival that also expects bytes more of asynchronous copies (bulk copies) in this phase.
static __device__ __forceinline__ void vk_mbar_expect_tx(uint32_t bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
// Returns once the phase with the given parity has completed.
static __device__ __forceinline__ void vk_mbar_wait(uint32_t bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// Counters between blocks at gpu scope: a load that acquires what the adds before it released,
// and an add that releases (after a barrier of the block: what every thread of it wrote).
static __device__ __forceinline__ unsigned vk_ld_acquire(const unsigned *a) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(a) : "memory");
    return v;
}
static __device__ __forceinline__ void vk_red_release_add(unsigned *a, unsigned v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(a), "r"(v) : "memory");
}
// The global nanosecond timer (watchdogs and profiling stamps).
static __device__ __forceinline__ long long vk_global_ns() {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// old = *a, *a += v, as one acquire-release operation at gpu scope: after a barrier of the
// block, it publishes what every thread of the block wrote before it (a ticket's release), and
// what the tickets before it published becomes visible to this block (acquire).
static __device__ __forceinline__ unsigned vk_atom_add_acq_rel(unsigned *a, unsigned v) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(a), "r"(v) : "memory");
    return old;
}

static __device__ __forceinline__ float vk_warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ float vk_warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the whole block, returned to every thread. blockDim.x a multiple of 32; scratch holds
// 32 floats of shared memory. Contains two __syncthreads: every thread of the block must call it.
static __device__ __forceinline__ float vk_block_sum(float v, float *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    v = vk_warp_sum(v);
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float s = 0.0f;
    for (int w = 0; w < n_warps; w++) s += scratch[w]; // same order in every thread
    return s;
}

// ---- the decoder's rounding sequences, shared by the unfused (fused.cu) and fused (matvec.cu)
// kernels so that both paths round identically (fused.cu's header says why these steps) ----
// RoPE inverse frequency of pair i of head_dim d: theta^(-2i/d) in double, rounded to fp32.
static __device__ __forceinline__ float vk_rope_inv_freq(int i, int d, double theta) {
    return (float)(1.0 / pow(theta, (double)(2 * i) / d));
}
// Rotate-half pair (a = dim i, b = dim i + d/2) by cos c and sin s (both already bf16):
// bf16(a c) - bf16(b s) and bf16(b c) + bf16(a s), each to be rounded once more by the store.
static __device__ __forceinline__ void vk_rope_rotate(float a, float b, float c, float s,
                                                      float *o1, float *o2) {
    *o1 = vk_round(a * c) - vk_round(b * s);
    *o2 = vk_round(b * c) + vk_round(a * s);
}
// SwiGLU of bf16 gate and up: bf16(silu(gate)) * up, to be rounded by the store.
static __device__ __forceinline__ float vk_swiglu(float gate, float up) {
    return vk_round(gate / (1.0f + expf(-gate))) * up;
}

// ---- cp.async, ldmatrix and mma.sync (sm_80 and later) ----
// 16 bytes global -> shared, bypassing L1; zero-filled (nothing read) when !valid.
static __device__ __forceinline__ void vk_cp_async16(uint32_t dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}
// The same with an L2 cache policy (vk_evict_first_policy for weights read once).
static __device__ __forceinline__ void vk_cp_async16_hint(uint32_t dst, const void *src, bool valid,
                                                          uint64_t policy) {
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0), "l"(policy)
                 : "memory");
}
static __device__ __forceinline__ void vk_cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Wait until at most N of this thread's committed groups are still in flight.
template <int N> static __device__ __forceinline__ void vk_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// One arrival on the mbarrier at bar once every cp.async this thread issued so far has landed
// (the arrival is one of the barrier's expected count: .noinc).
static __device__ __forceinline__ void vk_cp_async_mbar_arrive(uint32_t bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// An L2 cache policy for data read once (streamed weights): evict first, so it does not push out
// what is read again (activations).
static __device__ __forceinline__ uint64_t vk_evict_first_policy() {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
static __device__ __forceinline__ void vk_ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
static __device__ __forceinline__ void vk_ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
// d += a (16x16, row) * b (16x8, col), bf16 in, fp32 accumulate. Fragment layout (g = lane/4,
// t = lane%4): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..); b0 (k 2t..2t+1,
// n g), b1 (k 2t+8.., n g); d0,d1 (g, 2t..2t+1), d2,d3 (g+8, 2t..2t+1).
static __device__ __forceinline__ void vk_mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4],
                                                         uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- programmatic dependent launch (PDL, sm_90 and later) ----
// A kernel launched by vk_launch may start while the kernel before it in the stream is still
// running, as soon as every block of that one has called vk_pdl_trigger (or exited). Until it
// calls vk_pdl_wait it may only read what no earlier kernel writes (weights); vk_pdl_wait
// returns once the previous kernel has completed and its writes are visible. Since every kernel
// launched this way waits before it completes, the previous kernel's completion implies that
// of all before it. Every kernel launched by vk_launch must call vk_pdl_wait before touching
// activations; on older GPUs, or with VOX_NO_PDL=1 in the environment, launches are ordinary
// and both calls do nothing.
static __device__ __forceinline__ void vk_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
static __device__ __forceinline__ void vk_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether launches on the current device may overlap (compute capability 9.0 or later, and
// not switched off by VOX_NO_PDL), cached per device.
static inline bool vk_pdl_enabled() {
    static signed char disabled = -1; // VOX_NO_PDL, read once
    if (disabled < 0) {
        const char *off = getenv("VOX_NO_PDL");
        disabled = off && *off && !(off[0] == '0' && off[1] == 0);
    }
    return !disabled && vk_compute_capability() >= 90;
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to overlap the previous kernel (PDL).
template <typename... Params, typename... Args>
static inline void vk_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                             cudaStream_t stream, Args... args) {
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = vk_pdl_enabled() ? 1 : 0;
    cudaLaunchKernelEx(&cfg, kernel, args...);
}

#endif
