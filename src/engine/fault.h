/* Fault injection, the engine's test hook (private to src/engine): VOX_FAULT makes chosen
 * decoder steps or encoder groups of each engine fail as a device error would, so that what the
 * engine does then can be tested on the CPU backend (a GPU fault cannot be had on demand).
 *
 *   VOX_FAULT=step:N        the Nth decoder step fails (1 is the first), and so does every later
 *                           step that holds one of its sequences: as requests whose own data the
 *                           device fails on. The engine runs a failed step again in halves, so
 *                           those requests end up failing alone and the others go on.
 *   VOX_FAULT=seqs:K        every decoder step of more than K sequences fails, as on a device
 *                           that has memory for no more: the batch shrinks to K and every
 *                           request is transcribed.
 *   VOX_FAULT=encode:N      the Nth encoder group (the pieces one admission takes) fails
 *   VOX_FAULT=chunks:K      the audio encoder fails whenever it runs more than K chunks at once,
 *                           as on a device without room for a larger workspace: the groups
 *                           shrink to K chunks and every request is transcribed.
 *   ...:sticky              (step: and encode:) and the device is lost from then on
 *
 * Without :sticky the device works on after the failure, as after running out of memory in one
 * step. With it, every later check of the device fails, as after an illegal memory access,
 * which leaves a CUDA context unusable: what the device had in flight fails, and the requests
 * left go to the other devices (or fail when there are none). Unset or empty: no fault. The
 * counts start with each queue; voxtral_init's warm-up on a GPU is left alone. */
#ifndef VOX_ENGINE_FAULT_H
#define VOX_ENGINE_FAULT_H

#include <stdbool.h>

#include "common/status.h"

typedef struct {
    enum { VOX_FAULT_NONE, VOX_FAULT_STEP, VOX_FAULT_SEQS, VOX_FAULT_ENCODE, VOX_FAULT_CHUNKS } where;
    long at;            /* the step or group that fails; for seqs:K and chunks:K, K */
    bool sticky;
    char spec[48];      /* as given, for the messages */
    long steps, groups; /* counted so far */
    bool lost;          /* a sticky fault has happened */
} vox_fault;

/* Reads VOX_FAULT; VOX_ERR_INVALID_ARG when it is not one of the forms above. */
vox_status vox_fault_from_env(vox_fault *f, vox_error *err);

/* A decoder step of n_seqs sequences ran; holds_marked: one of them was in the step that step:N
 * failed. VOX_ERR_DEVICE when the step fails; then *mark says whether its sequences are to be
 * marked (the step step:N names). */
vox_status vox_fault_step(vox_fault *f, const char *device, int n_seqs, bool holds_marked, bool *mark,
                          vox_error *err);
/* An admission's encoder group begins (encoding it may take several calls: halves). */
void vox_fault_group_begin(vox_fault *f);
/* (Part of) the current group was encoded, at most `at_once` chunks at a time: VOX_ERR_DEVICE when
 * the group is the one that fails (encode:N), or at_once is more than chunks:K allows. */
vox_status vox_fault_encode(vox_fault *f, const char *device, int at_once, vox_error *err);
/* True once a sticky fault has happened: the device counts as lost. */
bool vox_fault_device_lost(const vox_fault *f);

#endif
