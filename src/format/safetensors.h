/* safetensors: reading (mmap, validated) and writing.
 *
 * File layout: an 8-byte little-endian header length N, then N bytes of JSON
 *   {"__metadata__": {str: str, ...}?, NAME: {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ...}
 * then the raw data. Offsets are relative to the end of the header. The reader validates as the
 * reference implementation does, and more: header length <= 100 MB and inside the file; known
 * dtypes; shape products and byte sizes computed with overflow checks; each tensor's byte range
 * exactly its size; ranges contiguous from 0 with no holes or overlaps and ending exactly at the
 * end of the file; no duplicate names. Every violation is a VOX_ERR_FORMAT naming the file (and
 * the tensor, where there is one); a file that cannot be opened or mapped is a VOX_ERR_IO.
 *
 * Stricter than the reference, on purpose: each tensor entry has exactly the fields dtype, shape,
 * data_offsets; at most VOX_ST_MAX_DIMS dimensions; numbers are plain integers below 2^53 (cJSON
 * reads doubles, which are exact only that far; "3.0", "1e2", "012" are refused); names are
 * non-empty and hold no "\u0000"; no control bytes and no byte-order mark in the header; a
 * present __metadata__ is an object of strings.
 *
 * Alignment: safetensors guarantees none. A tensor's data is at file offset 8 + N + begin, and
 * the mapping is page-aligned, so the pointer is aligned only as far as the writer arranged it
 * (our writer and Python's pad 8 + N to a multiple of 8; begin offsets are sums of byte sizes).
 * Do not assume more than 1-byte alignment: check ((uintptr_t)t->data % align) or memcpy.
 *
 * The mapping is MAP_PRIVATE and read-only: a file replaced by rename (as the writer does) is
 * safe, but one truncated in place while open makes later reads of its data fault (SIGBUS).
 *
 * The file also stays open while st is (vox_st_fd): a loader that copies the data elsewhere (the
 * CUDA backend) reads it with pread, which costs no page-table work and reports a file truncated
 * meanwhile as an error instead of a fault. Tensor data is at file offset
 * (const char *)t->data - (const char *)vox_st_base(st). */
#ifndef VOX_FORMAT_SAFETENSORS_H
#define VOX_FORMAT_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VOX_ST_MAX_DIMS 8

typedef struct {
    char *name;
    vox_dtype dtype;
    int ndim;
    int64_t shape[VOX_ST_MAX_DIMS];
    size_t n_elements;
    size_t nbytes;
    const void *data; /* points into the mapping; valid until vox_st_close */
} vox_st_tensor;

typedef struct vox_safetensors vox_safetensors;

vox_status vox_st_open(const char *path, vox_safetensors **out, vox_error *err);
void vox_st_close(vox_safetensors *st);

size_t vox_st_count(const vox_safetensors *st);
const vox_st_tensor *vox_st_at(const vox_safetensors *st, size_t i); /* in file order */
const vox_st_tensor *vox_st_find(const vox_safetensors *st, const char *name); /* NULL if absent */
const char *vox_st_path(const vox_safetensors *st);
/* The open file (read-only), its mapping's first byte (file offset 0) and its size in bytes. */
int vox_st_fd(const vox_safetensors *st);
const void *vox_st_base(const vox_safetensors *st);
size_t vox_st_size(const vox_safetensors *st);
/* Value of a __metadata__ entry, or NULL. */
const char *vox_st_metadata(const vox_safetensors *st, const char *key);

/* Writer: collects tensors (the data is referenced, not copied, until vox_st_writer_save), then
 * writes PATH whole or not at all (common/file_out.h), so that no partial file is ever left.
 * The header lists __metadata__ first, then the tensors by element size, largest first (in the
 * order they were added among equals), with consecutive data_offsets; it is padded with spaces
 * so that the data starts at a multiple of 8 bytes: every tensor is then aligned to its element
 * size. add refuses (VOX_ERR_INVALID_ARG) an empty, non-UTF-8, reserved ("__metadata__") or
 * repeated name, a bad dtype, more than VOX_ST_MAX_DIMS dims, a negative dim, a byte size that
 * overflows, or NULL data for a non-empty tensor. set_metadata replaces the value of a key set
 * before. save reports a failed write (disk full: ENOSPC) as VOX_ERR_IO naming PATH, and removes
 * its temporary file; PATH is then left as it was. save_stoppable also asks stop(stop_arg) before
 * each tensor (and each 64 MB of a larger one): once it says so, the file is given up the same way
 * and the status is VOX_ERR_INTERRUPTED. */
typedef struct vox_st_writer vox_st_writer;
vox_st_writer *vox_st_writer_new(void);
vox_status vox_st_writer_add(vox_st_writer *w, const char *name, vox_dtype dtype, int ndim,
                             const int64_t *shape, const void *data, vox_error *err);
vox_status vox_st_writer_set_metadata(vox_st_writer *w, const char *key, const char *value,
                                      vox_error *err);
vox_status vox_st_writer_save(vox_st_writer *w, const char *path, vox_error *err);
vox_status vox_st_writer_save_stoppable(vox_st_writer *w, const char *path, bool (*stop)(void *),
                                        void *stop_arg, vox_error *err);
void vox_st_writer_free(vox_st_writer *w);

#ifdef __cplusplus
}
#endif
#endif
