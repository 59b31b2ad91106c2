/* The progress line on standard error: files done / total, audio done (h:mm:ss), real-time
 * factor, time left: "[3/10 files] 1:02:03 of audio, 41.5x real time, 4:10 left | talk.wav". Shown only when standard error is a terminal and --no-progress is not
 * given; redrawn in place ("\r", then erase to the end of the line) at most 5 times a second,
 * and erased before any other message so that it never mixes with them. Standard output never
 * sees it.
 *
 * Time left: the audio still to do divided by the speed so far (seconds of audio per second).
 * The audio still to do is the rest of the current file plus, for each file not started, the
 * mean length of the files seen so far: an estimate until the last file starts. */
#ifndef VOX_CLI_PROGRESS_H
#define VOX_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    bool enabled;
    FILE *out;
    size_t n_files, done, failed; /* files: asked for, finished (either way), failed */
    size_t skipped;               /* of the done: skipped, their output being there already */
    double audio_done_s;          /* audio of the files transcribed */
    double seen_s;                /* audio of the files decoded so far, current one included */
    size_t n_seen;
    double cur_done_s, cur_total_s; /* the current file: audio done, its length (0: decoding) */
    double start_ms;              /* when the first file started */
    double last_draw_ms;
    char name[48];                /* the current file's name, shortened */
    bool drawn;                   /* a line is on the terminal */
} vox_progress;

void vox_progress_init(vox_progress *p, bool enabled, FILE *out, size_t n_files);
void vox_progress_begin_file(vox_progress *p, const char *path);
/* vox_cli_progress_fn: how much of the current file is done. */
void vox_progress_update(double done_s, double total_s, int tokens, void *progress);
void vox_progress_end_file(vox_progress *p, double audio_s, bool failed);
/* An input skipped without being read (--skip-existing): done, not counted in the speed. */
void vox_progress_skip(vox_progress *p);
/* Erases the line (call before printing anything else on the same terminal). */
void vox_progress_clear(vox_progress *p);

/* The line's text for elapsed_ms since the start (no "\r"). */
void vox_progress_format(const vox_progress *p, double elapsed_ms, char *buf, size_t size);
/* "1:02:03" or "2:03" (minutes:seconds under an hour). */
void vox_format_duration(double seconds, char *buf, size_t size);

#endif
