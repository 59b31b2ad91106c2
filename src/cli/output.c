/* The txt writer, and the choice of writer. */
#include "cli/output.h"
#include "common/utf8.h"
#include "common/text.h"

#include <stdlib.h>
#include <string.h>

/* The text of one result as txt shows it: marked when asked, trimmed when segmented, UTF-8. */
static char *txt_text(const voxtral_context *ctx, const voxtral_result *r, bool trim,
                      const vox_output_style *s) {
    char *raw = s->confidence ? vox_mark_result(ctx, r, s->threshold, s->mark) : strdup(r->text);
    char *text = raw ? vox_utf8_repair_dup(raw, strlen(raw)) : NULL;
    free(raw);
    if (!text || !trim) return text;
    char *t = vox_trim_dup(text);
    free(text);
    for (char *c = t; c && *c; c++) /* one line per segment */
        if (*c == '\n' || *c == '\r') *c = ' ';
    return t;
}

static int write_txt(FILE *out, const voxtral_context *ctx, const vox_transcript *t,
                     const vox_output_style *s) {
    if (!t->segmented) {
        char *text = t->n_segs ? txt_text(ctx, t->segs[0].r, false, s) : strdup("");
        if (!text) return -1;
        int rc = fprintf(out, "%s\n", text) < 0 ? -1 : 0;
        free(text);
        return rc;
    }
    for (size_t i = 0; i < t->n_segs; i++) {
        char *text = txt_text(ctx, t->segs[i].r, true, s);
        if (!text) return -1;
        char a[32], b[32];
        vox_format_timestamp(a, sizeof a, t->segs[i].start, '.');
        vox_format_timestamp(b, sizeof b, t->segs[i].end, '.');
        int rc = *text ? fprintf(out, "[%s --> %s]  %s\n", a, b, text) : 0;
        free(text);
        if (rc < 0) return -1;
    }
    return 0;
}

int vox_write_transcript(FILE *out, const voxtral_context *ctx, const vox_transcript *t,
                         const vox_output_style *s) {
    if (s->header && s->format != VOX_OUT_JSON) {
        char *name = vox_utf8_repair_dup(s->header, strlen(s->header)); /* any bytes: a path */
        int rc = name ? fprintf(out, "==> %s <==\n", name) : -1;
        free(name);
        if (rc < 0) return -1;
    }
    switch (s->format) {
    case VOX_OUT_JSON: return vox_write_json_transcript(out, ctx, t);
    case VOX_OUT_SRT: return vox_write_subtitles(out, t, false);
    case VOX_OUT_VTT: return vox_write_subtitles(out, t, true);
    default: return write_txt(out, ctx, t, s);
    }
}
