/* What voxtral_runner writes: transcripts (txt, json lines) and the latency report. */
#ifndef VOX_CLI_REPORT_H
#define VOX_CLI_REPORT_H

#include <stdio.h>

#include "voxtral/voxtral.h"

/* Sums over the files of a run, for the latency table. */
typedef struct {
    double load_ms;
    voxtral_timings sum; /* stage times and token counts added up; peak is the maximum */
    double audio_seconds;
    int n_files, n_failed;
} vox_run_totals;

void vox_run_totals_add(vox_run_totals *t, const voxtral_result *r);

/* One JSON object on one line: file, text, tokens, language, audio_seconds, latency_ms, and
 * per-token logprobs when the result has them. */
void vox_write_json_result(FILE *out, const voxtral_context *ctx, const char *file,
                           const voxtral_result *r);

/* The table that starts with "Run latency (ms):" (CI jobs parse it). */
void vox_write_latency_table(FILE *out, const vox_run_totals *t, const char *device);
/* The same numbers as JSON. Returns 0 on success; on failure errno tells why. */
int vox_write_latency_json(const char *path, const vox_run_totals *t, const char *device);

#endif
