/* The status codes live in the public header; modules include them through this name, with the
 * helpers below that only the modules use. */
#ifndef VOX_COMMON_STATUS_H
#define VOX_COMMON_STATUS_H

#include <stdbool.h>

#include "voxtral/status.h"

/* What replaces the middle of a message too long for vox_error (vox_fail, vox_error_prefix). */
#define VOX_ELISION "[...]"

/* Whether an error message begins with name (a file that the message already names), also where
 * vox_error elided the middle of a long one. */
bool vox_message_names(const char *msg, const char *name);

/* The public API's entry points take err == NULL (only the status wanted): this gives err a
 * scratch vox_error of the function's own for the code below to fill. */
#define VOX_ERR_SCRATCH(err)                                                                 \
    vox_error vox_err_scratch_;                                                              \
    if (!(err)) (err) = &vox_err_scratch_
#endif
