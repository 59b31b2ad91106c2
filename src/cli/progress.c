#include "cli/progress.h"

#include <math.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void vox_format_duration(double seconds, char *buf, size_t size) {
    long s = seconds > 0 ? lround(seconds) : 0;
    if (s >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else snprintf(buf, size, "%ld:%02ld", s / 60, s % 60);
}

void vox_progress_init(vox_progress *p, bool enabled, FILE *out, size_t n_files) {
    memset(p, 0, sizeof *p);
    p->enabled = enabled;
    p->out = out;
    p->n_files = n_files;
}

void vox_progress_format(const vox_progress *p, double elapsed_ms, char *buf, size_t size) {
    double done = p->audio_done_s + p->cur_done_s;
    double speed = elapsed_ms > 0 ? done / (elapsed_ms / 1e3) : 0; /* audio seconds per second */
    char audio[32], left[32] = "?";
    vox_format_duration(done, audio, sizeof audio);
    if (speed > 0 && p->n_seen > 0) {
        size_t busy = p->done + (p->name[0] ? 1 : 0); /* (skipped ones are done) */
        size_t not_started = p->n_files > busy ? p->n_files - busy : 0;
        double rest = (p->cur_total_s - p->cur_done_s) + (double)not_started * p->seen_s / p->n_seen;
        vox_format_duration(rest > 0 ? rest / speed : 0, left, sizeof left);
    }
    int n = snprintf(buf, size, "[%zu/%zu files] %s of audio, %.1fx real time, %s left", p->done,
                     p->n_files, audio, speed, left);
    if (n > 0 && (size_t)n < size && p->failed)
        n += snprintf(buf + n, size - (size_t)n, ", %zu failed", p->failed);
    if (n > 0 && (size_t)n < size && p->skipped)
        n += snprintf(buf + n, size - (size_t)n, ", %zu skipped", p->skipped);
    if (n > 0 && (size_t)n < size && p->name[0])
        snprintf(buf + n, size - (size_t)n, " | %s", p->name);
}

static void draw(vox_progress *p, bool force) {
    if (!p->enabled) return;
    double t = now_ms();
    if (!force && p->drawn && t - p->last_draw_ms < 200) return;
    char line[256];
    vox_progress_format(p, t - p->start_ms, line, sizeof line);
    fprintf(p->out, "\r\033[K%s", line);
    fflush(p->out);
    p->last_draw_ms = t;
    p->drawn = true;
}

void vox_progress_begin_file(vox_progress *p, const char *path) {
    if (p->start_ms == 0) p->start_ms = now_ms();
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    size_t len = strlen(base);
    if (len < sizeof p->name) memcpy(p->name, base, len + 1);
    else snprintf(p->name, sizeof p->name, "...%s", base + len - (sizeof p->name - 4));
    p->cur_done_s = p->cur_total_s = 0;
    draw(p, true);
}

void vox_progress_update(double done_s, double total_s, int tokens, void *progress) {
    (void)tokens;
    vox_progress *p = progress;
    if (p->cur_total_s == 0 && total_s > 0) { /* the file is decoded: its length is known */
        p->seen_s += total_s;
        p->n_seen++;
    }
    p->cur_done_s = done_s;
    p->cur_total_s = total_s;
    draw(p, false);
}

void vox_progress_end_file(vox_progress *p, double audio_s, bool failed) {
    p->done++;
    if (failed) p->failed++;
    else p->audio_done_s += audio_s;
    if (p->cur_total_s == 0 && !failed) {
        p->seen_s += audio_s;
        p->n_seen++;
    }
    p->cur_done_s = p->cur_total_s = 0;
    p->name[0] = 0;
    draw(p, true);
}

void vox_progress_clear(vox_progress *p) {
    if (!p->enabled || !p->drawn) return;
    fprintf(p->out, "\r\033[K");
    fflush(p->out);
    p->drawn = false;
}

void vox_progress_skip(vox_progress *p) {
    p->done++;
    p->skipped++;
}
