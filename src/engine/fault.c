/* VOX_FAULT, the engine's fault injection (fault.h). */
#include "engine/fault.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vox_status vox_fault_from_env(vox_fault *f, vox_error *err) {
    memset(f, 0, sizeof *f);
    const char *spec = getenv("VOX_FAULT");
    if (!spec || !*spec) return VOX_OK;
    snprintf(f->spec, sizeof f->spec, "%s", spec);
    const char *p = spec;
    if (strncmp(p, "step:", 5) == 0) {
        f->where = VOX_FAULT_STEP;
        p += 5;
    } else if (strncmp(p, "seqs:", 5) == 0) {
        f->where = VOX_FAULT_SEQS;
        p += 5;
    } else if (strncmp(p, "chunks:", 7) == 0) {
        f->where = VOX_FAULT_CHUNKS;
        p += 7;
    } else if (strncmp(p, "encode:", 7) == 0) {
        f->where = VOX_FAULT_ENCODE;
        p += 7;
    }
    char *end = NULL;
    errno = 0;
    long at = f->where != VOX_FAULT_NONE && *p >= '1' && *p <= '9' ? strtol(p, &end, 10) : 0;
    if (end && errno == 0 && f->where != VOX_FAULT_SEQS && f->where != VOX_FAULT_CHUNKS &&
        strcmp(end, ":sticky") == 0) f->sticky = true;
    if (at <= 0 || errno || !end || (*end && !f->sticky)) {
        f->where = VOX_FAULT_NONE;
        return vox_fail(err, VOX_ERR_INVALID_ARG, "VOX_FAULT=%s: expected step:N or encode:N "
                        "(N >= 1), optionally followed by :sticky, or seqs:K or chunks:K (K >= 1)", f->spec);
    }
    f->at = at;
    return VOX_OK;
}

static vox_status fire(vox_fault *f, const char *device, const char *what, long n, vox_error *err) {
    if (f->sticky) f->lost = true;
    return vox_fail(err, VOX_ERR_DEVICE, "%s: %s %ld: injected fault (VOX_FAULT=%s)%s", device, what,
                    n, f->spec, f->sticky ? ": the device is lost" : "");
}

vox_status vox_fault_step(vox_fault *f, const char *device, int n_seqs, bool holds_marked, bool *mark,
                          vox_error *err) {
    *mark = false;
    if (f->where == VOX_FAULT_SEQS) {
        ++f->steps;
        if (n_seqs <= f->at) return VOX_OK;
        return vox_fail(err, VOX_ERR_DEVICE, "%s: decoder step %ld of %d sequences: injected fault "
                        "(VOX_FAULT=%s)", device, f->steps, n_seqs, f->spec);
    }
    if (f->where != VOX_FAULT_STEP) return VOX_OK;
    *mark = ++f->steps == f->at;
    if (!*mark && !holds_marked) return VOX_OK;
    return fire(f, device, "decoder step", f->steps, err);
}

void vox_fault_group_begin(vox_fault *f) {
    if (f->where == VOX_FAULT_ENCODE) f->groups++;
}

vox_status vox_fault_encode(vox_fault *f, const char *device, int at_once, vox_error *err) {
    if (f->where == VOX_FAULT_CHUNKS && at_once > f->at)
        return vox_fail(err, VOX_ERR_DEVICE, "%s: audio encoder, %d chunks at once: injected fault "
                        "(VOX_FAULT=%s)", device, at_once, f->spec);
    if (f->where != VOX_FAULT_ENCODE || f->groups != f->at) return VOX_OK;
    return fire(f, device, "encoder group", f->groups, err);
}

bool vox_fault_device_lost(const vox_fault *f) { return f->lost; }
