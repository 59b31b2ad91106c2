/* The order in which waiting prompts go into decoder steps (src/engine/schedule.h): the
 * sequences still prefilling, the largest token budget first, admission order among equal
 * budgets; decoding sequences left out. Checked on hand-made sequences: mixed budgets, ties,
 * decoding ones interleaved, none waiting, one alone, and a whole batch of 256 with random
 * budgets against a reference (a stable sort, written out separately); and admission order
 * alone when asked (VOX_PREFILL_ORDER=admission). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/schedule.h"
#include "harness.h"

#define MAX_SEQS 256

static vox_seq seqs[MAX_SEQS];
static vox_seq *active[MAX_SEQS], *out[MAX_SEQS];
static bool by_budget = true;

/* n sequences in admission order; budgets[i] < 0 marks a decoding one */
static int make(const int64_t *budgets, int n) {
    memset(seqs, 0, sizeof seqs);
    for (int i = 0; i < n; i++) {
        seqs[i].decoding = budgets[i] < 0;
        seqs[i].max_new = budgets[i] < 0 ? -budgets[i] : budgets[i];
        active[i] = &seqs[i];
    }
    return vox_prefill_order(active, n, by_budget, out);
}

/* out[0..n) is seqs[want[0]], seqs[want[1]], ... */
static bool order_is(int n, const int *want, int n_want) {
    if (n != n_want) return false;
    for (int i = 0; i < n; i++)
        if (out[i] != &seqs[want[i]]) return false;
    return true;
}

int main(void) {
    { /* mixed budgets: largest first */
        const int64_t b[] = {56, 272, 100, 272, 8};
        const int want[] = {1, 3, 2, 0, 4};
        CHECK(order_is(make(b, 5), want, 5));
    }
    { /* decoding sequences are left out, whatever their budget */
        const int64_t b[] = {-500, 30, -1, 90, 30, -90};
        const int want[] = {3, 1, 4};
        CHECK(order_is(make(b, 6), want, 3));
    }
    { /* equal budgets keep admission order (a partly prefilled prompt is not overtaken by an
       * equal one admitted after it) */
        const int64_t b[] = {100, 100, 100, 100};
        const int want[] = {0, 1, 2, 3};
        CHECK(order_is(make(b, 4), want, 4));
    }
    { /* all decoding: nothing waits; no sequence at all */
        const int64_t b[] = {-3, -4};
        CHECK(make(b, 2) == 0);
        CHECK(make(b, 0) == 0);
    }
    { /* one alone */
        const int64_t b[] = {-7, 12};
        const int want[] = {1};
        CHECK(order_is(make(b, 2), want, 1));
    }
    { /* a full batch, random budgets with many ties and a third decoding: a stable sort by
       * descending budget, built here by counting */
        int64_t b[MAX_SEQS];
        srand(20261204);
        for (int i = 0; i < MAX_SEQS; i++) b[i] = (rand() % 3 == 0 ? -1 : 1) * (1 + rand() % 40);
        const int n = make(b, MAX_SEQS);
        int want[MAX_SEQS], k = 0;
        for (int64_t budget = 40; budget >= 1; budget--)
            for (int i = 0; i < MAX_SEQS; i++)
                if (b[i] == budget) want[k++] = i;
        CHECK(order_is(n, want, k));
    }
    { /* by_budget false (VOX_PREFILL_ORDER=admission): admission order, decoding ones left out */
        by_budget = false;
        const int64_t b[] = {56, -272, 100, 272, 8};
        const int want[] = {0, 2, 3, 4};
        CHECK(order_is(make(b, 5), want, 4));
        by_budget = true;
    }
    return test_finish("test_engine_schedule");
}
