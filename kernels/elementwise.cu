// Elementwise kernels: f32 <-> bf16 conversions, GELU (erf), SiLU-gate product, add, and the
// fp32 row-periodic add of the encoder positions.
//
// All are memory-bound: one thread per 8 elements, 16-byte loads and stores, consecutive
// threads on consecutive vectors (coalesced). When any pointer is not 16-byte aligned (a view
// at an odd offset) the scalar kernel runs instead. The n % 8 tail is done by the first threads
// of the vector kernel, so each op is a single launch. Pointers that may alias are not
// __restrict__: every element is read and written by the same thread, read first.
#include "common.cuh"
#include "kernels.h"

namespace {

constexpr int kThreads = 256;

// ---- the operations, in fp32, rounded once by the caller's store ----

struct GeluOp { // torch: 0.5 * x * (1 + erf(x / sqrt(2))) in fp32 (exact, not tanh)
    __device__ float operator()(float x, float) const {
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    }
};
struct AddOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};

// y[i] = op(a[i], b[i]) (b unused when NIN == 1), 8 per thread; the first n % 8 threads also do
// one element of the tail.
template <int NIN, class Op>
__global__ void ew_vec8_kernel(vk_bf16 *y, const vk_bf16 *a, const vk_bf16 *b, int64_t n, Op op) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t n_vec = n / 8;
    if (i < n_vec) {
        float fa[8], fb[8] = {0};
        vk_load8(a + 8 * i, fa);
        if (NIN == 2) vk_load8(b + 8 * i, fb);
#pragma unroll
        for (int j = 0; j < 8; j++) fa[j] = op(fa[j], fb[j]);
        vk_store8(y + 8 * i, fa);
    }
    if (i < n - 8 * n_vec) {
        const int64_t e = 8 * n_vec + i;
        y[e] = vk_bf(op(vk_f(a[e]), NIN == 2 ? vk_f(b[e]) : 0.0f));
    }
}

template <int NIN, class Op>
__global__ void ew_scalar_kernel(vk_bf16 *y, const vk_bf16 *a, const vk_bf16 *b, int64_t n, Op op) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = vk_bf(op(vk_f(a[i]), NIN == 2 ? vk_f(b[i]) : 0.0f));
}

template <int NIN, class Op>
void launch_ew(void *y, const void *a, const void *b, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    vk_bf16 *py = (vk_bf16 *)y;
    const vk_bf16 *pa = (const vk_bf16 *)a, *pb = (const vk_bf16 *)b;
    if (vk_aligned16(y) && vk_aligned16(a) && (NIN == 1 || vk_aligned16(b))) {
        // threads = max(vectors, tail), tail < 8
        int64_t threads = n / 8 > n % 8 ? n / 8 : n % 8;
        ew_vec8_kernel<NIN><<<(unsigned)vk_ceil_div(threads, kThreads), kThreads, 0, stream>>>(
            py, pa, pb, n, Op());
    } else {
        ew_scalar_kernel<NIN><<<(unsigned)vk_ceil_div(n, kThreads), kThreads, 0, stream>>>(
            py, pa, pb, n, Op());
    }
    VOX_K_LAUNCH_CHECK();
}

// ---- conversions ----

__global__ void f32_to_bf16_kernel(vk_bf16 *__restrict__ dst, const float *__restrict__ src,
                                   int64_t n, bool vec) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t n_vec = vec ? n / 8 : 0;
    if (i < n_vec) {
        float4 lo = ((const float4 *)src)[2 * i], hi = ((const float4 *)src)[2 * i + 1];
        float f[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        vk_store8(dst + 8 * i, f);
    }
    if (i < n - 8 * n_vec) dst[8 * n_vec + i] = vk_bf(src[8 * n_vec + i]);
}

__global__ void bf16_to_f32_kernel(float *__restrict__ dst, const vk_bf16 *__restrict__ src,
                                   int64_t n, bool vec) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t n_vec = vec ? n / 8 : 0;
    if (i < n_vec) {
        float f[8];
        vk_load8(src + 8 * i, f);
        ((float4 *)dst)[2 * i] = make_float4(f[0], f[1], f[2], f[3]);
        ((float4 *)dst)[2 * i + 1] = make_float4(f[4], f[5], f[6], f[7]);
    }
    if (i < n - 8 * n_vec) dst[8 * n_vec + i] = vk_f(src[8 * n_vec + i]);
}

