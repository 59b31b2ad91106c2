/* voxtral_tokenize: encodes text to tekken token ids, or decodes ids to text.
 *
 *   voxtral_tokenize --tokenizer tekken.json TEXT        ids, space-separated, on one line
 *   voxtral_tokenize --tokenizer tekken.json --input F   the same for the contents of F (- = stdin)
 *   voxtral_tokenize --tokenizer tekken.json --decode ID...
 *
 * Exit status: 0 on success, 1 when the tokenizer file or the input is bad, 2 on a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tekken.h"

#ifndef VOX_VERSION
#define VOX_VERSION "unknown"
#endif

static void usage(FILE *f) {
    fprintf(f,
            "usage: voxtral_tokenize --tokenizer TEKKEN_JSON TEXT\n"
            "       voxtral_tokenize --tokenizer TEKKEN_JSON --input FILE   (- reads stdin)\n"
            "       voxtral_tokenize --tokenizer TEKKEN_JSON --decode ID...\n"
            "\n"
            "Encodes TEXT (UTF-8) with the tekken tokenizer and prints the token ids on one line,\n"
            "or decodes ids (special ids are skipped) and prints the text.\n"
            "\n"
            "  --tokenizer PATH  the model's tekken.json\n"
            "  --input FILE      encode the contents of FILE instead of TEXT\n"
            "  --decode          the remaining arguments are ids to decode\n"
            "  --help            show this help\n"
            "  --version         show the version\n");
}

static int read_all(FILE *f, char **out, size_t *len) {
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *b = realloc(buf, cap *= 2);
        if (!b) free(buf);
        buf = b;
    }
    if (!buf || ferror(f)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = n;
    return 0;
}

static int parse_id(const char *s, int32_t *id) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < INT32_MIN || v > INT32_MAX) return -1;
    *id = (int32_t)v;
    return 0;
}

int main(int argc, char **argv) {
    const char *tok_path = NULL, *input = NULL;
    int decode = 0, first_arg = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("voxtral_tokenize %s\n", VOX_VERSION);
            return 0;
        } else if (strcmp(a, "--tokenizer") == 0 || strcmp(a, "--input") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "voxtral_tokenize: %s needs a value\n", a);
                return 2;
            }
            *(a[2] == 't' ? &tok_path : &input) = argv[++i];
        } else if (strcmp(a, "--decode") == 0) {
            decode = 1;
        } else if (strcmp(a, "--") == 0) {
            first_arg = i + 1;
            break;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "voxtral_tokenize: unknown option %s (see --help)\n", a);
            return 2;
        } else {
            first_arg = i; /* positional arguments run to the end (ids may be negative) */
            break;
        }
    }
    int n_args = argc - first_arg;
    if (!tok_path) {
        fprintf(stderr, "voxtral_tokenize: --tokenizer is required (see --help)\n");
        return 2;
    }
    if (decode ? input != NULL : (input ? n_args != 0 : n_args != 1)) {
        fprintf(stderr, "voxtral_tokenize: %s (see --help)\n",
                decode ? "--decode takes ids, not --input"
                       : "give exactly one TEXT argument, or --input FILE");
        return 2;
    }
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (decode) {
        ids = malloc(((size_t)n_args + 1) * sizeof *ids);
        if (!ids) return 1;
        for (int i = 0; i < n_args; i++) {
            if (parse_id(argv[first_arg + i], &ids[i]) != 0) {
                fprintf(stderr, "voxtral_tokenize: \"%s\" is not a token id\n",
                        argv[first_arg + i]);
                free(ids);
                return 2;
            }
        }
        n_ids = (size_t)n_args;
    }

    vox_error err = {0};
    vox_tokenizer *tok;
    if (vox_tokenizer_load(tok_path, &tok, &err) != VOX_OK) {
        fprintf(stderr, "voxtral_tokenize: %s\n", err.msg);
        free(ids);
        return 1;
    }
    int rc = 0;
    if (decode) {
        char *text;
        if (vox_tokenizer_decode(tok, ids, n_ids, &text, &err) != VOX_OK) {
            fprintf(stderr, "voxtral_tokenize: %s\n", err.msg);
            rc = 1;
        } else {
            fputs(text, stdout);
            fputc('\n', stdout);
            free(text);
        }
    } else {
        char *buf = NULL;
        const char *text = argv[first_arg];
        size_t len = 0;
        if (input) {
            FILE *f = strcmp(input, "-") == 0 ? stdin : fopen(input, "rb");
            if (!f || read_all(f, &buf, &len) != 0) {
                fprintf(stderr, "voxtral_tokenize: %s: cannot read: %s\n", input,
                        strerror(errno));
                rc = 1;
            }
            if (f && f != stdin) fclose(f);
            text = buf;
        } else {
            len = strlen(text);
        }
        if (rc == 0 && vox_tokenizer_encode(tok, text, len, &ids, &n_ids, &err) != VOX_OK) {
            fprintf(stderr, "voxtral_tokenize: %s\n", err.msg);
            rc = 1;
        }
        for (size_t i = 0; rc == 0 && i < n_ids; i++)
            printf(i ? " %d" : "%d", (int)ids[i]);
        if (rc == 0) putchar('\n');
        free(buf);
    }
    free(ids);
    vox_tokenizer_free(tok);
    if (rc == 0 && fflush(stdout) != 0) {
        fprintf(stderr, "voxtral_tokenize: cannot write the output: %s\n", strerror(errno));
        rc = 1;
    }
    return rc;
}
