/* What a voxtral_context holds (private to the library): the backend, the loaded model and the
 * tokenizer. api.c creates it; the queue (engine.c) runs requests on it. */
#ifndef VOX_ENGINE_CONTEXT_H
#define VOX_ENGINE_CONTEXT_H

#include "backend/backend.h"
#include "common/clock.h"
#include "model/model.h"
#include "tokenizer/tekken.h"
#include "voxtral/voxtral.h"

struct voxtral_context {
    vox_backend *be;
    vox_model *model;
    vox_tokenizer *tok;
    double load_ms;
    bool warming_up; /* voxtral_init's warm-up runs: VOX_FAULT (fault.h) leaves it alone */
    voxtral_load_timings load;
};

/* The transcription prompt (voxtral-spec.md section 5): <s>[INST][BEGIN_AUDIO][AUDIO] x n_audio
 * [/INST](lang:xx)[TRANSCRIBE]; *audio_at = index of the first [AUDIO]. *ids_out is malloc'ed. */
vox_status vox_prompt_build(const voxtral_context *ctx, size_t n_audio, const char *language,
                            int32_t **ids_out, size_t *n_out, size_t *audio_at, vox_error *err);

#endif
