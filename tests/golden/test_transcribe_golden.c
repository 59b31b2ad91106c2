/* End to end on the CPU backend against transformers (float32, CPU) on the tiny random model:
 * for every case of tests/fixtures/tiny/reference/generation.json (made by
 * scripts/make_reference.py), transcribe the audio through the public API and compare
 *  - greedy ids: identical up to the first step whose reference top-2 margin is a near-tie
 *    (<= 1e-3: float32 summation order alone can flip it), and the same stopping point when
 *    there is none;
 *  - log-probabilities of those steps and their top-20 alternatives: within 1e-4 absolute
 *    (both sides compute in float32; the logits differ by summation order, ~1e-6 relative);
 *  - teacher forcing of the reference's forced ids: every step's log-probability and top-20
 *    within 1e-4. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "voxtral/voxtral.h"

#define NEAR_TIE 1e-3
#define LOGPROB_ATOL 1e-4

/* Compares the top-k list of one step: ids must agree except where neighbouring reference
 * log-probabilities are within the tolerance (their order is then not meaningful). */
static void compare_top(const char *what, int step, const voxtral_token *t, const cJSON *ref_top) {
    int n = cJSON_GetArraySize(ref_top);
    CHECK_MSG(t->n_top == n, "%s step %d: %d alternatives, reference %d", what, step, t->n_top, n);
    for (int i = 0; i < n && i < t->n_top; i++) {
        const cJSON *pair = cJSON_GetArrayItem(ref_top, i);
        int ref_id = cJSON_GetArrayItem(pair, 0)->valueint;
        double ref_lp = cJSON_GetArrayItem(pair, 1)->valuedouble;
        CHECK_CLOSE(t->top_logprobs[i], ref_lp, LOGPROB_ATOL, 0);
        double gap_prev = i > 0 ? fabs(ref_lp - cJSON_GetArrayItem(cJSON_GetArrayItem(ref_top, i - 1), 1)->valuedouble) : 1.0;
        double gap_next = i + 1 < n ? fabs(ref_lp - cJSON_GetArrayItem(cJSON_GetArrayItem(ref_top, i + 1), 1)->valuedouble) : 1.0;
        if (gap_prev > 2 * LOGPROB_ATOL && gap_next > 2 * LOGPROB_ATOL)
            CHECK_MSG(t->top_ids[i] == ref_id, "%s step %d: top[%d] id %d, reference %d", what, step,
                      i, t->top_ids[i], ref_id);
    }
}

