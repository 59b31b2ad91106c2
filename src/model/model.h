/* The exported model in memory: the manifest, the mapped blobs and the weights on a backend.
 *
 * Loading comes in two steps, so that the first can run while a device starts:
 *   open:   reads DIR/voxtral.json, maps the three blobs and checks that every tensor the
 *           forward pass needs is present with the manifest's shape and a float dtype (the
 *           decoder's linear layers F8_E4M3 with row scales under the fp8_dynamic scheme);
 *   upload: checks that the weights fit in the device's free memory (fit.h), and only then
 *           makes the backend weights (cpu: views of the mapping; cuda: the blobs
 *           read on several threads and uploaded as they are read, see backend.h's
 *           weights_begin). */
#ifndef VOX_MODEL_MODEL_H
#define VOX_MODEL_MODEL_H

#include "backend/backend.h"
#include "format/manifest.h"
#include "format/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    vox_tensor attn_norm_w, attn_norm_b;     /* [d] */
    vox_tensor q_w, q_b, k_w, v_w, v_b;      /* [d, d], [d]; k has no bias */
    vox_tensor o_w, o_b;                     /* [d, d], [d] */
    vox_tensor ffn_norm_w, ffn_norm_b;       /* [d] */
    vox_tensor fc1_w, fc1_b, fc2_w, fc2_b;   /* [ffn, d], [ffn], [d, ffn], [d] */
} vox_encoder_layer;

typedef struct {
    vox_tensor attn_norm;                    /* [hidden] */
    vox_tensor qkv;                          /* [(H + 2 Hkv) * hd, hidden]: q | k | v rows */
    vox_tensor o;                            /* [hidden, H*hd] */
    vox_tensor ffn_norm;                     /* [hidden] */
    vox_tensor gate_up;                      /* [2 ffn, hidden]: gate | up rows */
    vox_tensor down;                         /* [hidden, ffn] */
} vox_decoder_layer;

/* One weight the forward pass needs: its tensor in a blob, the shape the manifest implies, and
 * the model field it becomes. */
typedef struct {
    vox_safetensors *blob;
    char name[96];
    int ndim;
    int64_t shape[3];
    bool keep_f32; /* float32 on every backend (the encoder positions) */
    bool fp8_ok;   /* a decoder linear layer: F8_E4M3 with NAME_scale under the fp8_dynamic scheme */
    vox_tensor *dst;
} vox_weight_spec;

typedef struct {
    char dir[VOX_PATH_MAX];
    vox_manifest cfg;
    vox_backend *be;
    vox_safetensors *blob_encoder, *blob_embedding, *blob_decoder;

    /* audio_encoder */
    vox_tensor conv1_w, conv1_b;             /* [d, mel, 3], [d] */
    vox_tensor conv2_w, conv2_b;             /* [d, d, 3], [d] */
    vox_tensor positions;                    /* [max_source_positions, d], F32 */
    vox_encoder_layer *enc_layers;
    vox_tensor enc_norm_w, enc_norm_b;       /* [d] */
    vox_tensor proj1, proj2;                 /* [proj, d*4], [proj, proj] */
    /* token_embedding */
    vox_tensor embedding;                    /* [vocab, hidden] */
    /* text_decoder */
    vox_decoder_layer *dec_layers;
    vox_tensor dec_norm;                     /* [hidden] */
    vox_tensor lm_head;                      /* [vocab, hidden] */
    /* every weight above, as open listed and checked them (in blob order) */
    vox_weight_spec *weights;
    size_t n_weights;
} vox_model;

/* Open and check (be is set by upload). */
vox_status vox_model_open(const char *dir, vox_model **out, vox_error *err);
/* Makes every weight on be; on failure, free the model (with what was made). */
vox_status vox_model_upload(vox_model *m, vox_backend *be, vox_error *err);
/* Both. */
vox_status vox_model_load(const char *dir, vox_backend *be, vox_model **out, vox_error *err);
void vox_model_free(vox_model *m);

#ifdef __cplusplus
}
#endif
#endif
