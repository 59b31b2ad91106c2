/* voxtral_runner's command line: parsed once into vox_cli_options, defaults in one place. */
#ifndef VOX_CLI_OPTIONS_H
#define VOX_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "voxtral/voxtral.h"

typedef enum { VOX_OUT_TXT, VOX_OUT_JSON, VOX_OUT_SRT, VOX_OUT_VTT } vox_output_format;

/* Defaults that the help text shows. */
#define VOX_CLI_DEFAULT_MODEL_DIR "models/voxtral-mini-3b"
#define VOX_CLI_DEFAULT_CONFIDENCE 0.5

typedef struct {
    const char *model_dir;
    const char *device;     /* NULL: automatic */
    const char *language;   /* NULL: detect */
    int max_new_tokens;     /* 0: by audio length (per segment when segmenting) */
    bool ignore_eos;
    int logprobs;
    int32_t *force_ids;     /* owned */
    size_t n_force_ids;
    vox_output_format format;
    const char *output_dir; /* NULL: stdout */
    const char *files_from; /* NULL, a path, or "-" for stdin */
    bool segment;           /* split at pauses: --segment, or srt/vtt */
    double silence_threshold_db; /* the segmenter's threshold_db and min_silence_s */
    double min_silence_s;
    bool print_confidence;  /* txt: mark words under confidence_threshold */
    double confidence_threshold;
    bool no_progress;
    int batch_size;         /* most sequences in flight; 0: sized from device memory */
    int shard_k, shard_n;   /* --shard K/N: the inputs at positions K mod N (1 shard: all) */
    bool skip_existing;     /* with output_dir: inputs whose output file exists are skipped */
    bool latency;
    const char *latency_json;
    const char *dump_tensors; /* developer aid: see voxtral_transcribe_params.dump_path */
    const char **files;     /* owned array of borrowed strings (argv) */
    size_t n_files;
} vox_cli_options;

/* Exit statuses of voxtral_runner (README and --help document them). An interrupted run exits
 * with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). */
enum { VOX_EXIT_OK = 0, VOX_EXIT_SOME_FAILED = 1, VOX_EXIT_USAGE = 2 };

/* Parses argv. Returns 0 to go on, or an exit status to stop with (after --help/--version: 0;
 * on a usage error: VOX_EXIT_USAGE, with the message in err). *stop is set when it should stop. */
int vox_cli_parse(int argc, char **argv, vox_cli_options *o, bool *stop, vox_error *err);
void vox_cli_options_free(vox_cli_options *o);
void vox_cli_print_help(const char *prog);

/* Parses "1,2,3" or "@FILE" (ids separated by commas or white space) into ids. */
vox_status vox_cli_parse_ids(const char *spec, int32_t **ids, size_t *n, vox_error *err);

/* The file name extension of a format: "txt", "json", "srt", "vtt". */
const char *vox_cli_format_ext(vox_output_format f);

#endif
