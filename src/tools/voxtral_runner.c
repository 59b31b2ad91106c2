/* voxtral_runner: transcribes audio files with an exported Voxtral model.
 *
 * The model loads once; every input goes into one queue (voxtral.h), which decodes files ahead
 * on reader threads and transcribes many at once (continuous batching: whole files, or the
 * pieces cut at pauses). Each result is rendered in memory and written in one piece: to
 * DIR/NAME.EXT through a temporary file as soon as it completes, or to standard output in input
 * order (a file is printed once it and every file before it are done). A file that fails is
 * reported on stderr and the others go on; a summary ends a batch. SIGINT/SIGTERM abandon the
 * files in progress (no output for them), keep the finished ones and print the summary. Exit
 * status: 0 all good, 1 some files failed, 2 usage or model error, 128 + signal when
 * interrupted (cli/options.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audio/audio.h"
#include "cli/devices.h"
#include "cli/inputs.h"
#include "cli/interrupt.h"
#include "cli/options.h"
#include "cli/outfile.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/transcript.h"
#include "common/file_out.h"
#include "common/read_all.h"
#include "voxtral/voxtral.h"

static vox_progress g_progress;
/* Where transcripts go: standard output, on a descriptor of its own (take_stdout) */
static FILE *g_results;

/* Gives the results a copy of standard output's descriptor and points descriptor 1 at standard
 * error: a library that prints with printf (libsndfile's MIDI sample dump reader writes
 * "Error A : 45" for each damaged block) would otherwise mix its lines into the transcripts on
 * standard output; now they go with the other diagnostics. Where the copy cannot be made,
 * standard output stays as it is. */
static void take_stdout(void) {
    g_results = stdout;
    fflush(stdout);
    const int fd = dup(STDOUT_FILENO);
    FILE *results = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!results || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
        if (results) fclose(results);
        else if (fd >= 0) close(fd);
        return;
    }
    g_results = results;
}

/* Whether path is standard output: "-", or the file descriptor 1 writes to (/dev/stdout, or
 * the file the shell redirected it to). Asked before take_stdout. */
static bool names_stdout(const char *path) {
    return strcmp(path, "-") == 0 || vox_file_standard_stream(path) == STDOUT_FILENO;
}

/* --skip-existing: an output of an earlier run is there. Outputs are written whole or not at all,
 * so a regular file is a complete one; a directory or a FIFO of that name is not an output (its
 * input runs, and writing its output reports the problem). */
