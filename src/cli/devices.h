/* -d DEV[,DEV...]: the devices a run uses, each loading its own copy of the model. */
#ifndef VOX_CLI_DEVICES_H
#define VOX_CLI_DEVICES_H

#include <stddef.h>

#include "voxtral/voxtral.h"

#define VOX_CLI_MAX_DEVICES 64

/* Splits a device list ("cuda:0,cuda:1", "cuda:all", "cpu", NULL for the automatic choice) into
 * names (malloc'ed, *n of them; NULL entries stand for the automatic choice). cuda:all is every
 * CUDA device. Errors: an empty item, cuda:all without a CUDA device, more than
 * VOX_CLI_MAX_DEVICES. */
vox_status vox_cli_device_list(const char *spec, char ***names, int *n, vox_error *err);
void vox_cli_device_list_free(char **names, int n);

/* Loads the model once per device. A device that fails is reported through `report` (its name
 * and the reason) and left out; fails only when none loads (the last reason in err). */
typedef void (*vox_cli_device_report)(const char *device, const char *reason);
vox_status vox_cli_load_devices(const char *model_dir, char **names, int n, voxtral_context **ctxs,
                                int *n_loaded, vox_cli_device_report report, vox_error *err);

#endif
