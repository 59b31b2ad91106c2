#include "cli/devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vox_cli_device_list_free(char **names, int n) {
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

static vox_status add(char ***names, int *n, const char *s, size_t len, vox_error *err) {
    if (*n == VOX_CLI_MAX_DEVICES)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "--device: more than %d devices", VOX_CLI_MAX_DEVICES);
    char **grown = realloc(*names, (size_t)(*n + 1) * sizeof *grown);
    if (!grown) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    *names = grown;
    if (!s) {
        grown[(*n)++] = NULL;
        return VOX_OK;
    }
    if (!(grown[*n] = malloc(len + 1))) return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    memcpy(grown[*n], s, len);
    grown[(*n)++][len] = 0;
    return VOX_OK;
}

vox_status vox_cli_device_list(const char *spec, char ***names, int *n, vox_error *err) {
    *names = NULL;
    *n = 0;
    if (!spec) return add(names, n, NULL, 0, err);
    vox_status st = VOX_OK;
    for (const char *p = spec; !st;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            st = vox_fail(err, VOX_ERR_INVALID_ARG, "--device '%s': an empty device name", spec);
        } else if (len == 8 && strncmp(p, "cuda:all", 8) == 0) {
            int count = voxtral_cuda_device_count();
            if (count == 0 && strcmp(spec, "cuda:all") == 0)
                st = vox_fail(err, VOX_ERR_INVALID_ARG, "--device cuda:all: no CUDA device is usable");
            else if (count == 0) /* beside other devices: reported and left out, as any other */
                st = add(names, n, p, len, err);
            for (int d = 0; !st && d < count; d++) {
                char name[32];
                int k = snprintf(name, sizeof name, "cuda:%d", d);
                st = add(names, n, name, (size_t)k, err);
            }
        } else {
            st = add(names, n, p, len, err);
        }
        if (!comma) break;
        p = comma + 1;
    }
    if (st) {
        vox_cli_device_list_free(*names, *n);
        *names = NULL;
        *n = 0;
    }
    return st;
}

vox_status vox_cli_load_devices(const char *model_dir, char **names, int n, voxtral_context **ctxs,
                                int *n_loaded, vox_cli_device_report report, vox_error *err) {
    *n_loaded = 0;
    vox_status last = VOX_ERR_INVALID_ARG;
    for (int i = 0; i < n; i++) {
        voxtral_context_params cp = voxtral_context_default_params();
        cp.model_dir = model_dir;
        cp.device = names[i];
        vox_error e = {0};
        voxtral_context *ctx = NULL;
        vox_status st = names[i] && strcmp(names[i], "cuda:all") == 0 /* it found no GPU */
                            ? vox_fail(&e, VOX_ERR_INVALID_ARG, "no CUDA device is usable")
                            : voxtral_init(&cp, &ctx, &e);
        if (st) {
            last = st;
            *err = e;
            if (n > 1 && report) report(names[i] ? names[i] : "the default device", e.msg);
            continue;
        }
        ctxs[(*n_loaded)++] = ctx;
    }
    return *n_loaded > 0 ? VOX_OK : last;
}
