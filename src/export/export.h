/* Exporting a downloaded Voxtral checkpoint into our model directory (format/manifest.h).
 *
 * Two source layouts: transformers (config.json, model.safetensors or an index and its shards)
 * and Mistral's consolidated one (params.json, consolidated.safetensors); both need tekken.json.
 * Everything is validated before anything is written: every tensor present, float dtype (F32,
 * BF16, F16) and the shape the hyper-parameters imply. Then the blobs are written one at a time
 * (each through a temporary file and a rename), tekken.json is copied, and voxtral.json is
 * written last, so that a directory with a manifest is complete. A manifest already in the
 * output directory is removed before the first blob is replaced.
 *
 * Memory: a tensor is copied only when it must change (dtype, or the RoPE row permutation of
 * Mistral's q/k); others are written straight from the source mapping. Copies live until their
 * blob is saved, so the peak is about the largest blob's converted tensors.
 *
 * The positions table is always generated (spec section 2, in float32 as transformers computes
 * it) and stored F32, so that both layouts export the same bytes. A checkpoint that stores it
 * (transformers) is compared with it: a difference above 1e-5 is reported as a warning in the
 * result (a random test model, or not Voxtral's fixed positions), not copied. */
#ifndef VOX_EXPORT_EXPORT_H
#define VOX_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "format/manifest.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    VOX_EXPORT_KEEP, /* BF16 when every source weight is BF16, else F32 (F16 widens losslessly) */
    VOX_EXPORT_F32,
    VOX_EXPORT_BF16, /* round to nearest even */
    /* The text decoder's linear layers (q|k|v, o, gate|up, down, as fused) as F8_E4M3 with a F32
     * scale per output row, quantized from the source values in float32 by the fp8_dynamic
     * scheme (common/fp8.h, recorded in voxtral.json); every other tensor as with KEEP. */
    VOX_EXPORT_FP8
} vox_export_dtype;

typedef enum {
    VOX_LAYOUT_AUTO, /* transformers when its config and weights are there, else Mistral */
    VOX_LAYOUT_TRANSFORMERS,
    VOX_LAYOUT_MISTRAL
} vox_export_layout;

typedef struct {
    vox_export_dtype dtype;
    vox_export_layout layout;
    /* Called after each output file is in place (may be NULL): its path, tensor count (0 for
     * tekken.json and voxtral.json) and size in bytes. */
    void (*on_file)(const char *path, size_t n_tensors, size_t bytes, void *user);
    void *user;
    /* Asked now and then while writing (may be NULL): once it says so, the export stops with
     * VOX_ERR_INTERRUPTED and nothing is left of it (voxtral_export's SIGINT). */
    bool (*stop)(void *user);
} vox_export_params;

vox_export_params vox_export_default_params(void);

#define VOX_EXPORT_MAX_WARNINGS 8
#define VOX_EXPORT_WARNING_MAX 512

typedef struct {
    vox_manifest manifest; /* as written */
    size_t n_tensors;      /* in the three blobs */
    int n_warnings;
    char warnings[VOX_EXPORT_MAX_WARNINGS][VOX_EXPORT_WARNING_MAX];
} vox_export_result;

/* Exports the checkpoint in directory `from` into directory `out` (created if missing).
 * res may be NULL. The files are written into a hidden directory inside `out` and moved into
 * place once all are written, the manifest last: on any failure (a checkpoint at fault, a full
 * disk, a stop) `out` is left as it was (removed when the export created it), an earlier model
 * in it intact. */
vox_status vox_export(const char *from, const char *out, const vox_export_params *params,
                      vox_export_result *res, vox_error *err);

#ifdef __cplusplus
}
#endif
#endif
