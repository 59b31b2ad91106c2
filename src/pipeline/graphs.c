/* Which CUDA graph a decode-only step replays or records (pipeline.h, vox_decoder_graph_plan).
 *
 * A decode-only step of n sequences is recorded per batch-size bucket and padded up to it. The
 * costs that shape the policy (H200, full size, bench/NOTES-2026-12-02-step-trace.md): a replay
 * 3.2-3.9 ms at 8-50 rows; a bucket's unrecorded first step 9-10 ms (the host launches ~500
 * kernels while the device waits), its recording 6-7 ms (capture and instantiate); a replay
 * padded to at most twice the rows (or 64) 0.1-0.5 ms more than an exact one. A shrinking batch
 * (files finishing) visits a new bucket every few steps: 128 files of 3 to 30 s visited 13,
 * ~116 ms of recordings. So a bucket without a recording runs padded on a larger recording
 * while one exists, and is recorded only once it has been asked for record_after times.
 * Not a step of at most VOX_FUSED_DECODE_ROWS (backend.h) sequences, though: the backend runs it
 * as one fused launch (the persistent decode kernel: 3.14-3.20 ms at three rows on an H100,
 * against 3.70 for the same step padded onto an 8-row recording), whose unrecorded step costs no
 * host time to speak of (where that kernel is off, the matvec path's ~155 launches, once a
 * bucket); it is padded only onto another fused step's recording (bench/NOTES-2026-12-06f.md
 * section 3). */
#include "pipeline/pipeline.h"

/* Rows a decode-only step of n sequences is recorded for: exact up to VOX_FUSED_DECODE_ROWS, then
 * multiples of 8 up to 64 and of 32 beyond: at most 1/8 of a step is padding past 64 rows, and no
 * more than 18 recordings cover 256 sequences. */
static int bucket_rows(int n) {
    if (n <= VOX_FUSED_DECODE_ROWS) return n;
    if (n <= 64) return (n + 7) / 8 * 8;
    return (n + 31) / 32 * 32;
}

/* The bucket of `rows` rows, made on first use; NULL when the table is full. */
static vox_decoder_graph *graph_for(vox_decoder_batch *d, int rows) {
    for (int i = 0; i < d->n_graphs; i++)
        if (d->graphs[i].rows == rows) return &d->graphs[i];
    if (d->n_graphs == VOX_DECODER_MAX_GRAPHS) return NULL;
    d->graphs[d->n_graphs] = (vox_decoder_graph){.rows = rows};
    return &d->graphs[d->n_graphs++];
}

/* The smallest recorded graph that n rows fit in with little padding: at most twice the rows, or
 * 64 (below that a step's GEMMs cost about the same at any row count); a fused step only on
 * another fused step's recording. */
static vox_decoder_graph *recorded_above(vox_decoder_batch *d, int n) {
    int limit = n <= VOX_FUSED_DECODE_ROWS ? VOX_FUSED_DECODE_ROWS : 2 * n > 64 ? 2 * n : 64;
    vox_decoder_graph *best = NULL;
    for (int i = 0; i < d->n_graphs; i++) {
        vox_decoder_graph *g = &d->graphs[i];
        if (g->graph && g->rows >= n && g->rows <= limit && (!best || g->rows < best->rows)) best = g;
    }
    return best;
}

/* Whether a graph of more than `rows` rows has been recorded. */
static bool larger_recorded(const vox_decoder_batch *d, int rows) {
    for (int i = 0; i < d->n_graphs; i++)
        if (d->graphs[i].graph && d->graphs[i].rows > rows) return true;
    return false;
}

vox_graph_plan vox_decoder_graph_plan(vox_decoder_batch *d, int n, int record_after) {
    int rows = bucket_rows(n);
    if (rows > d->max_seqs) rows = n;
    vox_decoder_graph *g = graph_for(d, rows);
    if (!g || (!g->graph && g->requests < record_after)) {
        vox_decoder_graph *big = recorded_above(d, n);
        if (big) {
            if (g) g->requests++;
            return (vox_graph_plan){.g = big, .rows = big->rows};
        }
    }
    if (!g) return (vox_graph_plan){.g = NULL, .rows = n};
    /* A bucket's first step runs unrecorded (sizing the workspaces its kernels grow outside a
     * recording, backend.h); its second is recorded. A bucket of more than VOX_FUSED_DECODE_ROWS
     * (the GEMM path) after a larger one was recorded is recorded at once: its kernels' workspaces
     * are sized already, and the unrecorded step would cost ~6 ms of kernel launches. */
    bool record = !g->graph && (g->runs >= 1 || (g->rows > VOX_FUSED_DECODE_ROWS &&
                                                 larger_recorded(d, g->rows)));
    return (vox_graph_plan){.g = g, .rows = g->rows, .record = record};
}
