/* voxtral_runner's option parsing (the help text is in help.c). */
#include "cli/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segment/segment.h"

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return 0;
    *out = v;
    return 1;
}

const char *vox_cli_format_ext(vox_output_format f) {
    switch (f) {
    case VOX_OUT_JSON: return "json";
    case VOX_OUT_SRT: return "srt";
    case VOX_OUT_VTT: return "vtt";
    default: return "txt";
    }
}

vox_status vox_cli_parse_ids(const char *spec, int32_t **ids, size_t *n, vox_error *err) {
    *ids = NULL;
    *n = 0;
    char *text = NULL;
    if (spec[0] == '@') {
        FILE *f = fopen(spec + 1, "rb");
        if (!f)
            return vox_fail(err, VOX_ERR_IO, "--force-tokens %s: cannot open: %s", spec,
                            strerror(errno));
        size_t cap = 4096, len = 0;
        text = malloc(cap);
        size_t got;
        while (text && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
            len += got;
            if (len + 1 == cap) {
                char *p = realloc(text, cap *= 2);
                if (!p) free(text);
                text = p;
            }
        }
        int read_errno = ferror(f) ? errno : 0; /* a directory: EISDIR, not an empty list */
        fclose(f);
        if (!text) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        if (read_errno) {
            free(text);
            return vox_fail(err, VOX_ERR_IO, "--force-tokens %s: cannot read: %s", spec,
                            strerror(read_errno));
        }
        text[len] = 0;
        /* the list would end there unseen */
        const char *nul = memchr(text, 0, len);
        if (nul) {
            size_t at = (size_t)(nul - text);
            free(text);
            return vox_fail(err, VOX_ERR_INVALID_ARG, "--force-tokens %s: byte %zu is a NUL "
                            "byte: not a list of token ids", spec + 1, at);
        }
    } else {
        text = strdup(spec);
        if (!text) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    size_t cap = 64;
    int32_t *out = malloc(cap * sizeof *out);
    const char *p = text;
    vox_status st = VOX_OK;
    while (out && *p) {
        while (*p && (isspace((unsigned char)*p) || *p == ',')) p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX) {
            size_t word = strcspn(p, " \t\r\n\v\f,"); /* the word, not what follows */
            const int shown = word < 20 ? (int)word : 20;
            if (spec[0] == '@') { /* name the file and the line */
                size_t line = 1;
                for (const char *c = text; c < p; c++) line += *c == '\n';
                st = vox_fail(err, VOX_ERR_INVALID_ARG, "--force-tokens %s: line %zu: '%.*s' is not a "
                              "token id", spec, line, shown, p);
            } else {
                st = vox_fail(err, VOX_ERR_INVALID_ARG, "--force-tokens: '%.*s' is not a token id",
                              shown, p);
            }
            break;
        }
        if (*n == cap) {
            int32_t *q = realloc(out, (cap *= 2) * sizeof *out);
            if (!q) free(out);
            out = q;
            if (!out) break;
        }
        out[(*n)++] = (int32_t)v;
        p = end;
    }
    free(text);
    if (!out) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    if (!st && *n == 0) st = vox_fail(err, VOX_ERR_INVALID_ARG, "--force-tokens: no ids given");
    if (st) {
        free(out);
        *n = 0;
        return st;
    }
    *ids = out;
    return VOX_OK;
}

enum { OPT_IGNORE_EOS = 1000, OPT_LOGPROBS, OPT_FORCE, OPT_LATENCY, OPT_LATENCY_JSON, OPT_VERSION,
       OPT_DUMP, OPT_SILENCE, OPT_MIN_SILENCE, OPT_CONFIDENCE, OPT_CONF_THRESHOLD, OPT_NO_PROGRESS,
       OPT_BATCH_SIZE, OPT_SHARD, OPT_SKIP_EXISTING };

/* Combinations that cannot work, found after all options are read. */
static int check_combinations(vox_cli_options *o, vox_error *err) {
    if (o->format == VOX_OUT_SRT || o->format == VOX_OUT_VTT) o->segment = true;
    if (o->n_files == 0 && !o->files_from) {
        vox_fail(err, VOX_ERR_INVALID_ARG, "no input files (try --help)");
        return 0;
    }
    if (o->skip_existing && !o->output_dir) {
        vox_fail(err, VOX_ERR_INVALID_ARG, "--skip-existing needs --output-dir: it skips the inputs "
                 "whose output file is already there");
        return 0;
    }
    if (o->print_confidence && o->format != VOX_OUT_TXT) {
        vox_fail(err, VOX_ERR_INVALID_ARG, "--print-confidence marks txt output; with -o %s "
                 "use --logprobs K (json) instead", vox_cli_format_ext(o->format));
        return 0;
    }
    if (o->logprobs > 0 && o->format != VOX_OUT_JSON) {
        vox_fail(err, VOX_ERR_INVALID_ARG, "--logprobs %d: log-probabilities are written in json "
                 "output (-o json); with -o %s they would be dropped%s", o->logprobs,
                 vox_cli_format_ext(o->format),
                 o->format == VOX_OUT_TXT ? " (--print-confidence marks txt)" : "");
        return 0;
    }
    if (o->segment && (o->force_ids || o->dump_tensors)) {
        vox_fail(err, VOX_ERR_INVALID_ARG, "%s works on whole files: it cannot be combined with "
                 "--segment or -o srt/vtt", o->force_ids ? "--force-tokens" : "--dump-tensors");
        return 0;
    }
    return 1;
}

