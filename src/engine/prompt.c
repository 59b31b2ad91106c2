/* The transcription prompt, voxtral-spec.md section 5. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/context.h"

vox_status vox_prompt_build(const voxtral_context *ctx, size_t n_audio, const char *language,
                            int32_t **ids_out, size_t *n_out, size_t *audio_at, vox_error *err) {
    const vox_manifest *c = &ctx->model->cfg;
    int32_t *lang_ids = NULL;
    size_t n_lang = 0;
    if (language && *language) {
        char text[64];
        if (strlen(language) > 16)
            return vox_fail(err, VOX_ERR_INVALID_ARG, "language code '%s' is too long", language);
        snprintf(text, sizeof text, "lang:%s", language);
        vox_status st = vox_tokenizer_encode(ctx->tok, text, strlen(text), &lang_ids, &n_lang, err);
        if (st) return st;
    }
    size_t n = VOX_PROMPT_FIXED_TOKENS + n_audio + n_lang;
    int32_t *ids = malloc(n * sizeof *ids);
    if (!ids) {
        free(lang_ids);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    size_t i = 0;
    ids[i++] = c->tokenizer.bos;
    ids[i++] = c->tokenizer.inst;
    ids[i++] = c->tokenizer.begin_audio;
    *audio_at = i;
    for (size_t a = 0; a < n_audio; a++) ids[i++] = c->tokenizer.audio;
    ids[i++] = c->tokenizer.inst_end;
    for (size_t l = 0; l < n_lang; l++) ids[i++] = lang_ids[l];
    ids[i++] = c->tokenizer.transcribe;
    free(lang_ids);
    *ids_out = ids;
    *n_out = n;
    return VOX_OK;
}
