/* Fuzzes voxtral_runner's option parsing (src/cli/options.c), --force-tokens lists included.
 *
 * Input: a length byte N, then N bytes that are the content of the @FILE that any --force-tokens
 * @... argument reads (the harness points it at its own file: nothing else is ever opened), then
 * the arguments after argv[0], separated by NUL bytes.
 * Checks: a usage error stops with a message and frees everything; a run that goes on has options
 * inside their documented ranges and combinations (srt/vtt segment, --print-confidence only with
 * txt, forced ids only on whole files); the list syntax gives the same ids inline and from @FILE,
 * and a NUL byte in the file is an error; two parses of the same arguments agree (the second must
 * not see what the first left behind). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "fuzz.h"

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    /* --help and --version print to standard output */
    if (!freopen("/dev/null", "w", stdout)) abort();
    return 0;
}

static void check_ids_file(const char *content, size_t len, const char *at_path) {
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    vox_error ea = {0}, eb = {0};
    vox_status sa = vox_cli_parse_ids(at_path, &a, &na, &ea);
    vox_status sb = vox_cli_parse_ids(content, &b, &nb, &eb);
    if (memchr(content, 0, len)) {
        FUZZ_CHECK(sa != VOX_OK, "@FILE with a NUL byte was read as %zu ids", na);
    } else if (content[0] != '@') { /* inline, "@..." names a file */
        FUZZ_CHECK(sa == sb && na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0),
                   "inline and @FILE differ: %s / %s", sb ? eb.msg : "ok", sa ? ea.msg : "ok");
    }
    for (size_t i = 0; i < nb; i++) FUZZ_CHECK(b[i] >= 0, "id %d", b[i]);
    FUZZ_CHECK(sb != VOX_OK || nb > 0, "an empty list was accepted");
    FUZZ_CHECK(sb == VOX_OK || (b == NULL && nb == 0 && eb.msg[0]), "a failure left ids");
    free(a);
    free(b);
}

static void check_options(const vox_cli_options *o, int rc, bool stop, const vox_error *err) {
    if (rc != VOX_EXIT_OK) {
        FUZZ_CHECK(rc == VOX_EXIT_USAGE && stop && err->msg[0], "rc %d without a message", rc);
        FUZZ_CHECK(o->force_ids == NULL && o->files == NULL, "a usage error kept memory");
        return;
    }
    if (stop) return; /* --help, --version */
    FUZZ_CHECK(o->n_files > 0 || o->files_from, "no inputs");
    FUZZ_CHECK(o->files != NULL, "no file array");
    FUZZ_CHECK(o->format <= VOX_OUT_VTT, "format %d", (int)o->format);
    FUZZ_CHECK((o->format != VOX_OUT_SRT && o->format != VOX_OUT_VTT) || o->segment,
               "subtitles without segments");
    FUZZ_CHECK(!o->print_confidence || o->format == VOX_OUT_TXT, "confidence marks in %s",
               vox_cli_format_ext(o->format));
    FUZZ_CHECK(!(o->force_ids && o->segment), "forced ids on segments");
    FUZZ_CHECK(!o->force_ids || o->n_force_ids > 0, "an empty forced list");
    FUZZ_CHECK(o->max_new_tokens >= 0 && o->max_new_tokens <= 32768, "max-new-tokens %d",
               o->max_new_tokens);
    FUZZ_CHECK(o->logprobs >= 0 && o->logprobs <= 20, "logprobs %d", o->logprobs);
    FUZZ_CHECK(o->logprobs == 0 || o->format == VOX_OUT_JSON, "logprobs %d with %s output",
               o->logprobs, vox_cli_format_ext(o->format));
    FUZZ_CHECK(o->silence_threshold_db >= -100 && o->silence_threshold_db <= -5, "threshold %g",
               o->silence_threshold_db);
    FUZZ_CHECK(o->min_silence_s >= 0.05 && o->min_silence_s <= 10, "min-silence %g",
               o->min_silence_s);
    FUZZ_CHECK(o->confidence_threshold >= 0 && o->confidence_threshold <= 1, "confidence %g",
               o->confidence_threshold);
    if (o->language) {
        size_t len = strlen(o->language);
        FUZZ_CHECK(len >= 1 && len <= 16 && strspn(o->language, "abcdefghijklmnopqrstuvwxyz"
                                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ-_") == len,
                   "language '%s'", o->language);
    }
    FUZZ_CHECK(!o->output_dir || o->output_dir[0], "an empty output directory");
    for (size_t i = 0; i < o->n_files; i++) FUZZ_CHECK(o->files[i], "file %zu is NULL", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_reader r = {data, size};
    size_t content_len = fuzz_u8(&r);
    if (content_len > r.n) content_len = r.n;
    char *content = malloc(content_len + 1);
    if (content_len) memcpy(content, r.p, content_len);
    content[content_len] = 0;
    r.p += content_len;
    r.n -= content_len;
    char at_path[1100];
    snprintf(at_path, sizeof at_path, "@%s", fuzz_write_file("ids.txt", content, content_len));
    check_ids_file(content, content_len, at_path);

    char *args[MAX_ARGS + 2];
    int argc = 0;
    args[argc++] = strdup("voxtral_runner");
    while (r.n > 0 && argc <= MAX_ARGS) {
        char *a = fuzz_piece(&r, 0, NULL);
        /* --force-tokens @X and --force-tokens=@X read the harness's file */
        int at = a[0] == '@' ? 1 : strncmp(a, "--force-tokens=@", 16) == 0 ? 16 : 0;
        if (at) {
            size_t len = (size_t)at + strlen(at_path);
            char *b = malloc(len + 1);
            memcpy(b, a, (size_t)at - 1);
            memcpy(b + at - 1, at_path, strlen(at_path) + 1);
            free(a);
            a = b;
        }
        args[argc++] = a;
    }
    args[argc] = NULL;

    /* Twice, each on its own copy of argv freed after it: the two parses must agree, and the
     * second must not depend on anything the first left behind. */
    char summary[2][4096];
    for (int pass = 0; pass < 2; pass++) {
        char *argv[MAX_ARGS + 2], *copies[MAX_ARGS + 2]; /* getopt permutes argv */
        for (int i = 0; i < argc; i++) argv[i] = copies[i] = strdup(args[i]);
        argv[argc] = NULL;
        vox_cli_options o;
        bool stop = false;
        vox_error err = {0};
        int rc = vox_cli_parse(argc, argv, &o, &stop, &err);
        check_options(&o, rc, stop, &err);
        size_t n = (size_t)snprintf(summary[pass], sizeof summary[pass], "%d %d %s|", rc, stop,
                                    err.msg);
        if (rc == VOX_EXIT_OK && !stop) {
            n += (size_t)snprintf(summary[pass] + n, sizeof summary[pass] - n, "%d %zu %zu %s",
                                  (int)o.format, o.n_files, o.n_force_ids,
                                  o.language ? o.language : "-");
            for (size_t i = 0; i < o.n_force_ids && n < sizeof summary[pass]; i++)
                n += (size_t)snprintf(summary[pass] + n, sizeof summary[pass] - n, " %d",
                                      o.force_ids[i]);
        }
        if (rc == VOX_EXIT_OK) vox_cli_options_free(&o);
        for (int i = 0; i < argc; i++) free(copies[i]);
    }
    FUZZ_CHECK(strcmp(summary[0], summary[1]) == 0, "two parses differ:\n%s\n%s", summary[0],
               summary[1]);
    for (int i = 0; i < argc; i++) free(args[i]);
    free(content);
    return 0;
}
