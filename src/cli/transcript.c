/* A request's result as the CLI's writers see it (transcript.h). */
#include "cli/transcript.h"

#include <stdlib.h>
#include <string.h>

void vox_transcript_free(vox_transcript *t) {
    /* a piece's result is its own, or (a whole file) `whole` itself: freed once */
    for (size_t i = 0; i < t->n_segs; i++)
        if (t->segs[i].r != t->whole) voxtral_result_free(t->segs[i].r);
    free(t->segs);
    voxtral_result_free(t->whole);
    free(t->text);
    memset(t, 0, sizeof *t);
}

vox_status vox_transcript_from_result(vox_transcript *t, const char *path, voxtral_result *r,
                                      bool logprobs, vox_error *err) {
    memset(t, 0, sizeof *t);
    t->path = path;
    t->language = r->language;
    t->logprobs = logprobs;
    t->segmented = r->segmented;
    t->audio_seconds = r->audio_seconds;
    t->timings = r->timings;
    t->warning = r->warning;
    t->whole = r;
    size_t n = r->segmented ? r->n_segments : 1;
    if (n && !(t->segs = calloc(n, sizeof *t->segs))) {
        vox_transcript_free(t);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    if (r->segmented) {
        /* the segments' results move into the transcript */
        for (size_t i = 0; i < n; i++) {
            t->segs[i] = (vox_cli_segment){.start = r->segments[i].start, .end = r->segments[i].end,
                                           .r = r->segments[i].r};
            r->segments[i].r = NULL;
        }
        t->n_segs = n;
    } else {
        t->segs[0] = (vox_cli_segment){.start = 0, .end = r->audio_seconds, .r = r};
        t->n_segs = 1;
    }
    if (!(t->text = strdup(r->text ? r->text : ""))) {
        vox_transcript_free(t);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    return VOX_OK;
}
