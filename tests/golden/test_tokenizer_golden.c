/* The tokenizer against tiktoken: tests/fixtures/tiny/reference/tokenizer.json holds strings
 * and the ids tiktoken gives them with tests/fixtures/tiny/tekken.json (written by
 * scripts/make_reference.py). Every string must encode to exactly those ids and decode back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "harness.h"
#include "tokenizer/tekken.h"

int main(void) {
    const char *tekken_path = VOX_FIXTURES "/tiny/tekken.json";
    const char *ref_path = VOX_FIXTURES "/tiny/reference/tokenizer.json";
    char *ref_text = test_read_file(ref_path, NULL);
    FILE *f = fopen(tekken_path, "rb");
    if (!ref_text || !f)
        TEST_SKIP("%s or %s is missing: run scripts/make_reference.py", tekken_path, ref_path);
    fclose(f);

    vox_error err = {0};
    vox_tokenizer *tok = NULL;
    vox_status st = vox_tokenizer_load(tekken_path, &tok, &err);
    CHECK_MSG(st == VOX_OK, "%s", err.msg);
    cJSON *cases = cJSON_Parse(ref_text);
    CHECK_MSG(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) > 0,
              "%s: not a non-empty list", ref_path);
    if (st != VOX_OK || !cJSON_IsArray(cases)) return test_finish("test_tokenizer_golden");

    int n_cases = 0, n_ok = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(c, "text");
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(c, "ids");
        CHECK_MSG(cJSON_IsString(text) && cJSON_IsArray(ids), "%s: case %d is malformed",
                  ref_path, n_cases);
        if (!cJSON_IsString(text) || !cJSON_IsArray(ids)) continue;
        n_cases++;
        int n_want = cJSON_GetArraySize(ids);
        int32_t *want = malloc(((size_t)n_want + 1) * sizeof *want);
        int k = 0;
        const cJSON *id;
        cJSON_ArrayForEach(id, ids) want[k++] = (int32_t)id->valuedouble;

        const char *s = text->valuestring;
        int32_t *got = NULL;
        size_t n_got = 0;
        st = vox_tokenizer_encode(tok, s, strlen(s), &got, &n_got, &err);
        int same = st == VOX_OK && n_got == (size_t)n_want &&
                   (n_got == 0 || memcmp(got, want, n_got * sizeof *got) == 0);
        CHECK_MSG(same, "\"%s\": %s", s, st == VOX_OK ? "ids differ from tiktoken's" : err.msg);
        if (!same && st == VOX_OK) {
            fprintf(stderr, "  got ");
            for (size_t i = 0; i < n_got; i++) fprintf(stderr, " %d", (int)got[i]);
            fprintf(stderr, "\n  want");
            for (int i = 0; i < n_want; i++) fprintf(stderr, " %d", (int)want[i]);
            fprintf(stderr, "\n");
        }
        char *back = NULL;
        st = vox_tokenizer_decode(tok, want, (size_t)n_want, &back, &err);
        int round = st == VOX_OK && strcmp(back, s) == 0;
        CHECK_MSG(round, "\"%s\" decodes to \"%s\"", s, back ? back : err.msg);
        n_ok += same && round;
        free(back);
        free(got);
        free(want);
    }
    printf("%d of %d reference strings match tiktoken and decode back\n", n_ok, n_cases);
    cJSON_Delete(cases);
    free(ref_text);
    vox_tokenizer_free(tok);
    return test_finish("test_tokenizer_golden");
}
