/* srt and vtt: one cue per segment with text (output.h gives the format). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/output.h"
#include "common/utf8.h"
#include "common/text.h"

/* A time as the whole milliseconds it is written as (negative times as 0). */
static long long timestamp_ms(double seconds) { return seconds > 0 ? llround(seconds * 1000.0) : 0; }

void vox_format_timestamp(char *buf, size_t size, double seconds, char sep) {
    long long ms = timestamp_ms(seconds);
    snprintf(buf, size, "%02lld:%02lld:%02lld%c%03lld", ms / 3600000, ms / 60000 % 60,
             ms / 1000 % 60, sep, ms % 1000);
}

char *vox_cue_text(const char *text, bool vtt) {
    char *utf8 = vox_utf8_repair_dup(text, strlen(text));
    size_t len = utf8 ? strlen(utf8) : 0;
    char *out = utf8 ? malloc(5 * len + 1) : NULL, *o = out; /* "&amp;": longest replacement */
    if (!out) {
        free(utf8);
        return NULL;
    }
    for (const unsigned char *p = (const unsigned char *)utf8; *p; p++) {
        const char *rep = NULL;
        if (vtt && *p == '&') rep = "&amp;";
        else if (vtt && *p == '<') rep = "&lt;";
        else if (vtt && *p == '>') rep = "&gt;";
        if (rep) {
            size_t n = strlen(rep);
            memcpy(o, rep, n);
            o += n;
        } else {
            *o++ = (*p < 0x20 || *p == 0x7f) ? ' ' : (char)*p;
        }
    }
    *o = 0;
    free(utf8);
    char *t = vox_trim_dup(out);
    free(out);
    return t;
}

/* A cue's end: after its start once both are rounded to the millisecond (WebVTT requires it,
 * and players drop a cue that ends where it begins), so a segment under half a millisecond (a
 * file that short) is shown for 1 ms. */
static double cue_end(double start, double end) {
    const long long a = timestamp_ms(start);
    return timestamp_ms(end) > a ? end : (double)(a + 1) / 1000.0;
}

int vox_write_subtitles(FILE *out, const vox_transcript *t, bool vtt) {
    if (vtt && fputs("WEBVTT\n\n", out) < 0) return -1;
    const char sep = vtt ? '.' : ',';
    int cue = 0;
    for (size_t i = 0; i < t->n_segs; i++) {
        char *text = vox_cue_text(t->segs[i].r->text, vtt);
        if (!text) return -1;
        int rc = 0;
        if (*text) {
            char a[32], b[32];
            vox_format_timestamp(a, sizeof a, t->segs[i].start, sep);
            vox_format_timestamp(b, sizeof b, cue_end(t->segs[i].start, t->segs[i].end), sep);
            if (!vtt) rc = fprintf(out, "%d\n", ++cue);
            if (rc >= 0) rc = fprintf(out, "%s --> %s\n%s\n\n", a, b, text);
        }
        free(text);
        if (rc < 0) return -1;
    }
    return 0;
}
