/* safetensors: reading (mmap, validated) and writing.
 *
 * File layout: an 8-byte little-endian header length N, then N bytes of JSON
 *   {"__metadata__": {str: str, ...}?, NAME: {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ...}
 * then the raw data. Offsets are relative to the end of the header. The reader validates as the
 * reference implementation does, and more: header length <= 100 MB and inside the file; known
 * dtypes; shape products and byte sizes computed with overflow checks; each tensor's byte range
 * exactly its size; ranges contiguous from 0 with no holes or overlaps and ending exactly at the
 * end of the file; no duplicate names. Every violation is a VOX_ERR_FORMAT naming the file. */
#ifndef VOX_FORMAT_SAFETENSORS_H
#define VOX_FORMAT_SAFETENSORS_H

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
/* Value of a __metadata__ entry, or NULL. */
const char *vox_st_metadata(const vox_safetensors *st, const char *key);

/* Writer: collects tensors (the data is referenced, not copied, until vox_st_writer_save), then
 * writes PATH.tmp and renames it to PATH, so that no partial file is ever left under PATH. */
typedef struct vox_st_writer vox_st_writer;
vox_st_writer *vox_st_writer_new(void);
vox_status vox_st_writer_add(vox_st_writer *w, const char *name, vox_dtype dtype, int ndim,
                             const int64_t *shape, const void *data, vox_error *err);
vox_status vox_st_writer_set_metadata(vox_st_writer *w, const char *key, const char *value,
                                      vox_error *err);
vox_status vox_st_writer_save(vox_st_writer *w, const char *path, vox_error *err);
void vox_st_writer_free(vox_st_writer *w);

#ifdef __cplusplus
}
#endif
#endif
