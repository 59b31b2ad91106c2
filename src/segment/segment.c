/* Energy-based segmentation; segment.h explains the method and the choice of each parameter.
 *
 * Everything works on hops (10 ms blocks of samples): block sums of squares are computed once,
 * frame levels and window levels are sums of consecutive blocks, so the cost is one pass over
 * the samples plus a few over the blocks (360,000 of them for 10 hours of audio). */
#include "segment/segment.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

vox_segment_params vox_segment_default_params(void) {
    return (vox_segment_params){
        .frame_s = 0.030,
        .hop_s = 0.010,
        .loud_window_s = 0.5,
        .threshold_db = -35.0,
        .floor_db = -80.0,
        .min_silence_s = 0.5,
        .min_speech_s = 0.3,
        .merge_gap_s = 1.0,
        .max_s = 30.0,
        .pad_s = 0.25,
    };
}

/* Frame levels over hops: level[i] is the mean square of samples [i*hop, i*hop + frame). */
typedef struct {
    size_t hop, frame_hops, n_hops, n;
    double *level; /* n_hops */
    double *cum;   /* n_hops + 1: prefix sums of level (the quietest-point search) */
} levels;

static void levels_free(levels *lv) {
    free(lv->level);
    free(lv->cum);
}

/* Computes the frame levels and returns the silence threshold on them in *thr. */
static vox_status levels_init(levels *lv, const float *x, size_t n, double rate,
                              const vox_segment_params *p, double *thr, vox_error *err) {
    memset(lv, 0, sizeof *lv);
    lv->n = n;
    lv->hop = (size_t)lround(p->hop_s * rate);
    lv->frame_hops = (size_t)lround(p->frame_s / p->hop_s);
    if (lv->hop == 0 || lv->frame_hops == 0)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "segment: hop %g s at %g Hz is too short",
                        p->hop_s, rate);
    lv->n_hops = (n + lv->hop - 1) / lv->hop;
    double *block = malloc(lv->n_hops * sizeof *block);
    lv->level = malloc(lv->n_hops * sizeof *lv->level);
    lv->cum = malloc((lv->n_hops + 1) * sizeof *lv->cum);
    if (!block || !lv->level || !lv->cum) {
        free(block);
        levels_free(lv);
        return vox_fail(err, VOX_ERR_NOMEM, "segment: out of memory");
    }
    for (size_t b = 0; b < lv->n_hops; b++) {
        size_t lo = b * lv->hop, hi = lo + lv->hop < n ? lo + lv->hop : n;
        double s = 0;
        for (size_t i = lo; i < hi; i++) s += (double)x[i] * x[i];
        block[b] = s;
    }
    /* frame i: blocks i .. i + frame_hops - 1 (fewer at the end), as a running sum */
    double run = 0;
    size_t end = 0;
    for (size_t i = 0; i < lv->n_hops; i++) {
        while (end < lv->n_hops && end < i + lv->frame_hops) run += block[end++];
        size_t last = i * lv->hop + lv->frame_hops * lv->hop;
        size_t count = (last < n ? last : n) - i * lv->hop;
        lv->level[i] = run > 0 ? run / (double)count : 0.0;
        run -= block[i];
    }
    lv->cum[0] = 0;
    for (size_t i = 0; i < lv->n_hops; i++) lv->cum[i + 1] = lv->cum[i] + lv->level[i];

    /* loud level: the highest mean square over windows of loud_window_s (the whole signal when
     * it is shorter) */
    size_t w = (size_t)lround(p->loud_window_s / p->hop_s);
    if (w == 0) w = 1;
    if (w > lv->n_hops) w = lv->n_hops;
    double loud = 0, sum = 0;
    size_t samples = 0;
    for (size_t b = 0; b < lv->n_hops; b++) {
        sum += block[b];
        samples += (b + 1) * lv->hop < n ? lv->hop : n - b * lv->hop;
        if (b >= w) {
            sum -= block[b - w];
            samples -= lv->hop; /* only the last block is short */
        }
        if (b + 1 >= w && sum / (double)samples > loud) loud = sum / (double)samples;
    }
    free(block);
    double rel = loud * pow(10.0, p->threshold_db / 10.0), floor = pow(10.0, p->floor_db / 10.0);
    *thr = rel > floor ? rel : floor;
    return VOX_OK;
}

/* A growable array of segments. */
typedef struct {
    vox_segment *v;
    size_t n, cap;
} seg_vec;

static int push(seg_vec *s, size_t start, size_t end) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        vox_segment *q = realloc(s->v, cap * sizeof *q);
        if (!q) return 0;
        s->v = q;
        s->cap = cap;
    }
    s->v[s->n++] = (vox_segment){.start = start, .end = end};
    return 1;
}

/* Runs of non-silent frames, joined across silences shorter than min_silence. */
static int speech_runs(const levels *lv, double thr, size_t min_silence, seg_vec *out) {
    size_t i = 0;
    while (i < lv->n_hops) {
        if (lv->level[i] < thr) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < lv->n_hops && lv->level[j] >= thr) j++;
        size_t start = i * lv->hop, end = (j - 1) * lv->hop + lv->frame_hops * lv->hop;
        if (end > lv->n) end = lv->n;
        if (out->n > 0 && start < out->v[out->n - 1].end + min_silence) {
            out->v[out->n - 1].end = end;
        } else if (!push(out, start, end)) {
            return 0;
        }
        i = j;
    }
    return 1;
}

/* Joins speech shorter than min_speech to its nearer neighbour (gap <= max_gap, joined speech
 * <= max_span), in one pass: into the previous segment, or carried into the next one. */
