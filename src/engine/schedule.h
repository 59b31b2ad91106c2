/* The order in which the engine puts waiting prompts into a decoder step (engine.c's step), a
 * function of its own so that a unit test can check it (tests/unit/test_engine_schedule.c). */
#ifndef VOX_ENGINE_SCHEDULE_H
#define VOX_ENGINE_SCHEDULE_H

#include <stdbool.h>

#include "engine/queue.h"

/* The sequences of active[0..n_active) whose prompts are not all prefilled yet, into out, in the
 * order their chunks go into steps: the largest token budget (max_new) first, admission order
 * (the order of active) among equals; or, by_budget false (VOX_PREFILL_ORDER=admission, for
 * A/B runs), admission order alone. Returns how many there are.
 *
 * Why: a run lasts until its last sequence has made all its tokens, so the sequences with the
 * most to decode should start first (longest processing time first). With files of mixed
 * lengths in submission order, a long file admitted late waited behind every earlier prompt
 * and made the run's tail of few-row steps: 128 files of 3 to 30 s, encoder groups of 32, took
 * 288 steps in submission order and 275 this way, for a longest budget of 272 tokens
 * (bench/NOTES-2026-12-04c.md). A sequence's results do not depend on the order. */
static inline int vox_prefill_order(vox_seq *const *active, int n_active, bool by_budget,
                                    vox_seq **out) {
    int n = 0;
    for (int i = 0; i < n_active; i++) {
        vox_seq *s = active[i];
        if (s->decoding) continue;
        int j = n++; /* insertion: stable, and the list is at most a batch */
        while (by_budget && j > 0 && out[j - 1]->max_new < s->max_new) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = s;
    }
    return n;
}

#endif
