/* The latency report of a run: per-stage sums over every file (and every segment) transcribed,
 * as the table that starts with "Run latency (ms):" (CI jobs parse it) or as JSON.
 *
 * Under batching a stage's time is the device time of the batched work attributed to it: a
 * decoder step's time is shared by its rows (decode rows count as decode, prompt rows as
 * prefill), an encoder group's by its chunks, so each file carries its share and the stages
 * summed over the files are the device time of the run. `audio` is the readers' decoding time
 * (threads running beside the device). `total` is the sum of the stages.
 *
 * Lines named "load: ..." follow `load` and say where it went (voxtral_load_timings: some parts
 * run side by side, so they do not add up to it); `teardown` (after `wall`) is what freeing the
 * models and devices cost once the run was over. */
#ifndef VOX_CLI_REPORT_H
#define VOX_CLI_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/transcript.h"
#include "voxtral/voxtral.h"

#define VOX_RUN_MAX_DEVICES 64

typedef struct {
    double load_ms;
    voxtral_load_timings load; /* where load_ms went, summed over the devices */
    double main_start_ms;      /* CLOCK_MONOTONIC at the start of main (an outside timer's zero) */
    double teardown_ms;        /* freeing the models and devices after the run */
    voxtral_timings sum;  /* stage times and token counts added up; peak is the maximum */
    double audio_seconds; /* of the files transcribed */
    double wall_ms;       /* the whole run: model load, every file, the outputs */
    int n_inputs;         /* files asked for */
    int n_files;          /* files transcribed */
    int n_failed;
    int n_skipped;        /* --skip-existing: inputs whose output was there already */
    int n_requests;       /* model requests: one per file, one per segment when segmenting */
    bool interrupted;
    voxtral_queue_stats batch; /* the queue's figures: batch size, KV cache, queue wait */
    /* with several devices, each one's figures */
    int n_devices;
    voxtral_queue_stats device[VOX_RUN_MAX_DEVICES];
    const char *device_name[VOX_RUN_MAX_DEVICES];
} vox_run_totals;

void vox_run_totals_add(vox_run_totals *t, const vox_transcript *tr);
/* Adds one device's load breakdown (devices load one after another). */
void vox_run_totals_add_load(vox_run_totals *t, const voxtral_load_timings *l);

void vox_write_latency_table(FILE *out, const vox_run_totals *t, const char *device);
/* The same numbers as JSON text, without a final newline (malloc'ed; NULL: out of memory);
 * one_line: on one line (after -o json's lines on standard output, one object a line). */
char *vox_latency_json(const vox_run_totals *t, const char *device, bool one_line);

#endif
