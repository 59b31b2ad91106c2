/* voxtral_runner's option parsing, input lists, output names, atomic writes and the progress
 * line, without a model. */
#define _DEFAULT_SOURCE /* mkdtemp, fmemopen */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/inputs.h"
#include "cli/options.h"
#include "cli/outfile.h"
#include "cli/progress.h"
#include "common/file_out.h"
#include "common/read_all.h"
#include "harness.h"

/* Parses a NULL-terminated list of arguments; returns the exit status vox_cli_parse gives. */
static int parse(vox_cli_options *o, bool *stop, vox_error *err, ...) {
    static char *argv[32];
    va_list ap;
    int argc = 0;
    argv[argc++] = "voxtral_runner";
    va_start(ap, err);
    char *a;
    while ((a = va_arg(ap, char *)) && argc < 31) argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    return vox_cli_parse(argc, argv, o, stop, err);
}

static void test_parse(void) {
    vox_cli_options o;
    vox_error err = {0};
    bool stop;
    unsetenv("VOXTRAL_MODEL");
    CHECK(parse(&o, &stop, &err, "a.wav", NULL) == 0 && !stop);
    CHECK(strcmp(o.model_dir, VOX_CLI_DEFAULT_MODEL_DIR) == 0 && o.format == VOX_OUT_TXT);
    CHECK(!o.segment && !o.output_dir && !o.files_from && !o.print_confidence && !o.no_progress);
    CHECK(o.silence_threshold_db == -35.0 && o.min_silence_s == 0.5);
    CHECK(o.confidence_threshold == 0.5 && o.n_files == 1 && strcmp(o.files[0], "a.wav") == 0);
    vox_cli_options_free(&o);

    /* srt and vtt segment; the other options land where they should */
    CHECK(parse(&o, &stop, &err, "-o", "srt", "-O", "out", "--files-from", "-", "--no-progress",
                "--silence-threshold", "-42.5", "--min-silence", "0.8", NULL) == 0 && !stop);
    CHECK(o.format == VOX_OUT_SRT && o.segment && strcmp(o.output_dir, "out") == 0);
    CHECK(strcmp(o.files_from, "-") == 0 && o.n_files == 0 && o.no_progress);
    CHECK(o.silence_threshold_db == -42.5 && o.min_silence_s == 0.8);
    vox_cli_options_free(&o);
    CHECK(parse(&o, &stop, &err, "-o", "vtt", "x", NULL) == 0 && o.segment);
    vox_cli_options_free(&o);
    CHECK(parse(&o, &stop, &err, "-s", "--print-confidence", "--confidence-threshold", "0.25",
                "x", NULL) == 0);
    CHECK(o.segment && o.print_confidence && o.confidence_threshold == 0.25);
    vox_cli_options_free(&o);

    /* usage errors: exit 2 and a message */
    static const struct {
        const char *args[6], *msg;
    } bad[] = {
        {{NULL}, "no input files"},
        {{"-o", "mp4", "x"}, "expected txt, json, srt or vtt"},
        {{"--print-confidence", "-o", "json", "x"}, "--print-confidence"},
        {{"--confidence-threshold", "1.5", "x"}, "0..1"},
        {{"--silence-threshold", "10", "x"}, "--silence-threshold"},
        {{"--min-silence", "abc", "x"}, "--min-silence"},
        {{"-s", "--force-tokens", "1,2", "x"}, "cannot be combined"},
        {{"-o", "srt", "--dump-tensors", "d", "x"}, "cannot be combined"},
        {{"-O", "", "x"}, "empty directory"},
        {{"--bogus", "x"}, "unknown option"},
        {{"x", "--files-from"}, "needs a value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *const *a = bad[i].args;
        int rc = parse(&o, &stop, &err, a[0], a[1], a[2], a[3], a[4], a[5], NULL);
        CHECK_MSG(rc == VOX_EXIT_USAGE && stop && strstr(err.msg, bad[i].msg), "case %zu: rc %d: %s",
                  i, rc, err.msg);
    }
    CHECK(strcmp(vox_cli_format_ext(VOX_OUT_JSON), "json") == 0);
    CHECK(strcmp(vox_cli_format_ext(VOX_OUT_VTT), "vtt") == 0);
}

static void test_inputs(void) {
    const char *files[] = {"one.wav", "two words.flac"};
    char list[] = "three.wav\n\n  spaced .wav \r\n#hash.wav\nlast.ogg";
    FILE *f = fmemopen(list, strlen(list), "r");
    vox_inputs in;
    vox_error err = {0};
    CHECK(vox_inputs_build(files, 2, NULL, &in, &err) == VOX_OK && in.n == 2);
    CHECK(vox_inputs_read(&in, f, "list", &err) == VOX_OK);
    fclose(f);
    const char *want[] = {"one.wav", "two words.flac", "three.wav", "  spaced .wav ", "#hash.wav",
                          "last.ogg"};
    CHECK_MSG(in.n == 6, "%zu inputs", in.n);
    for (size_t i = 0; i < in.n && i < 6; i++) CHECK_MSG(strcmp(in.paths[i], want[i]) == 0, "'%s'", in.paths[i]);
    vox_inputs_free(&in);
    CHECK(vox_inputs_build(files, 0, "/nonexistent/list.txt", &in, &err) == VOX_ERR_IO);
    CHECK(strstr(err.msg, "/nonexistent/list.txt") != NULL);

    /* "-" (audio on standard input): once; twice, or beside --files-from -, refused whole */
    const char *one_dash[] = {"a.wav", "-", "./-"}, *two_dashes[] = {"-", "b.wav", "-"};
    CHECK(vox_inputs_build(one_dash, 3, NULL, &in, &err) == VOX_OK && in.n == 3);
    vox_inputs_free(&in);
    CHECK(vox_inputs_build(two_dashes, 3, NULL, &in, &err) == VOX_ERR_INVALID_ARG && in.n == 0 &&
          !in.paths && strstr(err.msg, "given more than once"));
    CHECK(vox_inputs_build(one_dash, 3, "-", &in, &err) == VOX_ERR_INVALID_ARG && in.n == 0 &&
          strstr(err.msg, "--files-from - and the input '-'"));
    char dash_list[] = "x.wav\n-\r\n";
    char dir[] = "/tmp/vox_test_inputs_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char list_path[64];
    snprintf(list_path, sizeof list_path, "%s/list", dir);
    FILE *lf = fopen(list_path, "w");
    CHECK(lf && fputs(dash_list, lf) >= 0 && fclose(lf) == 0);
    CHECK(vox_inputs_build(one_dash + 2, 1, list_path, &in, &err) == VOX_OK && in.n == 3);
    vox_inputs_free(&in);
    CHECK(vox_inputs_build(one_dash, 2, list_path, &in, &err) == VOX_ERR_INVALID_ARG && in.n == 0);
    remove(list_path);
    rmdir(dir);
}

static bool stop_now(void *unused) {
    (void)unused;
    return true;
}

/* vox_read_all: a whole input across the buffer's growth, the byte limit (exactly at it
 * accepted, one byte past it refused), an interruption while a pipe sends nothing. */
static void test_read_all(void) {
    char dir[] = "/tmp/vox_test_read_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/data", dir);
    const size_t n = (3u << 20) + 12345; /* past two doublings of the 1 MiB start */
    unsigned char *want = malloc(n);
    for (size_t i = 0; i < n; i++) want[i] = (unsigned char)(i * 131u + (i >> 13));
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(want, 1, n, f) == n && fclose(f) == 0);
    const size_t limits[] = {n + 1, n, (size_t)-1};
    for (size_t li = 0; li < 3; li++) {
        int fd = open(path, O_RDONLY);
        unsigned char *got = NULL;
        size_t size = 0;
        vox_error err = {0};
        vox_status st = vox_read_all(fd, "data", limits[li], NULL, NULL, &got, &size, &err);
        CHECK_MSG(st == VOX_OK && size == n && got && memcmp(got, want, n) == 0,
                  "limit %zu: status %d, %zu bytes: %s", limits[li], (int)st, size, err.msg);
        free(got);
        close(fd);
    }
    int fd = open(path, O_RDONLY);
    unsigned char *got = NULL;
    size_t size = 0;
    vox_error err = {0};
    CHECK(vox_read_all(fd, "data", n - 1, NULL, NULL, &got, &size, &err) == VOX_ERR_TOO_LONG &&
          !got && strstr(err.msg, "data: more than"));
    close(fd);
    int p[2];
    CHECK(pipe(p) == 0); /* the writer stays open and sends nothing */
    CHECK(vox_read_all(p[0], "-", 1 << 20, stop_now, NULL, &got, &size, &err) == VOX_ERR_INTERRUPTED &&
          strstr(err.msg, "-: interrupted"));
    close(p[0]), close(p[1]);
    free(want);
    remove(path);
    rmdir(dir);
}

