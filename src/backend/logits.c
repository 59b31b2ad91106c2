/* Host-side statistics of one row of logits: argmax and its margin, log-softmax of a chosen id,
 * top-k. The CPU backend uses it directly; the CUDA backend on what its kernels reduce. */
#include <float.h>
#include <math.h>

#include "backend/backend.h"

void vox_logits_stats_host(const float *logits, int64_t V, int32_t chosen, int k,
                           vox_logits_stats *out);

void vox_logits_stats_host(const float *logits, int64_t V, int32_t chosen, int k,
                           vox_logits_stats *out) {
    VOX_ASSERT(V > 0 && k >= 0 && k <= VOX_MAX_TOP_K && chosen < V);
    /* argmax (first index on ties, as torch.argmax) and the runner-up logit */
    int32_t best = 0;
    float m1 = -FLT_MAX, m2 = -FLT_MAX;
    for (int64_t i = 0; i < V; i++) {
        float x = logits[i];
        if (x > m1) {
            m2 = m1;
            m1 = x;
            best = (int32_t)i;
        } else if (x > m2) {
            m2 = x;
        }
    }
    /* log-sum-exp in double around the max */
    double sum = 0;
    for (int64_t i = 0; i < V; i++) sum += exp((double)logits[i] - m1);
    double lse = m1 + log(sum);

    out->argmax = best;
    out->argmax_margin = V > 1 ? m1 - m2 : INFINITY;
    out->chosen = chosen < 0 ? best : chosen;
    out->chosen_logprob = (float)(logits[out->chosen] - lse);

    /* top-k by insertion into a small sorted list (k <= 20); ties keep the lower id first */
    out->k = k < V ? k : (int)V;
    int n = 0;
    for (int64_t i = 0; i < V && out->k > 0; i++) {
        float x = logits[i];
        if (n == out->k && x <= logits[out->top_ids[n - 1]]) continue;
        int pos = n < out->k ? n++ : n - 1;
        while (pos > 0 && logits[out->top_ids[pos - 1]] < x) {
            out->top_ids[pos] = out->top_ids[pos - 1];
            pos--;
        }
        out->top_ids[pos] = (int32_t)i;
    }
    for (int i = 0; i < out->k; i++)
        out->top_logprobs[i] = (float)(logits[out->top_ids[i]] - lse);
}
