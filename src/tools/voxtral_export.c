/* voxtral_export: turns a downloaded Voxtral checkpoint (transformers or Mistral layout) into an
 * exported model directory for voxtral_runner. The work is in src/export; this file parses the
 * command line and prints. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "export/export.h"

/* SIGINT or SIGTERM: the export stops at its next tensor and removes what it wrote (a second
 * signal ends the process at once: the handler is reset after the first). */
static volatile sig_atomic_t g_signal;

static void on_signal(int sig) { g_signal = sig; }

static bool stop_requested(void *unused) {
    (void)unused;
    return g_signal != 0;
}

static void catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: voxtral_export --from CHECKPOINT_DIR --out MODEL_DIR [options]\n"
            "\n"
            "Converts a Voxtral checkpoint into a model directory: voxtral.json,\n"
            "audio_encoder.safetensors, token_embedding.safetensors, text_decoder.safetensors,\n"
            "tekken.json. CHECKPOINT_DIR holds either the transformers layout (config.json,\n"
            "model.safetensors or model.safetensors.index.json and its shards) or Mistral's\n"
            "(params.json, consolidated.safetensors), and tekken.json.\n"
            "\n"
            "options:\n"
            "  --dtype keep|f32|bf16|fp8\n"
            "                          dtype of the weights (default keep: BF16 when the\n"
            "                          checkpoint is all BF16, else F32); positions stay F32.\n"
            "                          fp8: the text decoder's linear layers as FP8 (E4M3)\n"
            "                          with a scale per output row (the rest as keep); runs\n"
            "                          on the CPU and on GPUs of compute capability 8.9+\n"
            "  --layout auto|transformers|mistral\n"
            "                          which layout to read when the directory holds both\n"
            "                          (default auto: transformers if its weights are there)\n"
            "  -q, --quiet             print only warnings and errors\n"
            "  -h, --help              this help\n"
            "  --version               the version\n");
}

static void print_file(const char *path, size_t n_tensors, size_t bytes, void *user) {
    (void)user;
    if (n_tensors)
        printf("wrote %s (%zu tensors, %.1f MB)\n", path, n_tensors, bytes / 1e6);
    else
        printf("wrote %s (%.1f kB)\n", path, bytes / 1e3);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *from = NULL, *out = NULL;
    int quiet = 0;
    vox_export_params params = vox_export_default_params();

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("voxtral_export %s\n", VOX_VERSION);
            return 0;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        int takes_value = strcmp(a, "--from") == 0 || strcmp(a, "--out") == 0 ||
                          strcmp(a, "--dtype") == 0 || strcmp(a, "--layout") == 0;
        if (!takes_value) {
            fprintf(stderr, "voxtral_export: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
        if (!v) {
            fprintf(stderr, "voxtral_export: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--from") == 0) {
            from = v;
        } else if (strcmp(a, "--out") == 0) {
            out = v;
        } else if (strcmp(a, "--dtype") == 0) {
            if (strcmp(v, "keep") == 0) params.dtype = VOX_EXPORT_KEEP;
            else if (strcmp(v, "f32") == 0) params.dtype = VOX_EXPORT_F32;
            else if (strcmp(v, "bf16") == 0) params.dtype = VOX_EXPORT_BF16;
            else if (strcmp(v, "fp8") == 0) params.dtype = VOX_EXPORT_FP8;
            else {
                fprintf(stderr, "voxtral_export: --dtype must be keep, f32, bf16 or fp8, not '%s'\n",
                        v);
                return 2;
            }
        } else {
            if (strcmp(v, "auto") == 0) params.layout = VOX_LAYOUT_AUTO;
            else if (strcmp(v, "transformers") == 0) params.layout = VOX_LAYOUT_TRANSFORMERS;
            else if (strcmp(v, "mistral") == 0) params.layout = VOX_LAYOUT_MISTRAL;
            else {
                fprintf(stderr,
                        "voxtral_export: --layout must be auto, transformers or mistral, not "
                        "'%s'\n", v);
                return 2;
            }
        }
    }
    if (!from || !out) {
        fprintf(stderr, "voxtral_export: --from and --out are required\n");
        usage(stderr);
        return 2;
    }
    if (!*from || !*out) {
        fprintf(stderr, "voxtral_export: %s must not be empty\n", !*from ? "--from" : "--out");
        return 2;
    }
    if (!quiet) params.on_file = print_file;
    params.stop = stop_requested;
    catch_signals();

    vox_export_result res;
    vox_error err = {0};
    vox_status st = vox_export(from, out, &params, &res, &err);
    for (int i = 0; i < res.n_warnings; i++)
        fprintf(stderr, "voxtral_export: warning: %s\n", res.warnings[i]);
    if (st == VOX_ERR_INTERRUPTED && g_signal) {
        fprintf(stderr, "voxtral_export: interrupted: nothing was exported, %s is as it was\n", out);
        return 128 + g_signal;
    }
    if (st != VOX_OK) {
        fprintf(stderr, "voxtral_export: error: %s\n", err.msg);
        return 1;
    }
    if (!quiet) {
        const vox_manifest *m = &res.manifest;
        printf("exported %s checkpoint %s (%s) to %s: %zu tensors, weights %s%s; encoder %d "
               "layers, decoder %d layers, vocabulary %d\n",
               m->source_layout, m->source_path, vox_dtype_name(m->source_dtype), out,
               res.n_tensors, vox_dtype_name(m->decoder.dtype),
               m->decoder.quant == VOX_QUANT_FP8_DYNAMIC ? " (decoder linear layers FP8 E4M3)" : "",
               m->encoder.layers,
               m->decoder.layers, m->decoder.vocab_size);
    }
    return 0;
}