static void run_case(voxtral_context *ctx, const cJSON *c) {
    const char *audio = cJSON_GetObjectItem(c, "audio")->valuestring;
    const cJSON *lang = cJSON_GetObjectItem(c, "language");
    const cJSON *greedy = cJSON_GetObjectItem(c, "greedy");
    const cJSON *ref_ids = cJSON_GetObjectItem(greedy, "ids");
    const cJSON *margins = cJSON_GetObjectItem(greedy, "margins");
    const cJSON *ref_lps = cJSON_GetObjectItem(greedy, "logprobs");
    const cJSON *ref_top = cJSON_GetObjectItem(greedy, "top");
    int n_ref = cJSON_GetArraySize(ref_ids);
    const cJSON *max_new = cJSON_GetObjectItem(c, "max_new_tokens");
    char path[1024], what[256];
    snprintf(path, sizeof path, "%s/tiny/audio/%s", VOX_FIXTURES, audio);
    snprintf(what, sizeof what, "%s lang=%s", audio, cJSON_IsString(lang) ? lang->valuestring : "none");

    voxtral_transcribe_params p = voxtral_transcribe_default_params();
    p.language = cJSON_IsString(lang) ? lang->valuestring : NULL;
    p.max_new_tokens = max_new ? max_new->valueint : 24;
    p.logprobs = 20;
    voxtral_result *r = NULL;
    vox_error err = {0};
    vox_status st = voxtral_transcribe_file(ctx, path, &p, &r, &err);
    CHECK_MSG(st == VOX_OK, "%s: %s", what, err.msg);
    if (st) return;

    /* Greedy ids up to the first near-tie of the reference. */
    int compared = 0, stop_at = n_ref;
    for (int i = 0; i < n_ref; i++) {
        if (cJSON_GetArrayItem(margins, i)->valuedouble <= NEAR_TIE) {
            stop_at = i;
            break;
        }
    }
    for (int i = 0; i < stop_at && i < (int)r->n_ids; i++) {
        int ref = cJSON_GetArrayItem(ref_ids, i)->valueint;
        CHECK_MSG(r->ids[i] == ref, "%s: step %d: id %d, transformers %d (margin %.4g)", what, i,
                  r->ids[i], ref, cJSON_GetArrayItem(margins, i)->valuedouble);
        if (r->ids[i] != ref) break;
        CHECK_CLOSE(r->tokens[i].logprob, cJSON_GetArrayItem(ref_lps, i)->valuedouble, LOGPROB_ATOL, 0);
        compare_top(what, i, &r->tokens[i], cJSON_GetArrayItem(ref_top, i));
        compared++;
    }
    if (stop_at == n_ref)
        CHECK_MSG((int)r->n_ids == n_ref, "%s: %zu tokens, transformers %d", what, r->n_ids, n_ref);
    printf("%-32s greedy: %d of %d steps compared (first near-tie: %s), text: \"%s\"\n", what,
           compared, n_ref, stop_at < n_ref ? "yes" : "none", r->text);
    voxtral_result_free(r);

    /* Teacher forcing. */
    const cJSON *forced = cJSON_GetObjectItem(c, "forced");
    if (!forced) return;
    const cJSON *f_ids = cJSON_GetObjectItem(forced, "ids");
    int n_f = cJSON_GetArraySize(f_ids);
    int32_t *ids = malloc((size_t)n_f * sizeof *ids);
    for (int i = 0; i < n_f; i++) ids[i] = cJSON_GetArrayItem(f_ids, i)->valueint;
    p.force_ids = ids;
    p.n_force_ids = (size_t)n_f;
    st = voxtral_transcribe_file(ctx, path, &p, &r, &err);
    CHECK_MSG(st == VOX_OK, "%s forced: %s", what, err.msg);
    if (!st) {
        CHECK((int)r->n_ids == n_f);
        const cJSON *f_lps = cJSON_GetObjectItem(forced, "logprobs");
        const cJSON *f_top = cJSON_GetObjectItem(forced, "top");
        double max_delta = 0;
        for (int i = 0; i < n_f && i < (int)r->n_ids; i++) {
            CHECK(r->ids[i] == ids[i]);
            double ref = cJSON_GetArrayItem(f_lps, i)->valuedouble;
            CHECK_CLOSE(r->tokens[i].logprob, ref, LOGPROB_ATOL, 0);
            if (fabs(r->tokens[i].logprob - ref) > max_delta) max_delta = fabs(r->tokens[i].logprob - ref);
            compare_top(what, i, &r->tokens[i], cJSON_GetArrayItem(f_top, i));
        }
        printf("%-32s forced: %d steps, max |delta logprob| %.2e\n", what, n_f, max_delta);
        voxtral_result_free(r);
    }
    free(ids);
}

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny/reference/generation.json", VOX_FIXTURES);
    char *text = test_read_file(path, NULL);
    if (!text) TEST_SKIP("%s not found: run scripts/make_reference.py", path);
    cJSON *ref = cJSON_Parse(text);
    free(text);
    CHECK_MSG(ref != NULL, "%s: not JSON", path);
    if (!ref) return test_finish("transcribe_golden");

    voxtral_context_params cp = voxtral_context_default_params();
    cp.model_dir = VOX_TINY_MODEL;
    cp.device = "cpu";
    voxtral_context *ctx = NULL;
    vox_error err = {0};
    vox_status st = voxtral_init(&cp, &ctx, &err);
    CHECK_MSG(st == VOX_OK, "loading %s: %s", VOX_TINY_MODEL, err.msg);
    if (!st) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(ref, "cases")) run_case(ctx, c);
        voxtral_free(ctx);
    }
    cJSON_Delete(ref);
    return test_finish("transcribe_golden");
}