int vox_cli_parse(int argc, char **argv, vox_cli_options *o, bool *stop, vox_error *err) {
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},
        {"device", required_argument, 0, 'd'},
        {"language", required_argument, 0, 'l'},
        {"max-new-tokens", required_argument, 0, 'n'},
        {"ignore-eos", no_argument, 0, OPT_IGNORE_EOS},
        {"logprobs", required_argument, 0, OPT_LOGPROBS},
        {"force-tokens", required_argument, 0, OPT_FORCE},
        {"output-format", required_argument, 0, 'o'},
        {"latency", no_argument, 0, OPT_LATENCY},
        {"latency-json", required_argument, 0, OPT_LATENCY_JSON},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, OPT_VERSION},
        {"dump-tensors", required_argument, 0, OPT_DUMP},
        {"files-from", required_argument, 0, 'f'},
        {"output-dir", required_argument, 0, 'O'},
        {"segment", no_argument, 0, 's'},
        {"silence-threshold", required_argument, 0, OPT_SILENCE},
        {"min-silence", required_argument, 0, OPT_MIN_SILENCE},
        {"print-confidence", no_argument, 0, OPT_CONFIDENCE},
        {"confidence-threshold", required_argument, 0, OPT_CONF_THRESHOLD},
        {"no-progress", no_argument, 0, OPT_NO_PROGRESS},
        {"batch-size", required_argument, 0, OPT_BATCH_SIZE},
        {"shard", required_argument, 0, OPT_SHARD},
        {"skip-existing", no_argument, 0, OPT_SKIP_EXISTING},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    const char *env = getenv("VOXTRAL_MODEL");
    o->model_dir = env && *env ? env : VOX_CLI_DEFAULT_MODEL_DIR;
    o->format = VOX_OUT_TXT;
    vox_segment_params sp = vox_segment_default_params();
    o->silence_threshold_db = sp.threshold_db;
    o->min_silence_s = sp.min_silence_s;
    o->confidence_threshold = VOX_CLI_DEFAULT_CONFIDENCE;
    *stop = false;
    opterr = 0;
    /* 0, not 1: glibc then also drops its place inside a cluster of short options ("-sh"), which
     * an earlier parse that stopped there (--help, a bad value) leaves pointing into its argv */
    optind = 0;
    int c;
    long v;
    double dv;
    while ((c = getopt_long(argc, argv, ":m:d:l:n:o:f:O:sh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o->model_dir = optarg; break;
        case 'd': o->device = optarg; break;
        case 'l':
            for (const char *p = optarg; *p; p++)
                if (!isalpha((unsigned char)*p) && *p != '-' && *p != '_')
                    goto bad_language;
            if (!*optarg || strlen(optarg) > 16) goto bad_language;
            o->language = optarg;
            break;
        case 'n':
            if (!parse_int(optarg, 1, 32768, &v)) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--max-new-tokens: expected 1..32768, got '%s'", optarg);
                goto usage;
            }
            o->max_new_tokens = (int)v;
            break;
        case OPT_IGNORE_EOS: o->ignore_eos = true; break;
        case OPT_BATCH_SIZE:
            if (!parse_int(optarg, 1, 4096, &v)) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--batch-size: expected 1..4096, got '%s'", optarg);
                goto usage;
            }
            o->batch_size = (int)v;
            break;
        case OPT_SHARD: {
            /* K/N with 0 <= K < N: digits only, no sign, no spaces */
            const char *slash = strchr(optarg, '/');
            char kbuf[16];
            long n = 0;
            size_t klen = slash ? (size_t)(slash - optarg) : 0;
            bool ok = slash && klen > 0 && klen < sizeof kbuf;
            if (ok) {
                memcpy(kbuf, optarg, klen);
                kbuf[klen] = 0;
                ok = strspn(kbuf, "0123456789") == klen && strspn(slash + 1, "0123456789") == strlen(slash + 1) &&
                     parse_int(kbuf, 0, 1000000, &v) && parse_int(slash + 1, 1, 1000000, &n) && v < n;
            }
            if (!ok) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--shard: expected K/N with 0 <= K < N (for "
                         "example 3/8), got '%s'", optarg);
                goto usage;
            }
            o->shard_k = (int)v;
            o->shard_n = (int)n;
            break;
        }
        case OPT_SKIP_EXISTING: o->skip_existing = true; break;
        case OPT_LOGPROBS:
            if (!parse_int(optarg, 0, 20, &v)) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--logprobs: expected 0..20, got '%s'", optarg);
                goto usage;
            }
            o->logprobs = (int)v;
            break;
        case OPT_FORCE:
            free(o->force_ids);
            if (vox_cli_parse_ids(optarg, &o->force_ids, &o->n_force_ids, err)) goto usage;
            break;
        case 'o':
            if (strcmp(optarg, "txt") == 0) o->format = VOX_OUT_TXT;
            else if (strcmp(optarg, "json") == 0) o->format = VOX_OUT_JSON;
            else if (strcmp(optarg, "srt") == 0) o->format = VOX_OUT_SRT;
            else if (strcmp(optarg, "vtt") == 0) o->format = VOX_OUT_VTT;
            else {
                vox_fail(err, VOX_ERR_INVALID_ARG,
                         "--output-format: expected txt, json, srt or vtt, got '%s'", optarg);
                goto usage;
            }
            break;
        case 'f':
            if (o->files_from) { /* one list: a second would silently replace the first */
                vox_fail(err, VOX_ERR_INVALID_ARG, "--files-from given twice ('%s', '%s'): give "
                         "one list (cat them into one)", o->files_from, optarg);
                goto usage;
            }
            o->files_from = optarg;
            break;
        case 'O':
            if (!*optarg) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--output-dir: empty directory name");
                goto usage;
            }
            o->output_dir = optarg;
            break;
        case 's': o->segment = true; break;
        case OPT_SILENCE:
            if (!parse_double(optarg, -100, -5, &dv)) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--silence-threshold: expected -100..-5 (dB), "
                         "got '%s'", optarg);
                goto usage;
            }
            o->silence_threshold_db = dv;
            break;
        case OPT_MIN_SILENCE:
            if (!parse_double(optarg, 0.05, 10, &dv)) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--min-silence: expected 0.05..10 (seconds), "
                         "got '%s'", optarg);
                goto usage;
            }
            o->min_silence_s = dv;
            break;
        case OPT_CONFIDENCE: o->print_confidence = true; break;
        case OPT_CONF_THRESHOLD:
            if (!parse_double(optarg, 0, 1, &dv)) {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--confidence-threshold: expected a probability "
                         "0..1, got '%s'", optarg);
                goto usage;
            }
            o->confidence_threshold = dv;
            break;
        case OPT_NO_PROGRESS: o->no_progress = true; break;
        case OPT_LATENCY: o->latency = true; break;
        case OPT_LATENCY_JSON: o->latency_json = optarg; break;
        case OPT_DUMP: o->dump_tensors = optarg; break;
        case 'h':
            vox_cli_print_help(argv[0]);
            *stop = true;
            return VOX_EXIT_OK;
        case OPT_VERSION:
            printf("voxtral_runner %s\n", voxtral_version());
            *stop = true;
            return VOX_EXIT_OK;
        case ':':
            vox_fail(err, VOX_ERR_INVALID_ARG, "option '%s' needs a value", argv[optind - 1]);
            goto usage;
        default: /* optopt is the letter of a short option; inside a cluster (-xs), optind has
                    not moved past the argument yet */
            if (optopt) vox_fail(err, VOX_ERR_INVALID_ARG, "unknown option '-%c'", optopt);
            else vox_fail(err, VOX_ERR_INVALID_ARG, "unknown option '%s'", argv[optind - 1]);
            goto usage;
        }
    }
    o->n_files = (size_t)(argc - optind);
    if (!check_combinations(o, err)) goto usage;
    o->files = malloc((o->n_files ? o->n_files : 1) * sizeof *o->files);
    if (!o->files) {
        vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        goto usage;
    }
    for (size_t i = 0; i < o->n_files; i++) o->files[i] = argv[optind + (int)i];
    return VOX_EXIT_OK;
bad_language:
    vox_fail(err, VOX_ERR_INVALID_ARG, "--language: '%s' is not a language code (en, fr, ...)", optarg);
usage:
    *stop = true;
    vox_cli_options_free(o);
    return VOX_EXIT_USAGE;
}

void vox_cli_options_free(vox_cli_options *o) {
    free(o->force_ids);
    free(o->files);
    o->force_ids = NULL;
    o->files = NULL;
}
