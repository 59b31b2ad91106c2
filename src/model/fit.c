/* Does the model fit on its device (fit.h). */
#include "model/fit.h"

#include <stdio.h>
#include <string.h>

/* "8.71 GiB", "136.0 MiB", "12.5 KiB" */
static const char *size_text(char *buf, size_t n, size_t bytes) {
    const double kib = 1024.0, b = (double)bytes;
    if (b >= kib * kib * kib) snprintf(buf, n, "%.2f GiB", b / (kib * kib * kib));
    else if (b >= kib * kib) snprintf(buf, n, "%.1f MiB", b / (kib * kib));
    else snprintf(buf, n, "%.1f KiB", b / kib);
    return buf;
}

/* "cuda:0 (NVIDIA H200)", or the backend's name alone */
static const char *device_label(const vox_backend *be, char *buf, size_t n) {
    if (be->product && *be->product)
        snprintf(buf, n, "%s (%s)", be->name, be->product);
    else
        snprintf(buf, n, "%s", be->name);
    return buf;
}

vox_status vox_model_check_fit(vox_backend *be, size_t need, vox_error *err) {
    if (need == 0) return VOX_OK; /* weights that are views of the files */
    size_t free_b = 0, total_b = 0;
    be->mem_info(be, &free_b, &total_b);
    if (need <= free_b || total_b == 0) return VOX_OK; /* no figures: the upload will tell */
    char dev[300], a[32], b[32], c[32];
    return vox_fail(err, VOX_ERR_DEVICE, "the model does not fit on %s: its weights need %s of "
                    "device memory and %s of its %s are free; free memory on it (other "
                    "processes) or use another device (-d)", device_label(be, dev, sizeof dev),
                    size_text(a, sizeof a, need), size_text(b, sizeof b, free_b),
                    size_text(c, sizeof c, total_b));
}

void vox_model_explain_fit(vox_backend *be, size_t need, size_t done, vox_error *err) {
    size_t free_b = 0, total_b = 0;
    be->mem_info(be, &free_b, &total_b);
    if (done >= need || total_b == 0 || free_b >= need - done) return; /* not a lack of room */
    char dev[300], a[32], b[32], c[32], d[32], why[VOX_ERROR_MSG_MAX];
    snprintf(why, sizeof why, "%s", err->msg);
    vox_fail(err, VOX_ERR_DEVICE, "the model does not fit on %s: its weights need %s of device "
             "memory, %s were uploaded when an allocation failed, and %s of its %s are free; free "
             "memory on it (other processes) or use another device (-d); the upload said: %.400s",
             device_label(be, dev, sizeof dev), size_text(a, sizeof a, need),
             size_text(b, sizeof b, done), size_text(c, sizeof c, free_b),
             size_text(d, sizeof d, total_b), why);
}
