/* The forward pass, written once against the backend's operation table. */
#ifndef VOX_PIPELINE_PIPELINE_H
#define VOX_PIPELINE_PIPELINE_H

#include "backend/backend.h"
#include "model/model.h"

/* Chunks the encoder runs at once: bounds its workspace (about 60 MB of bf16 per chunk at full
 * size) while keeping the GEMMs large. */
#define VOX_ENCODER_CHUNK_BATCH 8

/* Runs the audio encoder and projector over features [n_chunks, mel, 3000] (from the backend's
 * log_mel), writing audio embeddings [n_chunks * 375, hidden] into `embeds` (allocated by the
 * caller). */
vox_status vox_encoder_forward(vox_model *m, const vox_tensor *features, size_t n_chunks,
                               vox_tensor *embeds, vox_error *err);
/* Audio embeddings one chunk yields: max_source_positions / downsample_factor (375). */
int vox_encoder_tokens_per_chunk(const vox_model *m);

/* Activations of the decoder for T rows. */
typedef struct {
    vox_tensor h, qkv, q, attn, gate_up, act;
} vox_decoder_work;

/* Key/value cache of the text decoder: per layer [capacity, kv_heads * head_dim], and what a
 * decode step reuses: its one-row workspace and, where the backend has graphs, the recorded
 * step (recorded on the second step, replayed from then on; VOX_NO_GRAPHS=1 turns this off). */
typedef struct {
    vox_tensor *k, *v;
    int n_layers;
    int64_t capacity;
    int64_t len; /* positions filled */
    vox_decoder_work step;
    int steps_run;
    void *graph;
    void *graph_x, *graph_logits; /* the tensors the graph was recorded with */
} vox_kv_cache;

vox_status vox_kv_cache_init(vox_model *m, vox_kv_cache *c, int64_t capacity, vox_error *err);
void vox_kv_cache_free(vox_model *m, vox_kv_cache *c);

/* Runs the decoder over x [T, hidden] (embeddings of positions c->len .. c->len + T - 1),
 * appends their keys and values to the cache, and writes the logits of the LAST row into
 * logits [1, vocab]. x is used as the residual stream and overwritten. */
vox_status vox_decoder_forward(vox_model *m, vox_kv_cache *c, vox_tensor *x, vox_tensor *logits,
                               vox_error *err);
/* The same for one row (a decode step), through the step workspace and the recorded graph. */
vox_status vox_decoder_step(vox_model *m, vox_kv_cache *c, vox_tensor *x, vox_tensor *logits,
                            vox_error *err);

#endif