// Grid of a conversion: one thread per vector, or per element when not vectorised (the tail
// of the vector case is < 8, covered by the vector threads unless there are fewer than 8).
static unsigned conv_blocks(int64_t n, bool vec) {
    int64_t threads = vec ? (n / 8 > n % 8 ? n / 8 : n % 8) : n;
    return (unsigned)vk_ceil_div(threads, kThreads);
}

// ---- positions: x[r, c] = bf16(float(x[r, c]) + p[r % t, c]) ----

__global__ void add_rows_f32_vec8_kernel(vk_bf16 *x, const float *__restrict__ p, int64_t rows,
                                         int64_t t, int64_t c) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t vec_per_row = c / 8;
    if (i >= rows * vec_per_row) return;
    const int64_t r = i / vec_per_row, col = (i - r * vec_per_row) * 8;
    const float *pr = p + (r % t) * c + col;
    float f[8];
    vk_load8(x + r * c + col, f);
    float4 lo = ((const float4 *)pr)[0], hi = ((const float4 *)pr)[1];
    f[0] += lo.x, f[1] += lo.y, f[2] += lo.z, f[3] += lo.w;
    f[4] += hi.x, f[5] += hi.y, f[6] += hi.z, f[7] += hi.w;
    vk_store8(x + r * c + col, f);
}

__global__ void add_rows_f32_scalar_kernel(vk_bf16 *x, const float *__restrict__ p, int64_t rows,
                                           int64_t t, int64_t c) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * c) return;
    const int64_t r = i / c, col = i - r * c;
    x[i] = vk_bf(vk_f(x[i]) + p[(r % t) * c + col]);
}

} // namespace

extern "C" {

void vox_k_f32_to_bf16(void *dst_bf16, const float *src, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    bool vec = vk_aligned16(dst_bf16) && vk_aligned16(src);
    f32_to_bf16_kernel<<<conv_blocks(n, vec), kThreads, 0, stream>>>((vk_bf16 *)dst_bf16, src, n,
                                                                      vec);
    VOX_K_LAUNCH_CHECK();
}

void vox_k_bf16_to_f32(float *dst, const void *src_bf16, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    bool vec = vk_aligned16(dst) && vk_aligned16(src_bf16);
    bf16_to_f32_kernel<<<conv_blocks(n, vec), kThreads, 0, stream>>>(dst, (const vk_bf16 *)src_bf16,
                                                                      n, vec);
    VOX_K_LAUNCH_CHECK();
}

void vox_k_gelu(void *x_bf16, int64_t n, cudaStream_t stream) {
    launch_ew<1, GeluOp>(x_bf16, x_bf16, nullptr, n, stream);
}

void vox_k_add(void *y_bf16, const void *a_bf16, const void *b_bf16, int64_t n,
               cudaStream_t stream) {
    launch_ew<2, AddOp>(y_bf16, a_bf16, b_bf16, n, stream);
}

void vox_k_add_rows_f32(void *x_bf16, const float *p, int64_t rows, int64_t t, int64_t c,
                        cudaStream_t stream) {
    if (rows <= 0 || t <= 0 || c <= 0) return;
    if (c % 8 == 0 && vk_aligned16(x_bf16) && vk_aligned16(p)) {
        add_rows_f32_vec8_kernel<<<(unsigned)vk_ceil_div(rows * (c / 8), kThreads), kThreads, 0,
                                   stream>>>((vk_bf16 *)x_bf16, p, rows, t, c);
    } else {
        add_rows_f32_scalar_kernel<<<(unsigned)vk_ceil_div(rows * c, kThreads), kThreads, 0,
                                     stream>>>((vk_bf16 *)x_bf16, p, rows, t, c);
    }
    VOX_K_LAUNCH_CHECK();
}

} // extern "C"
