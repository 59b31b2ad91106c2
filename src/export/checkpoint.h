/* A downloaded checkpoint opened for export: what the layout readers (checkpoint_hf.c,
 * checkpoint_mistral.c) hand to the conversion (export.c).
 *
 * A reader parses the layout's config into a vox_manifest (hyper-parameters, special-token ids
 * from tekken.json, audio settings; the blob file names and dtypes are the exporter's), opens the
 * safetensors files, and names the source tensor of each of our tensors. The conversion never
 * sees a layout-specific name or key. */
#ifndef VOX_EXPORT_CHECKPOINT_H
#define VOX_EXPORT_CHECKPOINT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "format/json.h"
#include "format/manifest.h"
#include "format/safetensors.h"

typedef enum { VOX_BLOB_ENCODER, VOX_BLOB_EMBEDDING, VOX_BLOB_DECODER, VOX_BLOB_COUNT } vox_blob;

/* Our tensors (names and shapes in format/manifest.h), in the order they are written. Kinds
 * marked "per layer" exist once per layer of their stage. */
typedef enum {
    /* audio_encoder */
    VOX_T_CONV1_W,
    VOX_T_CONV1_B,
    VOX_T_CONV2_W,
    VOX_T_CONV2_B,
    VOX_T_POSITIONS, /* generated; a checkpoint that stores it is checked against it */
    VOX_T_ENC_ATTN_NORM_W, /* per layer, through VOX_T_ENC_FC2_B */
    VOX_T_ENC_ATTN_NORM_B,
    VOX_T_ENC_Q_W,
    VOX_T_ENC_Q_B,
    VOX_T_ENC_K_W,
    VOX_T_ENC_V_W,
    VOX_T_ENC_V_B,
    VOX_T_ENC_O_W,
    VOX_T_ENC_O_B,
    VOX_T_ENC_FFN_NORM_W,
    VOX_T_ENC_FFN_NORM_B,
    VOX_T_ENC_FC1_W,
    VOX_T_ENC_FC1_B,
    VOX_T_ENC_FC2_W,
    VOX_T_ENC_FC2_B,
    VOX_T_ENC_NORM_W,
    VOX_T_ENC_NORM_B,
    VOX_T_PROJ1_W,
    VOX_T_PROJ2_W,
    /* token_embedding */
    VOX_T_EMBEDDING,
    /* text_decoder */
    VOX_T_DEC_ATTN_NORM_W, /* per layer, through VOX_T_DEC_DOWN_W */
    VOX_T_DEC_Q_W,
    VOX_T_DEC_K_W,
    VOX_T_DEC_V_W,
    VOX_T_DEC_O_W,
    VOX_T_DEC_FFN_NORM_W,
    VOX_T_DEC_GATE_W,
    VOX_T_DEC_UP_W,
    VOX_T_DEC_DOWN_W,
    VOX_T_DEC_NORM_W,
    VOX_T_LM_HEAD,
    VOX_T_COUNT
} vox_tensor_kind;

typedef struct {
    const char *layout; /* "transformers" or "mistral": the manifest's source.layout */
    char dir[VOX_PATH_MAX];
    char config_path[VOX_PATH_MAX + 32]; /* config.json or params.json, for messages */
    char tekken_path[VOX_PATH_MAX + 32];
    /* Source name of each kind, printf format with %d for the layer; NULL: not stored. */
    const char *const *names;
    /* A name starting with alias_from that is absent is looked up again with that prefix
     * replaced by alias_to (NULL: no alias). */
    const char *alias_from, *alias_to;
    /* q/k rows of the text decoder pair dims (2i, 2i+1) for RoPE (Mistral) instead of
     * (i, i + head_dim/2) (transformers): the exporter permutes them. */
    int interleaved_rope;
    /* Hyper-parameters, token ids and audio settings; file names and dtypes are unset. */
    vox_manifest hp;

    vox_safetensors **files;
    size_t n_files;
    cJSON *weight_map; /* sharded transformers checkpoints: tensor name -> shard file name */
    char index_path[VOX_PATH_MAX + 48];
} vox_checkpoint;

/* Layout readers: fill ck (zeroed first) or fail with a message naming the file. */
vox_status vox_checkpoint_open_hf(const char *dir, vox_checkpoint *ck, vox_error *err);
vox_status vox_checkpoint_open_mistral(const char *dir, vox_checkpoint *ck, vox_error *err);
void vox_checkpoint_close(vox_checkpoint *ck);

/* The source tensor called name (or its alias, see alias_from), or NULL; *file is set either
 * way to the file that holds it or should have held it (the shard, or the index when the index
 * does not list it); *found, when not NULL, to the name it was found under. */
const vox_st_tensor *vox_checkpoint_find(const vox_checkpoint *ck, const char *name,
                                         const char **file, const char **found);

/* ---- helpers shared by the readers (checkpoint.c) ------------------------------------------- */

/* Opens one safetensors file and appends it to ck->files. */
vox_status vox_checkpoint_add_file(vox_checkpoint *ck, const char *path, vox_error *err);


/* Reads tekken.json: the special-token ids by name (<s>, </s>, [INST], [/INST], [AUDIO],
 * [BEGIN_AUDIO], [TRANSCRIBE]) into hp->tokenizer, and audio.sampling_rate into hp->sample_rate
 * (when absent, hp->sample_rate stays, or becomes 16000 if unset). */
vox_status vox_tekken_read_ids(const char *path, vox_manifest *hp, vox_error *err);

/* Completes hp once a reader has filled the sizes: format version, tokenizer file, the audio
 * chunking derived from the encoder (hop 160, conv2 stride 2), then validates the numbers
 * (vox_manifest_validate), naming ck->config_path in a failure. */
vox_status vox_checkpoint_finish(vox_checkpoint *ck, vox_error *err);

#endif