static bool output_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* --latency-json: to path, whole or not at all, or after the transcripts on their stream (on
 * one line there, so that -o json's output stays one object a line). */
static vox_status write_latency_json(const char *path, bool to_results, const vox_run_totals *t,
                                     const char *device, vox_error *err) {
    char *text = vox_latency_json(t, device, to_results);
    if (!text) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print's NUL becomes the final newline */
    vox_status st = VOX_OK;
    if (!to_results)
        st = vox_file_write_whole(path, text, len + 1, err);
    else if (fwrite(text, 1, len + 1, g_results) != len + 1 || fflush(g_results) != 0)
        st = vox_fail(err, VOX_ERR_IO, "%s: standard output: cannot write: %s", path, strerror(errno));
    free(text);
    return st;
}

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

static void report_device_failure(const char *device, const char *reason) {
    fprintf(stderr, "voxtral_runner: %s: cannot load the model: %s; left out\n", device,
            reason);
}

static bool interrupted(void *unused) {
    (void)unused;
    return vox_interrupted();
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* DIR/NAME.EXT of every input of the whole list, before a shard is taken (every shard reads the
 * same list, so each sees what the others would write): a usage error, before anything is
 * created, when two inputs would write the same file or an output would replace an input.
 * Then the output directory is made. */
static int plan_outputs(const vox_cli_options *o, const vox_inputs *in, char ***out) {
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
        say("'%s' and '%s' would both be written to %s: give them different names or separate "
            "--output-dir directories", in->paths[a], in->paths[b], paths[a]);
        return -1;
    }
    if (vox_find_overwritten_input(paths, in->paths, in->n, &a, &b)) {
        say("the output of '%s' would replace the input '%s' (%s): choose another --output-dir "
            "or -o format", in->paths[a], in->paths[b], paths[a]);
        return -1;
    }
    /* found here, not as a failed write after its transcription */
    const size_t name_len = vox_find_overlong_name(paths, in->n, &a);
    if (name_len) {
        say("the output name of '%s' is %zu bytes, more than the %d a file name may have: "
            "rename the input", in->paths[a], name_len, NAME_MAX);
        return -1;
    }
    vox_error err = {0};
    if (vox_output_dir_prepare(o->output_dir, &err)) {
        say("%s", err.msg);
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
        st = vox_file_write_whole(out_path, buf, len, err);
        if (st) vox_error_prefix(err, "%s", t->path); /* the input it is the output of */
    } else {
        vox_progress_clear(&g_progress);
        if (fwrite(buf, 1, len, g_results) != len || fflush(g_results) != 0)
            st = vox_fail(err, VOX_ERR_IO, "%s: standard output: cannot write: %s", t->path,
                          strerror(errno));
    }
    free(buf);
    return st;
}

/* What the transcription of each file is asked for. */
static voxtral_transcribe_params run_params(const vox_cli_options *o) {
    voxtral_transcribe_params p = voxtral_transcribe_default_params();
    p.language = o->language;
    p.max_new_tokens = o->max_new_tokens;
    p.ignore_eos = o->ignore_eos;
    p.logprobs = o->print_confidence && o->logprobs == 0 ? 1 : o->logprobs;
    p.force_ids = o->force_ids;
    p.n_force_ids = o->n_force_ids;
    p.dump_path = o->dump_tensors;
    p.segment = o->segment;
    p.silence_threshold_db = o->silence_threshold_db;
    p.min_silence_s = o->min_silence_s;
    return p;
}

/* The run as the completion callback sees it. Results for standard output wait in `held` until
 * every input before them is done. */
typedef struct {
    const vox_cli_options *o;
    const vox_inputs *in;
    char **out_paths;
    const voxtral_context *ctx;
    vox_output_style style;
    bool logprobs;
    enum { SLOT_WAITING, SLOT_HELD, SLOT_DONE } *slot;
    vox_transcript *held;
    size_t next_print;
    vox_run_totals *totals;
    char **failed; /* by input: the message of each that failed, for the summary (input order) */
} run_state;

/* Says at once that input i failed; the summary lists it again, in input order. */
static void report_failure(run_state *rs, size_t i, const char *msg) {
    say("%s", msg);
    rs->totals->n_failed++;
    if (rs->failed && !rs->failed[i]) rs->failed[i] = strdup(msg);
}

/* Writes t (input i) where it goes; counts it. */
static void write_one(run_state *rs, size_t i, vox_transcript *t) {
    vox_error err = {0};
    rs->style.header = rs->in->n > 1 && !rs->o->output_dir ? rs->in->paths[i] : NULL;
    vox_status st = emit(rs->ctx, t, &rs->style, rs->out_paths ? rs->out_paths[i] : NULL, &err);
    if (st) report_failure(rs, i, err.msg);
    else vox_run_totals_add(rs->totals, t);
    vox_transcript_free(t);
}

/* Prints the held results whose predecessors are all done. */
static void flush_in_order(run_state *rs) {
    while (rs->next_print < rs->in->n && rs->slot[rs->next_print] != SLOT_WAITING) {
        size_t i = rs->next_print++;
        if (rs->slot[i] == SLOT_HELD) write_one(rs, i, &rs->held[i]);
        rs->slot[i] = SLOT_DONE;
    }
}

static void on_complete(const voxtral_completion *c, void *user) {
    run_state *rs = user;
    size_t i = (size_t)c->tag;
    rs->slot[i] = SLOT_DONE;
    if (c->status == VOX_ERR_INTERRUPTED) {
        voxtral_result_free(c->result); /* abandoned: nothing is written for it */
    } else if (c->status) {
        report_failure(rs, i, c->error);
        vox_progress_end_file(&g_progress, 0, true);
    } else {
        vox_transcript t;
        vox_error err = {0};
        double audio_s = c->result->audio_seconds;
        if (c->result->warning) say("%s: warning: %s", rs->in->paths[i], c->result->warning);
        if (vox_transcript_from_result(&t, rs->in->paths[i], c->result, rs->logprobs, &err)) {
            voxtral_result_free(c->result);
            report_failure(rs, i, err.msg);
        } else if (rs->o->output_dir) {
            write_one(rs, i, &t);
        } else {
            rs->held[i] = t;
            rs->slot[i] = SLOT_HELD;
        }
        vox_progress_end_file(&g_progress, audio_s, false);
    }
    flush_in_order(rs);
}

/* Redraws the progress line now and then while tokens come. */
static bool on_token(int32_t id, void *user) {
    (void)id;
    vox_progress_update(0, 0, 0, user);
    return true;
}

/* "N of M files transcribed, F failed[, K not done (interrupted)]; ...", then each failure
 * again, in input order (the messages scroll away in a long batch): failed[i] is input i's, or
 * NULL, for n inputs. */
static void print_summary(const vox_run_totals *t, char **failed, size_t n) {
    int not_done = t->n_inputs - t->n_files - t->n_failed - t->n_skipped;
    char rest[96] = "";
    int len = 0;
    if (t->n_skipped > 0)
        len = snprintf(rest, sizeof rest, ", %d skipped (output exists)", t->n_skipped);
    if (not_done > 0)
        snprintf(rest + len, sizeof rest - (size_t)len, ", %d not done%s", not_done,
                 t->interrupted ? " (interrupted)" : "");
    else if (t->interrupted) snprintf(rest + len, sizeof rest - (size_t)len, " (interrupted)");
    say("%d of %d files transcribed, %d failed%s; %.1f s of audio in %.1f s", t->n_files,
        t->n_inputs, t->n_failed, rest, t->audio_seconds, t->wall_ms / 1e3);
    for (size_t i = 0; failed && i < n; i++)
        if (failed[i]) fprintf(stderr, "  failed: %s\n", failed[i]);
}

/* The end of a run that stops before its work (nothing to do, or an error reported already):
 * frees what main has built so far and gives the exit status. */
static int end_before_work(char **out_paths, vox_inputs *in, vox_cli_options *o, int rc) {
    free_paths(out_paths, in->n);
    vox_inputs_free(in);
    vox_cli_options_free(o);
    return rc;
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
    size_t n_listed = in.n;
    char **out_paths = NULL;
    if (o.output_dir && in.n > 0 && plan_outputs(&o, &in, &out_paths)) {
        return end_before_work(out_paths, &in, &o, VOX_EXIT_USAGE);
    }
    if (o.shard_n > 1) {
        if (out_paths) vox_shard_paths(out_paths, in.n, o.shard_k, o.shard_n);
        vox_inputs_shard(&in, o.shard_k, o.shard_n);
    }
    if (in.n == 0) { /* an empty list or shard: nothing to do is not an error for a script */
        if (n_listed > 0)
            fprintf(stderr, "voxtral_runner: shard %d/%d of %zu inputs is empty\n", o.shard_k,
                    o.shard_n, n_listed);
        else
            fprintf(stderr, "voxtral_runner: no input files in %s\n",
                    strcmp(o.files_from, "-") ? o.files_from : "standard input");
        return end_before_work(out_paths, &in, &o, VOX_EXIT_OK);
    }

    if (o.skip_existing) { /* everything done already: no model to load */
        size_t present = 0;
        for (size_t i = 0; i < in.n; i++) present += output_exists(out_paths[i]);
        if (present == in.n) {
            fprintf(stderr, "voxtral_runner: 0 of %zu files transcribed, 0 failed, %zu skipped "
                    "(output exists): nothing to do\n", in.n, in.n);
            return end_before_work(out_paths, &in, &o, VOX_EXIT_OK);
        }
    }

    /* the latency JSON is written at the end: a path that cannot take it is found now, before
     * the model loads and the work is done. "-", /dev/stdout or the file standard output is
     * redirected to: after the transcripts, on their stream (take_stdout moves it). */
    const bool latency_to_results = o.latency_json && names_stdout(o.latency_json);
    if (o.latency_json && !latency_to_results &&
        vox_file_out_check("--latency-json", o.latency_json, &err)) {
        fprintf(stderr, "voxtral_runner: %s\n", err.msg);
        return end_before_work(out_paths, &in, &o, VOX_EXIT_USAGE);
    }
    /* the tensor dump is one file, of one input, written when it completes */
    if (o.dump_tensors && in.n > 1) {
        fprintf(stderr, "voxtral_runner: --dump-tensors %s: writes the tensors of one input, and "
                "%zu are given\n", o.dump_tensors, in.n);
        return end_before_work(out_paths, &in, &o, VOX_EXIT_USAGE);
    }
    if (o.dump_tensors && vox_file_out_check("--dump-tensors", o.dump_tensors, &err)) {
        fprintf(stderr, "voxtral_runner: %s\n", err.msg);
        return end_before_work(out_paths, &in, &o, VOX_EXIT_USAGE);
    }

    take_stdout(); /* before anything decodes a file */

    /* the model, once per device (-d cuda:0,cuda:1 or cuda:all); a device that cannot load it
     * is reported and the others go on */
    char **dev_names = NULL;
    int n_devs = 0, n_ctx = 0;
    voxtral_context *ctxs[VOX_CLI_MAX_DEVICES];
    vox_status lst = vox_cli_device_list(o.device, &dev_names, &n_devs, &err);
    if (lst) {
        fprintf(stderr, "voxtral_runner: %s\n", err.msg);
    } else if ((lst = vox_cli_load_devices(o.model_dir, dev_names, n_devs, ctxs, &n_ctx,
                                           report_device_failure, &err))) {
        fprintf(stderr, "voxtral_runner: cannot load the model from '%s': %s\n", o.model_dir, err.msg);
    }
    vox_cli_device_list_free(dev_names, n_devs);
    if (lst) {
        return end_before_work(out_paths, &in, &o, VOX_EXIT_USAGE);
    }
    voxtral_context *ctx = ctxs[0]; /* the tokenizer the writers use (the same on every device) */
    char device_names[512] = "";
    vox_run_totals totals = {.n_inputs = (int)in.n, .main_start_ms = t_start};
    for (int i = 0; i < n_ctx; i++) {
        size_t len = strlen(device_names);
        snprintf(device_names + len, sizeof device_names - len, "%s%s", i ? "," : "",
                 voxtral_device_name(ctxs[i]));
        totals.load_ms += voxtral_load_ms(ctxs[i]); /* loaded one after another */
        voxtral_load_timings lt = voxtral_load_breakdown(ctxs[i]);
        vox_run_totals_add_load(&totals, &lt);
    }
    if (vox_interrupt_install() != 0) say("cannot install the SIGINT handler: %s", strerror(errno));
    vox_output_ignore_size_signal();

    vox_progress_init(&g_progress, !o.no_progress && isatty(STDERR_FILENO), stderr, in.n);
    vox_output_style style = {.format = o.format, .confidence = o.print_confidence,
                              .threshold = o.confidence_threshold,
                              .mark = isatty(fileno(g_results)) && !o.output_dir ? VOX_MARK_COLOUR
                                                                             : VOX_MARK_PLAIN};
    voxtral_transcribe_params tp = run_params(&o);
    tp.on_token = on_token;
    tp.user_data = &g_progress;
    run_state rs = {.o = &o, .in = &in, .out_paths = out_paths, .ctx = ctx, .style = style,
                    .logprobs = tp.logprobs > 0 || tp.n_force_ids > 0, .totals = &totals};
    rs.slot = calloc(in.n, sizeof *rs.slot);
    rs.held = calloc(in.n, sizeof *rs.held);
    rs.failed = calloc(in.n, sizeof *rs.failed);
    voxtral_queue_params qp = voxtral_queue_default_params();
    qp.max_batch = o.batch_size;
    qp.on_complete = on_complete;
    qp.user_data = &rs;
    voxtral_queue *queue = NULL;
    unsigned char *stdin_audio = NULL; /* the input "-", once read */
    size_t stdin_bytes = 0;
    vox_status st = !rs.slot || !rs.held ? vox_fail(&err, VOX_ERR_NOMEM, "out of memory")
                                         : voxtral_queue_create_multi(ctxs, n_ctx, &qp, &queue, &err);
    for (size_t i = 0; !st && i < in.n; i++) {
        /* --skip-existing: outputs are written whole or not at all, so one that is there is
         * complete (an interrupted run restarted does only what is missing) */
        if (o.skip_existing && output_exists(out_paths[i])) {
            rs.slot[i] = SLOT_DONE;
            totals.n_skipped++;
            vox_progress_skip(&g_progress);
            continue;
        }
        if (strcmp(in.paths[i], VOX_STDIN_INPUT) != 0) {
            st = voxtral_queue_submit_file(queue, in.paths[i], &tp, i, &err);
            continue;
        }
        /* audio piped in: read to its end, then decoded by the readers like a file; a read
         * that fails is this input's failure, as an unreadable file's would be, and a signal
         * meanwhile abandons it (the queue, cancelled, then ends the rest) */
        vox_error read_err = {0};
        vox_status rst = vox_read_all(STDIN_FILENO, VOX_STDIN_INPUT,
                                      o.segment ? VOX_STREAM_MAX_BYTES_SEGMENTED : VOX_STREAM_MAX_BYTES,
                                      interrupted, NULL, &stdin_audio, &stdin_bytes, &read_err);
        if (rst)
            on_complete(&(voxtral_completion){.tag = i, .path = VOX_STDIN_INPUT,
                                              .status = rst, .error = read_err.msg},
                        &rs);
        else
            st = voxtral_queue_submit_encoded(queue, stdin_audio, stdin_bytes, VOX_STDIN_INPUT,
                                              &tp, i, &err);
    }
    if (!st) {
        vox_interrupt_set_queue(queue);
        vox_progress_begin_file(&g_progress, in.paths[0]);
        st = voxtral_queue_run(queue, &err);
        vox_interrupt_set_queue(NULL);
    }
    /* the queue could not be made, or stopped with every device failed: a failed run */
    bool run_failed = st && st != VOX_ERR_INTERRUPTED;
    if (run_failed) say("%s", err.msg);
    if (queue) {
        voxtral_queue_stats qs;
        voxtral_queue_get_stats(queue, &qs);
        totals.batch = qs;
        totals.n_devices = voxtral_queue_device_count(queue);
        for (int i = 0; i < totals.n_devices && i < VOX_RUN_MAX_DEVICES; i++)
            voxtral_queue_get_device_stats(queue, i, &totals.device[i], &totals.device_name[i]);
    }
    if (vox_interrupted())
        say("interrupted: the files in progress were abandoned, no output written for them");
    flush_in_order(&rs);
    voxtral_queue_free(queue);
    free(stdin_audio);
    char **failed = rs.failed;
    vox_progress_clear(&g_progress);
    totals.interrupted = vox_interrupted();
    totals.wall_ms = now_ms() - t_start;
    /* the contexts go before the report, so that it can say what freeing them cost (the device
     * names it prints are the contexts': copied first) */
    char dev_name_copy[VOX_RUN_MAX_DEVICES][32];
    for (int i = 0; i < totals.n_devices && i < VOX_RUN_MAX_DEVICES; i++) {
        snprintf(dev_name_copy[i], sizeof dev_name_copy[i], "%s",
                 totals.device_name[i] ? totals.device_name[i] : "");
        totals.device_name[i] = dev_name_copy[i];
    }
    double t_free = now_ms();
    for (int i = 0; i < n_ctx; i++) voxtral_free(ctxs[i]);
    totals.teardown_ms = now_ms() - t_free;

    bool report_failed = false;
    if (o.latency) vox_write_latency_table(stderr, &totals, device_names);
    if (o.latency_json && write_latency_json(o.latency_json, latency_to_results, &totals,
                                             device_names, &err)) {
        say("--latency-json %s", err.msg);
        report_failed = true;
    }
    if (totals.batch.shrinks > 0) {
        char steps[96] = "";
        if (totals.batch.smallest_step_limit > 0)
            snprintf(steps, sizeof steps, " (decoder steps down to %d sequence%s for a while)",
                     totals.batch.smallest_step_limit, totals.batch.smallest_step_limit == 1 ? "" : "s");
        say("%ld decoder step%s or encoder group%s failed on a device that worked on (out of "
            "memory?) and ran again smaller%s; VOX_STEP_TRACE=FILE logs each failure",
            totals.batch.shrinks, totals.batch.shrinks == 1 ? "" : "s",
            totals.batch.shrinks == 1 ? "" : "s", steps);
    }
    if (in.n > 1 || totals.interrupted) print_summary(&totals, in.n > 1 ? failed : NULL, in.n);
    int sig = vox_interrupt_signal();
    free_paths(failed, in.n);
    free(rs.slot);
    free(rs.held);
    free_paths(out_paths, in.n);
    vox_inputs_free(&in);
    vox_cli_options_free(&o);
    if (sig) return 128 + sig;
    return totals.n_failed || report_failed || run_failed ? VOX_EXIT_SOME_FAILED : VOX_EXIT_OK;
}