static void test_output_names(void) {
    static const struct {
        const char *dir, *in, *ext, *want;
    } cases[] = {
        {"out", "a/b/talk.wav", "srt", "out/talk.srt"},
        {"out/", "talk.final.flac", "txt", "out/talk.final.txt"},
        {"/", "x/noext", "json", "/noext.json"},
        {"o", ".hidden", "vtt", "o/.hidden.vtt"},
        {"o", "dir/", "txt", "o/dir.txt"},
        {"o", "-", "txt", "o/stdin.txt"}, /* audio on standard input */
        {"o", "./-", "txt", "o/-.txt"},    /* a file named "-" */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *p = vox_output_path(cases[i].dir, cases[i].in, cases[i].ext);
        CHECK_MSG(p && strcmp(p, cases[i].want) == 0, "%s -> %s", cases[i].in, p);
        free(p);
    }
    char *paths[] = {"o/a.srt", "o/b.srt", "o/c.srt", "o/b.srt", "o/a.srt"};
    size_t a = 9, b = 9;
    CHECK(vox_find_duplicate(paths, 5, &a, &b) == 1 && a == 1 && b == 3);
    CHECK(vox_find_duplicate(paths, 3, &a, &b) == 0);
    CHECK(vox_find_duplicate(paths, 0, &a, &b) == 0);
    /* a last component of NAME_MAX bytes fits, one more does not; the directory part is not
     * counted */
    char fits[NAME_MAX + 8], over[NAME_MAX + 8];
    snprintf(fits, sizeof fits, "o/%0*d", NAME_MAX, 0);
    snprintf(over, sizeof over, "%0*d", NAME_MAX + 1, 0);
    char *names[] = {"o/a.srt", fits, over, over};
    CHECK(vox_find_overlong_name(names, 2, &a) == 0);
    a = 9;
    CHECK(vox_find_overlong_name(names, 4, &a) == NAME_MAX + 1 && a == 2);
}

