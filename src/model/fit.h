/* Whether the model fits on its device (private to src/model): said before any weight is
 * uploaded, with the sizes and the device's name, rather than as a failed allocation part way
 * through; and said again if an upload runs out of memory all the same (another process took
 * memory meanwhile). */
#ifndef VOX_MODEL_FIT_H
#define VOX_MODEL_FIT_H

#include <stddef.h>

#include "backend/backend.h"

/* VOX_ERR_DEVICE when `need` bytes of weights are more than the device has free. */
vox_status vox_model_check_fit(vox_backend *be, size_t need, vox_error *err);

/* An upload failed (err) with `done` of the `need` bytes on the device: when the device has no
 * room left for the rest, err becomes the same message as vox_model_check_fit's, with what was
 * uploaded and the upload's own reason; otherwise err is left as it is. */
void vox_model_explain_fit(vox_backend *be, size_t need, size_t done, vox_error *err);

#endif
