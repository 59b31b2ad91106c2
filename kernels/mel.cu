// The log-mel front end on the GPU (voxtral-spec.md section 1; src/mel/mel.c is the reference):
// windowed frames with reflect padding -> real DFT as a float32 GEMM (by the caller, cuBLASLt) ->
// power -> mel GEMM (caller) -> log10 with a global maximum -> floor, scale, bf16, chunk-major.
#include <cuda_bf16.h>
#include <float.h>

#include "kernels.h"

namespace {

constexpr int kFft = 400, kHop = 160, kBins = 201, kMel = 128, kChunkFrames = 3000;

// frames[t, j] = window[j] * x[reflect(t * hop - n_fft/2 + j)] for frames t0 .. t0 + nt - 1.
__global__ void frames_kernel(float *frames, const float *x, int64_t n, int64_t t0, int64_t nt,
                              const float *window) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nt * kFft) return;
    int64_t t = t0 + i / kFft, j = i % kFft;
    int64_t s = t * kHop - kFft / 2 + j;
    if (s < 0) s = -s;                  // reflect, edge sample not repeated (numpy/torch)
    if (s >= n) s = 2 * (n - 1) - s;
    frames[i] = window[j] * x[s];
}

// power[t, k] = re^2 + im^2 from spec [t, 2 * kBins] = (cos sums | sin sums).
__global__ void power_kernel(float *power, const float *spec, int64_t nt) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nt * kBins) return;
    int64_t t = i / kBins, k = i % kBins;
    float re = spec[t * 2 * kBins + k], im = spec[t * 2 * kBins + kBins + k];
    power[i] = re * re + im * im;
}

__device__ __forceinline__ unsigned order_key(float f) {
    unsigned u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float from_key(unsigned k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

// logmel[chunk][m][frame] = log10(max(mel[t, m], 1e-10)) for frames t0.., and the running max.
__global__ void log_kernel(float *logmel, const float *mel, int64_t t0, int64_t nt, unsigned *max_key) {
    __shared__ unsigned block_max;
    if (threadIdx.x == 0) block_max = 0;
    __syncthreads();
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nt * kMel) {
        int64_t t = t0 + i / kMel, m = i % kMel;
        float v = log10f(fmaxf(mel[i], 1e-10f));
        int64_t chunk = t / kChunkFrames, f = t % kChunkFrames;
        logmel[(chunk * kMel + m) * kChunkFrames + f] = v;
        atomicMax(&block_max, order_key(v));
    }
    __syncthreads();
    if (threadIdx.x == 0 && block_max) atomicMax(max_key, block_max);
}

__global__ void finish_kernel(__nv_bfloat16 *out, const float *logmel, int64_t n, const unsigned *max_key) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float floor_v = from_key(*max_key) - 8.0f;
    out[i] = __float2bfloat16_rn((fmaxf(logmel[i], floor_v) + 4.0f) / 4.0f);
}

__global__ void finish_f32_kernel(float *out, const float *logmel, int64_t n, const unsigned *max_key) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float floor_v = from_key(*max_key) - 8.0f;
    out[i] = (fmaxf(logmel[i], floor_v) + 4.0f) / 4.0f;
}

unsigned blocks(int64_t n) { return (unsigned)((n + 255) / 256); }

}  // namespace

extern "C" void vox_k_mel_frames(float *frames, const float *x, int64_t n, int64_t t0, int64_t nt,
                                 const float *window, cudaStream_t stream) {
    if (nt <= 0) return;
    frames_kernel<<<blocks(nt * kFft), 256, 0, stream>>>(frames, x, n, t0, nt, window);
}

extern "C" void vox_k_mel_power(float *power, const float *spec, int64_t nt, cudaStream_t stream) {
    if (nt <= 0) return;
    power_kernel<<<blocks(nt * kBins), 256, 0, stream>>>(power, spec, nt);
}

extern "C" void vox_k_mel_log(float *logmel, const float *mel, int64_t t0, int64_t nt,
                              unsigned *max_key, cudaStream_t stream) {
    if (nt <= 0) return;
    log_kernel<<<blocks(nt * kMel), 256, 0, stream>>>(logmel, mel, t0, nt, max_key);
}

extern "C" void vox_k_mel_finish(void *out, int out_is_bf16, const float *logmel, int64_t n,
                                 const unsigned *max_key, cudaStream_t stream) {
    if (n <= 0) return;
    if (out_is_bf16)
        finish_kernel<<<blocks(n), 256, 0, stream>>>((__nv_bfloat16 *)out, logmel, n, max_key);
    else
        finish_f32_kernel<<<blocks(n), 256, 0, stream>>>((float *)out, logmel, n, max_key);
}
