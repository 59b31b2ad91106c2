/* The forward pass, written once against the backend's operation table. */
#ifndef VOX_PIPELINE_PIPELINE_H
#define VOX_PIPELINE_PIPELINE_H

#include "backend/backend.h"
#include "model/model.h"

/* The most chunks an encoder group may take. Its workspace is about 60 MB of bf16 a chunk at
 * full size. */
#define VOX_ENCODER_GROUP_MAX 32
/* The chunks of an encoder group on `be`: be->encoder_group (1 <= it <= VOX_ENCODER_GROUP_MAX),
 * or VOX_ENCODER_GROUP=N: fewer for compute-sanitizer runs whose tools cannot finish some of
 * cuBLASLt's kernels at the larger sizes (bench/NOTES-2026-12-02-step-trace.md). */
int vox_encoder_group_chunks(const vox_backend *be);

/* Runs the audio encoder and projector over features [n_chunks, mel, 3000] (from the backend's
 * log_mel), writing audio embeddings [n_chunks * 375, hidden] into `embeds` (allocated by the
 * caller), at most max_group chunks at once (its workspace grows with them; 0:
 * vox_encoder_group_chunks). Ends early with VOX_ERR_INTERRUPTED once stop(stop_arg) says so
 * (stop may be NULL; asked between layers: on the CPU a long file's encoder takes seconds). */
vox_status vox_encoder_forward(vox_model *m, const vox_tensor *features, size_t n_chunks,
                               int max_group, bool (*stop)(void *), void *stop_arg,
                               vox_tensor *embeds, vox_error *err);
/* Audio embeddings one chunk yields: max_source_positions / downsample_factor (375). */
int vox_encoder_tokens_per_chunk(const vox_model *m);

/* One projection (vox_projection), fused with what surrounds it where the backend takes it
 * (be->projection); otherwise the same operations one by one, with `h` holding the normalised
 * input (norm_w) and `out` the product before its epilogue (ADD, SWIGLU, ROPE_CACHE). */
void vox_project(vox_backend *be, const vox_projection *p, vox_tensor *h, vox_tensor *out);

/* ---- the text decoder over a batch of sequences (decoder.c) ---- */

/* The paged key/value cache: one pool of fixed-size blocks shared by every sequence, each
 * sequence holding a table of the blocks its positions live in (as vLLM's PagedAttention). A
 * block holds block_size positions of every layer. Block 0 is never handed out: padding rows of
 * a recorded step write there. */
typedef struct {
    vox_tensor k, v;       /* [n_layers * n_blocks * block_size, kv_heads * head_dim] */
    vox_tensor *k_layer, *v_layer; /* views: layer l's [n_blocks * block_size, kv width] */
    int n_layers, n_blocks, block_size;
    int32_t *free_blocks;  /* stack of free block ids */
    int n_free;
} vox_kv_pool;

/* Bytes of cache one position takes (keys and values of every layer). */
size_t vox_kv_bytes_per_position(const vox_model *m);
vox_status vox_kv_pool_init(vox_model *m, vox_kv_pool *p, int n_blocks, int block_size,
                            vox_error *err);
void vox_kv_pool_free(vox_model *m, vox_kv_pool *p);
/* A free block's id, or -1 when none is left. */
int32_t vox_kv_pool_take(vox_kv_pool *p);
void vox_kv_pool_give(vox_kv_pool *p, const int32_t *blocks, int n);

/* Activations of the decoder for up to max_rows rows. */
typedef struct {
    vox_tensor h, qkv, q, attn, gate_up, act;
} vox_decoder_work;

/* Recorded decode-only steps, one per batch-size bucket (graphs.c chooses; decoder.c pads a
 * batch up to the recording's rows). */
#define VOX_DECODER_MAX_GRAPHS 32
typedef struct {
    int rows;
    int runs;     /* unrecorded runs so far (graphs.c records after one, or at once) */
    int requests; /* steps of this bucket run padded on a larger recording instead */
    void *graph;
} vox_decoder_graph;

/* What a batched decoder step works in, sized once for the largest step. */
typedef struct {
    int max_rows, max_seqs, max_logits, table_width, block_size;
    vox_tensor x;      /* [max_rows, hidden]: the residual stream; the caller fills the rows of
                          prompt chunks, the decode rows are embedded by the step itself */
    vox_decoder_work w;
    vox_tensor last;   /* [max_logits, hidden]: the rows whose logits are wanted */
    vox_tensor last_h; /* [max_logits, hidden] */
    vox_tensor logits; /* [max_logits, vocab] */
    vox_decoder_graph graphs[VOX_DECODER_MAX_GRAPHS];
    int n_graphs;
    /* host scratch for a padded copy of a batch */
    int32_t *pad;
    vox_fused_layer *fused; /* [layers]: the layers as backend.h's decode_fused takes them */
} vox_decoder_batch;

/* A decode-only step's graph (graphs.c): replay g, padded to `rows` rows (g->graph set), or record
 * it first (`record`), or run unrecorded and count the run in g->runs (neither); g NULL: run
 * unrecorded and unpadded (the table of buckets is full). */
typedef struct {
    vox_decoder_graph *g;
    int rows;
    bool record;
} vox_graph_plan;
/* Steps a bucket runs padded on a larger recording before it is recorded itself (decoder.c reads
 * VOX_GRAPH_RECORD_AFTER to change it for A/B runs). */
#define VOX_RECORD_AFTER 16
vox_graph_plan vox_decoder_graph_plan(vox_decoder_batch *d, int n_rows, int record_after);

vox_status vox_decoder_batch_init(vox_model *m, vox_decoder_batch *d, int max_rows, int max_seqs,
                                  int table_width, int block_size, vox_error *err);
void vox_decoder_batch_free(vox_model *m, vox_decoder_batch *d);

/* Runs one step of the decoder over batch b: rows b->n_decode .. b->n_rows - 1 of d->x must hold
 * the embeddings of the prompt chunks; the decode rows are embedded from b->ids. Every row's key
 * and value enter the pool at its row_slot; logits of rows b->logit_rows land in rows
 * 0 .. b->n_logits - 1 of d->logits. A decode-only step runs as a recorded graph of its bucket
 * where the backend has graphs (VOX_NO_GRAPHS=1 turns this off). */
vox_status vox_decoder_batch_step(vox_model *m, vox_kv_pool *kv, vox_decoder_batch *d,
                                  const vox_batch *b, vox_error *err);

#endif
