#include "cli/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MODEL_DIR "models/voxtral-mini-3b"

void vox_cli_print_help(const char *prog) {
    printf("usage: %s [options] FILE...\n"
           "\n"
           "Transcribes audio files (WAV, FLAC, Ogg/Vorbis, Opus, MP3; any rate, any channels)\n"
           "with an exported Voxtral model. The transcript of each file goes to stdout.\n"
           "\n"
           "Model:\n"
           "  -m, --model DIR          exported model directory\n"
           "                           (default: $VOXTRAL_MODEL, else " DEFAULT_MODEL_DIR ")\n"
           "  -d, --device DEV         cpu, cuda or cuda:N (default: cuda:0 when a GPU is usable,\n"
           "                           else cpu)\n"
           "\n"
           "Decoding:\n"
           "  -l, --language CODE      transcribe as this language: en es fr pt hi de nl it ...\n"
           "                           (default: the model detects it)\n"
           "  -n, --max-new-tokens N   most tokens to generate per file\n"
           "                           (default: 32 + 8 per second of audio)\n"
           "      --ignore-eos         never stop at </s>: decode exactly N tokens (benchmarks)\n"
           "      --logprobs K         report each token's log-probability and the K most likely\n"
           "                           alternatives, 0..20 (json output; default: 0, off)\n"
           "      --force-tokens IDS   score these ids instead of choosing: comma-separated, or\n"
           "                           @FILE (teacher forcing; implies per-token log-probabilities)\n"
           "\n"
           "Output:\n"
           "  -o, --output-format FMT  txt or json (default: txt). json: one object per file and\n"
           "                           line with file, text, tokens, audio_seconds, latency_ms\n"
           "      --latency            print the per-stage latency table on stderr\n"
           "      --latency-json FILE  write the latency numbers as JSON to FILE\n"
           "      --dump-tensors FILE  developer aid: write the audio embeddings, prompt, ids and\n"
           "                           float32 logits of each step to FILE (safetensors)\n"
           "\n"
           "  -h, --help               show this help and exit\n"
           "      --version            show the version and exit\n"
           "\n"
           "Exit status: 0 all files transcribed; 1 some files failed (each is reported on stderr,\n"
           "the others still run); 2 usage error or the model could not be loaded.\n",
           prog);
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

vox_status vox_cli_parse_ids(const char *spec, int32_t **ids, size_t *n, vox_error *err) {
    *ids = NULL;
    *n = 0;
    char *text = NULL;
    if (spec[0] == '@') {
        FILE *f = fopen(spec + 1, "rb");
        if (!f) return vox_fail(err, VOX_ERR_IO, "%s: cannot open: %s", spec + 1, strerror(errno));
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
        fclose(f);
        if (!text) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        text[len] = 0;
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
            st = vox_fail(err, VOX_ERR_INVALID_ARG, "--force-tokens: '%.20s' is not a token id", p);
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
       OPT_DUMP };

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
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    const char *env = getenv("VOXTRAL_MODEL");
    o->model_dir = env && *env ? env : DEFAULT_MODEL_DIR;
    o->format = VOX_OUT_TXT;
    *stop = false;
    opterr = 0;
    optind = 1;
    int c;
    long v;
    while ((c = getopt_long(argc, argv, ":m:d:l:n:o:h", longopts, NULL)) != -1) {
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
            else {
                vox_fail(err, VOX_ERR_INVALID_ARG, "--output-format: expected txt or json, got '%s'", optarg);
                goto usage;
            }
            break;
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
        default:
            vox_fail(err, VOX_ERR_INVALID_ARG, "unknown option '%s'", argv[optind - 1]);
            goto usage;
        }
    }
    o->n_files = (size_t)(argc - optind);
    if (o->n_files == 0) {
        vox_fail(err, VOX_ERR_INVALID_ARG, "no input files (try --help)");
        goto usage;
    }
    o->files = malloc(o->n_files * sizeof *o->files);
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
