/* voxtral_runner: transcribes audio files with an exported Voxtral model.
 *
 * The model loads once; each input is decoded, transcribed (whole, or cut at pauses), rendered
 * in memory and then written in one piece: to standard output, or to DIR/NAME.EXT through a
 * temporary file. A file that fails is reported on stderr and the others go on; a summary ends
 * a batch. SIGINT/SIGTERM abandon the file in progress (no output for it), keep the finished
 * ones and print the summary. Exit status: 0 all good, 1 some files failed, 2 usage or model
 * error, 128 + signal when interrupted (cli/options.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/inputs.h"
#include "cli/interrupt.h"
#include "cli/options.h"
#include "cli/outfile.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/transcript.h"
#include "voxtral/voxtral.h"

static vox_progress g_progress;

/* Every message to the user: erase the progress line first so that the two never mix. */
static void say(const char *fmt, ...) {
    va_list ap;
    vox_progress_clear(&g_progress);
    fputs("voxtral_runner: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* DIR/NAME.EXT of every input; a usage error when two inputs would write the same file. */
static int plan_outputs(const vox_cli_options *o, const vox_inputs *in, char ***out) {
    vox_error err = {0};
    if (vox_output_dir_prepare(o->output_dir, &err)) {
        say("%s", err.msg);
        return -1;
    }
    char **paths = calloc(in->n ? in->n : 1, sizeof *paths);
    for (size_t i = 0; paths && i < in->n; i++)
        if (!(paths[i] = vox_output_path(o->output_dir, in->paths[i], vox_cli_format_ext(o->format)))) {
            for (size_t j = 0; j < i; j++) free(paths[j]);
            free(paths);
            paths = NULL;
        }
    if (!paths) {
        say("out of memory");
        return -1;
    }
    *out = paths;
    size_t a, b;
    if (vox_find_duplicate(paths, in->n, &a, &b)) {
        say("'%s' and '%s' would both be written to %s: give them different names or use "
            "separate runs", in->paths[a], in->paths[b], paths[a]);
        return -1;
    }
    return 0;
}

static void free_paths(char **paths, size_t n) {
    for (size_t i = 0; paths && i < n; i++) free(paths[i]);
    free(paths);
}

/* Renders t, then writes it in one piece to stdout or to out_path. */
static vox_status emit(const voxtral_context *ctx, const vox_transcript *t,
                       const vox_output_style *style, const char *out_path, vox_error *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    int bad = mem ? vox_write_transcript(mem, ctx, t, style) : -1;
    if (mem && fclose(mem) != 0) bad = -1;
    vox_status st = VOX_OK;
    if (bad) {
        st = vox_fail(err, VOX_ERR_NOMEM, "%s: cannot format the output: out of memory", t->path);
    } else if (out_path) {
        st = vox_write_file_atomic(out_path, buf, len, err);
    } else {
        vox_progress_clear(&g_progress);
        if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)
            st = vox_fail(err, VOX_ERR_IO, "%s: standard output: cannot write: %s", t->path,
                          strerror(errno));
    }
    free(buf);
    return st;
}

/* What the transcription of each file is asked for. */
static vox_cli_run_params run_params(const vox_cli_options *o) {
    vox_cli_run_params p = {.tp = voxtral_transcribe_default_params(), .segment = o->segment,
                            .seg = vox_segment_default_params(), .progress = vox_progress_update,
                            .user = &g_progress};
    p.tp.language = o->language;
    p.tp.max_new_tokens = o->max_new_tokens;
    p.tp.ignore_eos = o->ignore_eos;
    p.tp.logprobs = o->print_confidence && o->logprobs == 0 ? 1 : o->logprobs;
    p.tp.force_ids = o->force_ids;
    p.tp.n_force_ids = o->n_force_ids;
    p.tp.dump_path = o->dump_tensors;
    p.seg.threshold_db = o->silence_threshold_db;
    p.seg.min_silence_s = o->min_silence_s;
    return p;
}

/* "N of M files transcribed, F failed[, K not done (interrupted)]; ...", then each failure
 * again (the messages scroll away in a long batch). */
static void print_summary(const vox_run_totals *t, char **failed, size_t n_failed) {
    int not_done = t->n_inputs - t->n_files - t->n_failed;
    char rest[64] = "";
    if (not_done > 0) snprintf(rest, sizeof rest, ", %d not done (interrupted)", not_done);
    else if (t->interrupted) snprintf(rest, sizeof rest, " (interrupted)");
    say("%d of %d files transcribed, %d failed%s; %.1f s of audio in %.1f s", t->n_files,
        t->n_inputs, t->n_failed, rest, t->audio_seconds, t->wall_ms / 1e3);
    for (size_t i = 0; failed && i < n_failed; i++) fprintf(stderr, "  failed: %s\n", failed[i]);
}

int main(int argc, char **argv) {
    double t_start = now_ms();
    vox_cli_options o;
    vox_error err = {0};
    bool stop;
    int rc = vox_cli_parse(argc, argv, &o, &stop, &err);
    if (stop) {
        if (rc) fprintf(stderr, "voxtral_runner: %s\n", err.msg);
        return rc;
    }
    vox_inputs in;
    if (vox_inputs_build(o.files, o.n_files, o.files_from, &in, &err)) {
        fprintf(stderr, "voxtral_runner: %s\n", err.msg);
        vox_cli_options_free(&o);
        return VOX_EXIT_USAGE;
    }
    if (in.n == 0) { /* an empty --files-from list: nothing to do is not an error for a script */
        fprintf(stderr, "voxtral_runner: no input files in %s\n",
                strcmp(o.files_from, "-") ? o.files_from : "standard input");
        vox_cli_options_free(&o);
        return VOX_EXIT_OK;
    }
    char **out_paths = NULL;
    if (o.output_dir && plan_outputs(&o, &in, &out_paths)) {
        free_paths(out_paths, in.n);
        vox_inputs_free(&in);
        vox_cli_options_free(&o);
        return VOX_EXIT_USAGE;
    }

    voxtral_context_params cp = voxtral_context_default_params();
    cp.model_dir = o.model_dir;
    cp.device = o.device;
    voxtral_context *ctx = NULL;
    if (voxtral_init(&cp, &ctx, &err)) {
        fprintf(stderr, "voxtral_runner: cannot load the model from '%s': %s\n", o.model_dir, err.msg);
        free_paths(out_paths, in.n);
        vox_inputs_free(&in);
        vox_cli_options_free(&o);
        return VOX_EXIT_USAGE;
    }
    if (vox_interrupt_install() != 0) say("cannot install the SIGINT handler: %s", strerror(errno));

    vox_progress_init(&g_progress, !o.no_progress && isatty(STDERR_FILENO), stderr, in.n);
    vox_output_style style = {.format = o.format, .confidence = o.print_confidence,
                              .threshold = o.confidence_threshold,
                              .mark = isatty(STDOUT_FILENO) && !o.output_dir ? VOX_MARK_COLOUR
                                                                             : VOX_MARK_PLAIN};
    const vox_cli_run_params params = run_params(&o);
    vox_run_totals totals = {.load_ms = voxtral_load_ms(ctx), .n_inputs = (int)in.n};
    char **failed = calloc(in.n, sizeof *failed);
    size_t n_failed = 0;
    for (size_t i = 0; i < in.n && !vox_interrupted(); i++) {
        vox_transcript t;
        vox_progress_begin_file(&g_progress, in.paths[i]);
        vox_status st = vox_cli_transcribe(ctx, in.paths[i], &params, &t, &err);
        if (st == VOX_ERR_INTERRUPTED) {
            say("%s: interrupted: abandoned, no output written for it", in.paths[i]);
            break;
        }
        if (!st) {
            style.header = in.n > 1 && !o.output_dir ? in.paths[i] : NULL;
            st = emit(ctx, &t, &style, out_paths ? out_paths[i] : NULL, &err);
            if (!st) vox_run_totals_add(&totals, &t);
        }
        if (st) {
            say("%s", err.msg);
            totals.n_failed++;
            if (failed && (failed[n_failed] = strdup(err.msg))) n_failed++;
        }
        vox_progress_end_file(&g_progress, st ? 0 : t.audio_seconds, st != VOX_OK);
        vox_transcript_free(&t);
    }
    vox_progress_clear(&g_progress);
    totals.interrupted = vox_interrupted();
    totals.wall_ms = now_ms() - t_start;

    bool report_failed = false;
    if (o.latency) vox_write_latency_table(stderr, &totals, voxtral_device_name(ctx));
    if (o.latency_json && vox_write_latency_json(o.latency_json, &totals, voxtral_device_name(ctx), &err)) {
        say("--latency-json %s", err.msg);
        report_failed = true;
    }
    if (in.n > 1 || totals.interrupted) print_summary(&totals, in.n > 1 ? failed : NULL, n_failed);
    int sig = vox_interrupt_signal();
    free_paths(failed, n_failed);
    voxtral_free(ctx);
    free_paths(out_paths, in.n);
    vox_inputs_free(&in);
    vox_cli_options_free(&o);
    if (sig) return 128 + sig;
    return totals.n_failed || report_failed ? VOX_EXIT_SOME_FAILED : VOX_EXIT_OK;
}