/* Entries of a directory other than . and .. (hidden ones too: a left temporary file). */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d) closedir(d);
    return n;
}

static void test_atomic_write(void) {
    char dir[] = "/tmp/vox_test_cli_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[256], path[300];
    snprintf(sub, sizeof sub, "%s/new/deeper", dir);
    vox_error err = {0};
    CHECK_MSG(vox_output_dir_prepare(sub, &err) == VOX_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/out.txt", sub);
    CHECK(vox_file_write_whole(path, "hello\n", 6, &err) == VOX_OK);
    CHECK(vox_file_write_whole(path, "again\n", 6, &err) == VOX_OK);
    char buf[16] = "";
    FILE *f = fopen(path, "r");
    CHECK(f && fread(buf, 1, sizeof buf, f) == 6 && memcmp(buf, "again\n", 6) == 0);
    if (f) fclose(f);
    /* nothing else in the directory: the temporary file is gone */
    int entries = count_entries(sub);
    CHECK_MSG(entries == 1, "%d entries", entries);
    /* a file where the directory should be */
    CHECK(vox_output_dir_prepare(path, &err) == VOX_ERR_IO && strstr(err.msg, "not a directory"));
    snprintf(buf, sizeof buf, "x");
    char bad[320];
    snprintf(bad, sizeof bad, "%s/missing/out.txt", dir);
    CHECK(vox_file_write_whole(bad, "x", 1, &err) == VOX_ERR_IO && strstr(err.msg, bad));
    /* the check made before a run (--latency-json): a path that can be written passes and leaves
     * nothing behind; a missing directory, a file as the directory, a directory as the file fail,
     * naming the option and the path */
    char fine[320];
    snprintf(fine, sizeof fine, "%s/l.json", sub);
    CHECK_MSG(vox_file_out_check("--latency-json", fine, &err) == VOX_OK, "%s", err.msg);
    CHECK(access(fine, F_OK) != 0);
    entries = count_entries(sub);
    CHECK_MSG(entries == 1, "%d entries after the check", entries);
    CHECK(vox_file_out_check("--latency-json", bad, &err) == VOX_ERR_IO &&
          strstr(err.msg, "--latency-json ") && strstr(err.msg, bad) && strstr(err.msg, "No such file"));
    snprintf(fine, sizeof fine, "%s/x.json", path); /* out.txt is a file */
    CHECK(vox_file_out_check("--latency-json", fine, &err) == VOX_ERR_IO &&
          strstr(err.msg, "is not a directory"));
    CHECK(vox_file_out_check("--latency-json", sub, &err) == VOX_ERR_IO &&
          strstr(err.msg, "is a directory"));
    unlink(path);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/new", dir);
    rmdir(sub);
    rmdir(dir);
}

static void test_progress(void) {
    vox_progress p;
    vox_progress_init(&p, false, stderr, 10);
    char line[256];
    vox_format_duration(59.6, line, sizeof line);
    CHECK(strcmp(line, "1:00") == 0);
    vox_format_duration(3725, line, sizeof line);
    CHECK(strcmp(line, "1:02:05") == 0);
    /* 3 files of 60 s done in 30 s, the 4th (60 s) half done: 210 s of audio in 35 s = 6x;
     * left: 30 s of the 4th + 6 x 60 s estimated = 390 s of audio = 65 s */
    p.done = 3;
    p.failed = 1;
    p.audio_done_s = 180;
    p.seen_s = 240;
    p.n_seen = 4;
    p.cur_total_s = 60;
    p.cur_done_s = 30;
    snprintf(p.name, sizeof p.name, "talk.wav");
    vox_progress_format(&p, 35000, line, sizeof line);
    CHECK_MSG(strcmp(line, "[3/10 files] 3:30 of audio, 6.0x real time, 1:05 left, "
                           "1 failed | talk.wav") == 0, "%s", line);
    vox_progress_init(&p, false, stderr, 2);
    vox_progress_format(&p, 0, line, sizeof line);
    CHECK_MSG(strstr(line, "[0/2 files]") && strstr(line, "? left"), "%s", line);
}

int main(void) {
    test_parse();
    test_inputs();
    test_read_all();
    test_output_names();
    test_atomic_write();
    test_progress();
    return test_finish("test_cli_options");
}
