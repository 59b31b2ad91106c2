/* Tells compute-sanitizer's initcheck which device memory cuBLASLt has written (private to the
 * CUDA backend).
 *
 * initcheck does not count the stores of cuBLASLt's Hopper GEMM kernels (tiles written from
 * shared memory by the tensor memory accelerator) as writes: on the H200 it reports our GELU
 * reading the output of the encoder's first GEMM, and cuBLASLt's own split-K reduction reading
 * the partial sums its GEMM kernel left in our workspace, although test_cuda_backend checks that
 * every element of those outputs is the right product (bench/NOTES-2026-12-01-sanitizers.md).
 * So after each GEMM the backend marks exactly the output it asked for as initialised, and the
 * GEMM workspace once, through NVTX's memory API; initcheck still tracks everything our own
 * kernels and copies write. Outside a tool NVTX has no injection library and these calls cost a
 * test of a function pointer. */
#ifndef VOX_BACKEND_CUDA_INITCHECK_H
#define VOX_BACKEND_CUDA_INITCHECK_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* Marks [ptr, ptr + bytes) initialised in stream order on `stream`. */
void vox_initcheck_mark(cudaStream_t stream, const void *ptr, size_t bytes);

#endif
