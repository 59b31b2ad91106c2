/* voxtral_runner: transcribes audio files with an exported Voxtral model.
 * The model loads once; each file is transcribed in turn; a file that fails is reported on
 * stderr and the others go on. Exit status: 0 all good, 1 some files failed, 2 usage/model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "cli/options.h"
#include "cli/report.h"
#include "voxtral/voxtral.h"

int main(int argc, char **argv) {
    vox_cli_options o;
    vox_error err = {0};
    bool stop;
    int rc = vox_cli_parse(argc, argv, &o, &stop, &err);
    if (stop) {
        if (rc) fprintf(stderr, "voxtral_runner: %s\n", err.msg);
        return rc;
    }

    voxtral_context_params cp = voxtral_context_default_params();
    cp.model_dir = o.model_dir;
    cp.device = o.device;
    voxtral_context *ctx = NULL;
    if (voxtral_init(&cp, &ctx, &err)) {
        fprintf(stderr, "voxtral_runner: cannot load the model from '%s': %s\n", o.model_dir, err.msg);
        vox_cli_options_free(&o);
        return VOX_EXIT_USAGE;
    }

    voxtral_transcribe_params tp = voxtral_transcribe_default_params();
    tp.language = o.language;
    tp.max_new_tokens = o.max_new_tokens;
    tp.ignore_eos = o.ignore_eos;
    tp.logprobs = o.logprobs;
    tp.force_ids = o.force_ids;
    tp.n_force_ids = o.n_force_ids;
    tp.dump_path = o.dump_tensors;

    vox_run_totals totals = {.load_ms = voxtral_load_ms(ctx)};
    for (size_t i = 0; i < o.n_files; i++) {
        voxtral_result *r = NULL;
        if (voxtral_transcribe_file(ctx, o.files[i], &tp, &r, &err)) {
            fprintf(stderr, "voxtral_runner: %s\n", err.msg);
            totals.n_failed++;
            continue;
        }
        if (o.format == VOX_OUT_JSON) {
            vox_write_json_result(stdout, ctx, o.files[i], r);
        } else {
            if (o.n_files > 1) printf("==> %s <==\n", o.files[i]);
            printf("%s\n", r->text);
        }
        fflush(stdout);
        vox_run_totals_add(&totals, r);
        voxtral_result_free(r);
    }

    if (o.latency) vox_write_latency_table(stderr, &totals, voxtral_device_name(ctx));
    if (o.latency_json && vox_write_latency_json(o.latency_json, &totals, voxtral_device_name(ctx))) {
        fprintf(stderr, "voxtral_runner: %s: cannot write the latency report: %s\n", o.latency_json,
                strerror(errno));
        totals.n_failed++;
    }
    if (totals.n_failed && o.n_files > 1)
        fprintf(stderr, "voxtral_runner: %d of %zu files failed\n", totals.n_failed, o.n_files);
    voxtral_free(ctx);
    vox_cli_options_free(&o);
    return totals.n_failed ? VOX_EXIT_SOME_FAILED : VOX_EXIT_OK;
}