static void merge_tiny(seg_vec *s, size_t min_speech, size_t max_gap, size_t max_span) {
    size_t m = 0, carry = 0;
    bool carrying = false;
    for (size_t i = 0; i < s->n; i++) {
        vox_segment r = s->v[i];
        if (carrying) r.start = carry;
        carrying = false;
        if (r.end - r.start < min_speech) {
            size_t gp = SIZE_MAX, gn = SIZE_MAX;
            if (m > 0 && r.end - s->v[m - 1].start <= max_span) gp = r.start - s->v[m - 1].end;
            if (i + 1 < s->n && s->v[i + 1].end - r.start <= max_span) gn = s->v[i + 1].start - r.end;
            if (gp <= gn && gp <= max_gap) {
                s->v[m - 1].end = r.end;
                continue;
            }
            if (gn <= max_gap) {
                carrying = true;
                carry = r.start;
                continue;
            }
        }
        s->v[m++] = r;
    }
    s->n = m;
}

/* The sample to cut at in [lo, hi): the centre of the frame whose level summed over +-radius
 * frames is lowest (the first one on ties). */
static size_t quietest(const levels *lv, size_t lo, size_t hi, size_t radius) {
    size_t f0 = (lo + lv->hop - 1) / lv->hop, f1 = hi / lv->hop, best = f0;
    double best_e = INFINITY;
    for (size_t f = f0; f < f1 && f < lv->n_hops; f++) {
        size_t a = f > radius ? f - radius : 0, b = f + radius + 1;
        if (b > lv->n_hops) b = lv->n_hops;
        double e = (lv->cum[b] - lv->cum[a]) / (double)(b - a);
        if (e < best_e) {
            best_e = e;
            best = f;
        }
    }
    size_t c = best * lv->hop + lv->frame_hops * lv->hop / 2;
    return c < lo ? lo : c >= hi ? hi - 1 : c;
}

/* Cuts speech longer than max_span at its quietest points (see segment.h, 5.). */
static int split_long(const levels *lv, seg_vec *in, size_t max_span, size_t radius,
                      seg_vec *out) {
    for (size_t i = 0; i < in->n; i++) {
        vox_segment r = in->v[i];
        bool forced = false;
        while (r.end - r.start > max_span) {
            size_t c = quietest(lv, r.start + max_span / 2, r.start + max_span, radius);
            if (!push(out, r.start, c)) return 0;
            out->v[out->n - 1].forced_start = forced;
            out->v[out->n - 1].forced_end = true;
            r.start = c;
            forced = true;
        }
        if (!push(out, r.start, r.end)) return 0;
        out->v[out->n - 1].forced_start = forced;
    }
    return 1;
}

/* audio_start/audio_end: pad into the silence on each side, at most to its middle. */
static void pad_segments(seg_vec *s, size_t n, size_t pad) {
    for (size_t i = 0; i < s->n; i++) {
        vox_segment *r = &s->v[i];
        size_t lo = i > 0 ? s->v[i - 1].end + (r->start - s->v[i - 1].end) / 2 : 0;
        size_t hi = i + 1 < s->n ? r->end + (s->v[i + 1].start - r->end) / 2 : n;
        r->audio_start = r->forced_start ? r->start : r->start >= lo + pad ? r->start - pad : lo;
        r->audio_end = r->forced_end ? r->end : r->end + pad <= hi ? r->end + pad : hi;
    }
}

static int valid(const vox_segment_params *p, double rate) {
    return rate > 0 && isfinite(rate) && p->hop_s > 0 && p->frame_s >= p->hop_s &&
           p->loud_window_s > 0 && isfinite(p->threshold_db) && p->threshold_db <= 0 &&
           isfinite(p->floor_db) && p->min_silence_s >= 0 && p->min_speech_s >= 0 &&
           p->merge_gap_s >= 0 && p->pad_s >= 0 && isfinite(p->max_s) &&
           p->max_s - 2 * p->pad_s >= 1.0;
}

vox_status vox_segment_find(const float *x, size_t n, double rate, const vox_segment_params *p,
                            vox_segment **out, size_t *n_out, vox_error *err) {
    *out = NULL;
    *n_out = 0;
    if (!valid(p, rate))
        return vox_fail(err, VOX_ERR_INVALID_ARG,
                        "segment: invalid parameters (rate %g Hz, hop %g s, frame %g s, threshold "
                        "%g dB, most %g s with %g s of padding)", rate, p->hop_s, p->frame_s,
                        p->threshold_db, p->max_s, p->pad_s);
    if (n == 0) return VOX_OK;
    levels lv;
    double thr = 0;
    vox_status st = levels_init(&lv, x, n, rate, p, &thr, err);
    if (st) return st;
    const size_t max_span = (size_t)((p->max_s - 2 * p->pad_s) * rate);
    seg_vec runs = {0}, segs = {0};
    int ok = speech_runs(&lv, thr, (size_t)lround(p->min_silence_s * rate), &runs);
    if (ok) {
        merge_tiny(&runs, (size_t)lround(p->min_speech_s * rate),
                   (size_t)lround(p->merge_gap_s * rate), max_span);
        ok = split_long(&lv, &runs, max_span, (size_t)lround(0.1 / p->hop_s), &segs);
    }
    levels_free(&lv);
    free(runs.v);
    if (!ok) {
        free(segs.v);
        return vox_fail(err, VOX_ERR_NOMEM, "segment: out of memory");
    }
    pad_segments(&segs, n, (size_t)lround(p->pad_s * rate));
    *out = segs.v;
    *n_out = segs.n;
    return VOX_OK;
}
