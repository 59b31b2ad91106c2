/* Weights straight from their files to the device (the CUDA backend's weights_end; private to
 * the backend).
 *
 * The parallel reader (runtime/parallel_read.h) reads spans of the files on several threads;
 * each thread owns two of the backend's pinned staging buffers and a stream of its own: it reads
 * a span into one buffer while the other's copies to the device are in flight, and only waits
 * when a buffer's copies have not finished by the time it wants it again (the uploads are then
 * the bottleneck, and the wait is counted). Bytes go to the device as they are in the file: the
 * backend defers only the weights whose device type is their file type.
 *
 * Timing: two events around each span's copies give the device time during which an upload was
 * in flight, and how much of it came after the last read (the part the reads did not hide). */
#ifndef VOX_BACKEND_CUDA_UPLOAD_H
#define VOX_BACKEND_CUDA_UPLOAD_H

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "runtime/parallel_read.h"

/* The backend's pinned staging buffers. done[i] completes when buffer i's last copy has left it
 * (upload_staged and the readers both wait on it before writing the buffer again). */
typedef struct {
    int device;
    char *const *buffers;
    cudaEvent_t *done;
    int n_buffers;
    size_t buffer_bytes;
} vox_cuda_staging;

/* Copies every piece (file bytes -> device memory) with `threads` readers (at most
 * n_buffers / 2) in spans of at most span_bytes (at most buffer_bytes); fills stats' bulk,
 * read, buffer wait, upload, bytes and threads fields. The destinations must be ready for other streams
 * (the caller synchronised the stream that allocated them). Returns when every copy has
 * finished. */
vox_status vox_cuda_upload_pieces(const vox_cuda_staging *staging, const vox_read_piece *pieces,
                                  size_t n_pieces, const vox_read_file *files, int n_files,
                                  int threads, size_t span_bytes, vox_load_stats *stats,
                                  vox_error *err);

#endif
