/* cuBLASLt, loaded when the CUDA backend starts instead of when the program does (private to
 * the backend).
 *
 * libcublasLt's static initialisers take about 0.1 s and 200 MB at load (measured: an empty
 * program linked to it runs 0.09-0.13 s instead of 0.00 s), and a program that links it pays
 * that before main, for --help as for a GPU run. So it is not linked: the CUDA backend calls
 * vox_cublaslt_load() on a thread of its own while the weights load, and the cublasLt*
 * functions cuda.c calls are defined in cublaslt_loader.c, forwarding to the library's own.
 * They must not be called before vox_cublaslt_load() returned VOX_OK. */
#ifndef VOX_BACKEND_CUBLASLT_LOADER_H
#define VOX_BACKEND_CUBLASLT_LOADER_H

#include "common/status.h"

/* Loads libcublasLt.so.MAJOR (MAJOR of the headers built against) once; thread-safe. A failure
 * names the library and what the dynamic loader said. */
vox_status vox_cublaslt_load(vox_error *err);

/* The name of a cublasStatus_t ("CUBLAS_STATUS_NOT_SUPPORTED"), for messages; needs no library.
 * An unknown value reads "cuBLAS status N" (from a static buffer: one thread at a time). */
const char *vox_cublas_status_name(int status);

#endif
