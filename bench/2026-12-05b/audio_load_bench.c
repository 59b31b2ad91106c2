/* Time vox_audio_load_reusing on the CPU machine (NOTES-2026-12-05b section 6): the `audio` stage
 * of a batched run is the reader threads' time in it, summed over files, and counts in the stage
 * total that issue 9's RTFx is measured over.
 *
 *   python3 - <<'PY'   # 64 copies of a 30 s window of the fixture, 16 kHz mono PCM16
 *   import wave; w = wave.open('tests/fixtures/tiny/audio/long.wav'); fr = w.readframes(480000)
 *   for i in range(64):
 *       o = wave.open(f'/tmp/abench/clip{i:02d}.wav', 'wb'); o.setnchannels(1); o.setsampwidth(2)
 *       o.setframerate(16000); o.writeframes(fr); o.close()
 *   PY
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I src -I include bench/2026-12-05b/audio_load_bench.c \
 *       build/libvox_audio.a build/libvox_common.a -lsndfile -lsoxr -lmpg123 -lm -lpthread -o /tmp/abench/bench
 *   /tmp/abench/bench THREADS REUSE LOADS_A_THREAD [FILE]   (e.g. 1 1 512)
 *
 * FILE: load that file every time instead of the 64 clips (NOTES-2026-12-05b section 6 timed a
 * 30 s 48 kHz stereo PCM16 WAV so, 40 loads a round: 2 x 1440000 samples of
 * int(8000 sin(0.01 i)) + uniform integers in [-500, 500], written with Python's wave module).
 * REUSE 1 hands each load the previous one's buffer, as the reader threads do with their spares. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "audio/audio.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int reuse_mode, per_thread;
static const char *one_file; /* FILE, or NULL for the 64 clips */

static void *run(void *arg) {
    double *total = arg;
    float *buf = NULL;
    size_t cap = 0;
    for (int i = 0; i < per_thread; i++) {
        char path[4096];
        if (one_file) snprintf(path, sizeof path, "%s", one_file);
        else snprintf(path, sizeof path, "/tmp/abench/clip%02d.wav", i % 64);
        vox_audio a;
        vox_error e;
        double t0 = now_ms();
        if (vox_audio_load_reusing(path, 0, reuse_mode ? buf : NULL, reuse_mode ? cap : 0, NULL, NULL, &a, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            exit(1);
        }
        *total += now_ms() - t0;
        if (reuse_mode) buf = a.samples, cap = a.capacity;
        else free(a.samples);
    }
    free(reuse_mode ? buf : NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s THREADS REUSE LOADS_A_THREAD [FILE]\n", argv[0]);
        return 2;
    }
    one_file = argc == 5 ? argv[4] : NULL;
    int threads = atoi(argv[1]);
    reuse_mode = atoi(argv[2]), per_thread = atoi(argv[3]);
    if (threads < 1 || threads > 64) return 2;
    pthread_t th[64];
    double total[64] = {0}, t0 = now_ms(), sum = 0;
    for (int i = 0; i < threads; i++) pthread_create(&th[i], NULL, run, &total[i]);
    for (int i = 0; i < threads; i++) pthread_join(th[i], NULL), sum += total[i];
    printf("threads %d reuse %d: %d loads, mean %.3f ms a load (sum %.1f ms), wall %.1f ms\n", threads, reuse_mode,
           threads * per_thread, sum / (threads * per_thread), sum, now_ms() - t0);
    return 0;
}
