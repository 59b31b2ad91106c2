/* Energy-based segmentation: where to cut a recording so that each piece can be transcribed as
 * its own request, and the times the pieces' transcripts are shown at (subtitles, json).
 *
 * Voxtral emits no timestamps, so the times of a transcript come from here: a segment's start
 * and end are where its speech starts and ends, found from the signal's energy. The method,
 * over mono float samples (16 kHz in voxtral_runner, any rate works):
 *
 * 1. Frame levels. The signal is cut into 10 ms hops; a frame is 30 ms (three hops) starting at
 *    each hop, and its level is its mean square (RMS^2). 30 ms spans at least three pitch periods
 *    of a low voice, so voiced speech does not flicker; 10 ms hops give times to +-10 ms.
 * 2. Loud level. The highest mean square over any 0.5 s window. Averaging over half a second
 *    makes it the level of loud speech rather than of a click (a 30 ms click is diluted 17 times,
 *    -12 dB) and keeps it right when a recording is mostly silence (a percentile would not).
 * 3. Silent frames: quieter than the loud level - 35 dB, or than -80 dBFS whatever the level.
 *    35 dB below loud speech sits under the weak consonants and soft endings of normal speech
 *    (20-30 dB down) and above the noise floor of clean recordings (40-60 dB down). The choice
 *    leans deep on purpose: audio taken for silence is never transcribed, so a threshold too
 *    high loses quiet speech (a distant second speaker), while one too low only finds fewer
 *    pauses and leaves the cutting to the length limit (5.): coarser times, nothing lost.
 *    -80 dBFS is about 3 LSB of 16-bit audio: digital silence, dither.
 * 4. Cuts. Speech is every run of non-silent frames, from the start of its first frame to the end
 *    of its last. Two runs closer than 0.5 s are one segment: pauses inside sentences (commas,
 *    hesitations, stop closures) are mostly shorter, pauses between sentences longer. A run
 *    shorter than 0.3 s (a click, a breath, a lone "yes") joins the nearer neighbour when the
 *    gap is at most 1 s, so it is transcribed with context; farther away it stays on its own.
 *    Silence before the first and after the last speech is dropped whatever its length.
 * 5. Length limit. A segment's audio (speech plus padding) is at most 30 s, the model's chunk.
 *    Speech longer than 30 s - 2 x 0.25 s is cut at the quietest point (lowest mean square over
 *    +-0.1 s) between half and all of that length from its start, again until it fits; such cuts
 *    are marked forced, and the segments on each side of one touch (end == next start).
 * 6. Padding. Each segment's audio extends 0.25 s into the silence on each side (never past the
 *    middle of that silence, nor past a forced cut), so that soft onsets and endings that fell
 *    under the threshold still reach the model.
 *
 * Measured on tests/fixtures/tiny/audio/long.wav against its pauses.json (9 sentences, pauses
 * of 0.8-2 s, loud level -16.9 dBFS): 9 segments, every start and end within 0.03 s of the true
 * ones (test_segment.c); the same for any threshold from -20 to -60 dB. The 0.4 s pause after
 * the full stop inside its last sentence is not cut (it is with a minimum silence of 0.3 s).
 * With white noise added, the default finds all 8 pauses up to noise at -55 dBFS (38 dB under
 * the loud level) and none from -50 dBFS; -25 dB finds them up to -45 dBFS, -20 dB up to -40.
 *
 * Pure functions: no I/O, no printing. */
#ifndef VOX_SEGMENT_SEGMENT_H
#define VOX_SEGMENT_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef struct {
    double frame_s;       /* 0.030: window of a frame's level */
    double hop_s;         /* 0.010: frame step, the resolution of the times */
    double loud_window_s; /* 0.5: the loud level is the highest level over windows this long */
    double threshold_db;  /* -35: frames quieter than the loud level + this are silent */
    double floor_db;      /* -80: frames quieter than this (dB full scale) are silent */
    double min_silence_s; /* 0.5: shorter silences inside speech are not cut */
    double min_speech_s;  /* 0.3: shorter speech joins its nearer neighbour ... */
    double merge_gap_s;   /* 1.0: ... when the silence between them is at most this */
    double max_s;         /* 30: most audio in one segment (audio_end - audio_start) */
    double pad_s;         /* 0.25: silence kept on each side of the speech */
} vox_segment_params;

/* One piece of the recording, in samples. */
typedef struct {
    size_t start, end;             /* the speech: first sample, one past the last (its times) */
    size_t audio_start, audio_end; /* what to transcribe: the speech plus its padding */
    bool forced_start, forced_end; /* cut by the length limit inside sound, not in a silence */
} vox_segment;

vox_segment_params vox_segment_default_params(void);

/* Finds the segments of x (n samples at `rate` Hz, full scale +-1). *out (malloc'ed, free() it)
 * receives them in time order, without overlap; none when the signal is all silence (or n is 0).
 * Fails only on invalid parameters (VOX_ERR_INVALID_ARG) or memory (VOX_ERR_NOMEM). */
vox_status vox_segment_find(const float *x, size_t n, double rate, const vox_segment_params *p,
                            vox_segment **out, size_t *n_out, vox_error *err);

#endif
