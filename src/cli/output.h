/* What voxtral_runner writes for each file: txt, json (one line), srt or vtt.
 *
 * txt   the transcript and a newline; segmented, one line per segment with speech text:
 *       "[00:00:01.250 --> 00:00:04.100]  text" (whisper-cli's console form).
 * json  one object on one line: file, text, tokens (ids), language (null: detected),
 *       audio_seconds, latency_ms {audio, mel, audio_encoder, token_embedding,
 *       text_decoder_prefill, text_decoder_decode, total}, logprobs (with --logprobs K), and,
 *       segmented, segments [{start, end, text, tokens}] (seconds, rounded to the millisecond).
 * srt   numbered cues "1\n00:00:01,250 --> 00:00:04,100\ntext\n\n".
 * vtt   "WEBVTT\n\n" then cues "00:00:01.250 --> 00:00:04.100\ntext\n\n".
 * Subtitle cues are the segments whose text is not empty, numbered from 1 without gaps; their
 * text is one line (line breaks and control characters become spaces; vtt escapes & < >).
 * Every format is UTF-8: text that is not (a file name can hold any bytes) is written with each
 * ill-formed sequence replaced by U+FFFD. */
#ifndef VOX_CLI_OUTPUT_H
#define VOX_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "cli/confidence.h"
#include "cli/options.h"
#include "cli/transcript.h"

typedef struct {
    vox_output_format format;
    const char *header;  /* txt, srt, vtt: a first line "==> header <==" (several files, stdout) */
    bool confidence;     /* txt: mark low-confidence words */
    double threshold;
    vox_mark_style mark;
} vox_output_style;

/* Writes t to out. Returns 0, or -1 when out of memory or a write failed (errno tells). */
int vox_write_transcript(FILE *out, const voxtral_context *ctx, const vox_transcript *t,
                         const vox_output_style *s);

/* The json line of t (output_json.c). */
int vox_write_json_transcript(FILE *out, const voxtral_context *ctx, const vox_transcript *t);

/* srt or vtt (output_subtitles.c). */
int vox_write_subtitles(FILE *out, const vox_transcript *t, bool vtt);

/* "HH:MM:SS,mmm" (sep ',', srt) or "HH:MM:SS.mmm" (sep '.', vtt and txt), rounded to the
 * millisecond; hours grow past two digits when needed. */
void vox_format_timestamp(char *buf, size_t size, double seconds, char sep);

/* A cue's text: trimmed, one line (CR, LF and other control characters become spaces); for vtt
 * also & < > escaped as &amp; &lt; &gt;. A new string (NULL: out of memory). */
char *vox_cue_text(const char *text, bool vtt);

#endif
