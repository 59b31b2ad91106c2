/* vox_decoder_graph_plan (src/pipeline/graphs.c): which recording a decode-only step of n rows
 * replays, records or runs without, as the batch grows and shrinks. The test plays the decoder's
 * part: a recorded plan marks its graph recorded, an unrecorded run counts in g->runs. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "pipeline/pipeline.h"

static int marker; /* stands for a recorded graph */

/* One step of n rows: 'E' run unrecorded, 'R' recorded (then replayed), 'P' replayed; *rows the
 * rows it runs with (padding included). */
static char step(vox_decoder_batch *d, int n, int record_after, int *rows) {
    vox_graph_plan p = vox_decoder_graph_plan(d, n, record_after);
    *rows = p.rows;
    CHECK_MSG(p.rows >= n, "n %d runs with %d rows", n, p.rows);
    if (!p.g) return 'E';
    CHECK_MSG(p.rows == p.g->rows, "n %d: plan rows %d, graph rows %d", n, p.rows, p.g->rows);
    if (p.record) {
        CHECK(!p.g->graph);
        p.g->graph = &marker;
        return 'R';
    }
    if (p.g->graph) return 'P';
    p.g->runs++;
    return 'E';
}

/* Runs `count` steps of n rows and checks each against `want` ("E", "R", "P"; the last letter
 * repeats) and the rows. */
static void expect(vox_decoder_batch *d, int n, int count, int record_after, const char *want,
                   int want_rows) {
    for (int i = 0; i < count; i++) {
        int rows;
        char got = step(d, n, record_after, &rows);
        size_t len = strlen(want);
        char w = want[(size_t)i < len ? (size_t)i : len - 1];
        CHECK_MSG(got == w && rows == want_rows, "n %d, step %d: got %c with %d rows, want %c with %d",
                  n, i, got, rows, w, want_rows);
    }
}

static void fresh(vox_decoder_batch *d, int max_seqs) {
    memset(d, 0, sizeof *d);
    d->max_seqs = max_seqs;
}

int main(void) {
    vox_decoder_batch d;

    /* a full batch: its bucket runs unrecorded once, is recorded on its second step */
    fresh(&d, 256);
    expect(&d, 128, 3, VOX_RECORD_AFTER, "ERP", 128);
    expect(&d, 100, 2, VOX_RECORD_AFTER, "P", 128); /* the same bucket, padded */
    /* a smaller bucket (96) rides on 128 (at most twice its rows) for VOX_RECORD_AFTER steps, then
     * gets its own recording at once (a larger one exists: no unrecorded step) */
    expect(&d, 90, VOX_RECORD_AFTER, VOX_RECORD_AFTER, "P", 128);
    expect(&d, 90, 2, VOX_RECORD_AFTER, "RP", 96);
    /* 40 rows: 96 and 128 are more than twice 40 (and past 64): its own, recorded at once */
    expect(&d, 40, 2, VOX_RECORD_AFTER, "RP", 40);
    /* 33 rows pad to 40 (at most 64), 17 to 40 too (twice 17 is 34, but 64 is the floor) */
    expect(&d, 33, 1, VOX_RECORD_AFTER, "P", 40);
    expect(&d, 17, 1, VOX_RECORD_AFTER, "P", 40);
    /* exact buckets of up to 4 rows (the fused decode paths) are never padded onto the GEMM path's
     * recordings: an unrecorded step first (their kernels' workspaces are not those of the GEMM
     * path), then their own recording; a smaller one rides on theirs while it is young */
    expect(&d, 3, 3, VOX_RECORD_AFTER, "ERP", 3);
    expect(&d, 2, VOX_RECORD_AFTER, VOX_RECORD_AFTER, "P", 3);
    expect(&d, 2, 3, VOX_RECORD_AFTER, "ERP", 2);
    expect(&d, 1, 2, VOX_RECORD_AFTER, "P", 2);
    /* record_after 0: every bucket its own at once, as before the reuse (20 -> 24, recorded at
     * once since larger ones exist) */
    expect(&d, 20, 2, 0, "RP", 24);

    /* the largest bucket is capped by the batch: 200 of at most 206 run exactly, not 224 */
    fresh(&d, 206);
    expect(&d, 200, 3, VOX_RECORD_AFTER, "ERP", 200);
    expect(&d, 206, 3, VOX_RECORD_AFTER, "ERP", 206); /* the recording of 200 is too small: its own */

    /* a growing batch never pads down: 8 rows recorded, then 16 gets its own */
    fresh(&d, 256);
    expect(&d, 8, 3, VOX_RECORD_AFTER, "ERP", 8);
    expect(&d, 16, 3, VOX_RECORD_AFTER, "ERP", 16);

    /* the table full: a new bucket runs on a recording that fits, else unrecorded and unpadded */
    fresh(&d, 4096);
    for (int i = 0; i < VOX_DECODER_MAX_GRAPHS; i++) {
        d.graphs[i] = (vox_decoder_graph){.rows = 1024 + 32 * i};
        d.n_graphs++;
    }
    d.graphs[0].graph = &marker; /* 1024 recorded */
    expect(&d, 600, 2, VOX_RECORD_AFTER, "P", 1024);
    expect(&d, 100, 2, VOX_RECORD_AFTER, "E", 100);
    CHECK(d.n_graphs == VOX_DECODER_MAX_GRAPHS);
    return test_finish("test_pipeline_graphs");
}
