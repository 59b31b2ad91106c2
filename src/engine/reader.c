/* Reader threads (reader.h): each takes the next queued request, decodes its file or encoded
 * buffer (or takes its PCM), and cuts it into the pieces the engine will run. */
#include "engine/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "engine/context.h"

/* Longest file accepted when segmenting: 10 h (2.3 GB of 16 kHz float samples). */
#define VOX_SEGMENTED_MAX_SECONDS (10 * 3600.0)

void vox_request_free(vox_request *r) {
    if (!r) return;
    free(r->path);
    free(r->samples);
    free(r->pieces);
    free(r->error);
    free(r->warning);
    if (r->piece_results)
        for (size_t i = 0; i < r->n_pieces; i++) voxtral_result_free(r->piece_results[i]);
    free(r->piece_results);
    free(r);
}

/* Longest buffer kept for reuse: 2^22 floats (262 s, 16 MB), what the decoder reserves at most
 * from a header; a longer file's buffer is freed rather than held for short ones. */
#define VOX_SPARE_MAX_FLOATS ((size_t)1 << 22)

/* Whether the readers are told to stop (a FIFO's reader waiting for its writer asks). */
static bool reader_stopping(void *arg) {
    vox_reader *rd = arg;
    pthread_mutex_lock(&rd->mu);
    bool stop = rd->stop;
    pthread_mutex_unlock(&rd->mu);
    return stop;
}

/* Decodes (files, into `reuse`: a spare buffer of reuse_cap floats, or NULL) and cuts r into
 * pieces; fills status and error on failure. */
static void read_request(vox_reader *rd, vox_request *r, float *reuse, size_t reuse_cap) {
    vox_error err = {0};
    double t0 = vox_wall_ms();
    vox_status st = VOX_OK;
    const double max_s = r->p.segment ? VOX_SEGMENTED_MAX_SECONDS : 0;
    if (!r->path) { /* PCM from the caller: the checks a decoded file gets */
        st = vox_audio_check_samples("the PCM samples", r->samples, r->n_samples, max_s, &err);
    } else { /* a file, or an encoded file in memory */
        vox_audio a;
        st = r->encoded ? vox_audio_load_memory(r->encoded, r->encoded_size, r->path, max_s, &a, &err)
                        : vox_audio_load_reusing(r->path, max_s, reuse, reuse_cap,
                                                 reader_stopping, rd, &a, &err);
        if (st == VOX_ERR_TOO_LONG && !r->p.segment) {
            size_t len = strlen(err.msg);
            snprintf(err.msg + len, sizeof err.msg - len,
                     "; or use --segment to transcribe it in pieces cut at pauses");
        }
        if (!st) {
            r->samples = a.samples;
            r->n_samples = a.n_samples;
            r->samples_cap = a.capacity;
            if (a.warning[0]) r->warning = strdup(a.warning);
        }
    }
    if (!st && r->p.segment) {
        vox_segment_params sp = vox_segment_default_params();
        if (r->p.silence_threshold_db != 0) sp.threshold_db = r->p.silence_threshold_db;
        if (r->p.min_silence_s > 0) sp.min_silence_s = r->p.min_silence_s;
        st = vox_segment_find(r->samples, r->n_samples, VOX_SAMPLE_RATE, &sp, &r->pieces,
                              &r->n_pieces, &err);
    } else if (!st) {
        if (!(r->pieces = malloc(sizeof *r->pieces))) {
            st = vox_fail(&err, VOX_ERR_NOMEM, "out of memory");
        } else {
            r->pieces[0] = (vox_segment){.start = 0, .end = r->n_samples, .audio_start = 0,
                                         .audio_end = r->n_samples};
            r->n_pieces = 1;
        }
    }
    if (!st && r->n_pieces && !(r->piece_results = calloc(r->n_pieces, sizeof *r->piece_results)))
        st = vox_fail(&err, VOX_ERR_NOMEM, "out of memory");
    r->audio_ms = vox_wall_ms() - t0;
    if (st) {
        if (r->path && !vox_message_names(err.msg, r->path))
            vox_error_prefix(&err, "%s", r->path);
        r->status = st;
        r->error = strdup(err.msg);
        free(r->samples);
        r->samples = NULL;
    }
}

static void *reader_main(void *arg) {
    vox_reader *rd = arg;
    pthread_mutex_lock(&rd->mu);
    for (;;) {
        while (!rd->stop && (rd->next_read == rd->n_reqs || rd->held >= rd->read_ahead))
            pthread_cond_wait(&rd->work, &rd->mu);
        if (rd->stop) break;
        vox_request *r = rd->reqs[rd->next_read++];
        rd->held++;
        r->state = VOX_REQ_READING;
        float *reuse = NULL;
        size_t reuse_cap = 0;
        if (r->path && !r->encoded && rd->n_spare > 0) { /* the most recently returned: warmest */
            rd->n_spare--;
            reuse = rd->spare[rd->n_spare];
            reuse_cap = rd->spare_cap[rd->n_spare];
        }
        pthread_mutex_unlock(&rd->mu);
        read_request(rd, r, reuse, reuse_cap);
        pthread_mutex_lock(&rd->mu);
        r->t_ready = vox_wall_ms();
        r->state = r->status ? VOX_REQ_FAILED : VOX_REQ_READY;
        pthread_cond_broadcast(&rd->ready);
    }
    pthread_mutex_unlock(&rd->mu);
    return NULL;
}

vox_status vox_reader_init(vox_reader *rd, int threads, int read_ahead, vox_error *err) {
    memset(rd, 0, sizeof *rd);
    pthread_mutex_init(&rd->mu, NULL);
    pthread_cond_init(&rd->work, NULL);
    pthread_cond_init(&rd->ready, NULL);
    rd->read_ahead = read_ahead < 1 ? 1 : read_ahead;
    rd->spare = malloc((size_t)rd->read_ahead * sizeof *rd->spare);
    rd->spare_cap = malloc((size_t)rd->read_ahead * sizeof *rd->spare_cap);
    if (!rd->spare || !rd->spare_cap) {
        vox_reader_destroy(rd);
        return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
    }
    int n = threads < 1 ? 1 : threads > 8 ? 8 : threads;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&rd->threads[i], NULL, reader_main, rd) != 0) {
            vox_reader_destroy(rd);
            return vox_fail(err, VOX_ERR_NOMEM, "cannot start an audio reader thread");
        }
        rd->n_threads++;
    }
    return VOX_OK;
}

void vox_reader_destroy(vox_reader *rd) {
    pthread_mutex_lock(&rd->mu);
    rd->stop = true;
    pthread_cond_broadcast(&rd->work);
    pthread_mutex_unlock(&rd->mu);
    for (int i = 0; i < rd->n_threads; i++) pthread_join(rd->threads[i], NULL);
    for (size_t i = 0; i < rd->n_reqs; i++) vox_request_free(rd->reqs[i]);
    free(rd->reqs);
    for (int i = 0; i < rd->n_spare; i++) free(rd->spare[i]);
    free(rd->spare);
    free(rd->spare_cap);
    pthread_cond_destroy(&rd->work);
    pthread_cond_destroy(&rd->ready);
    pthread_mutex_destroy(&rd->mu);
    memset(rd, 0, sizeof *rd);
}

vox_status vox_reader_push(vox_reader *rd, vox_request *r, vox_error *err) {
    pthread_mutex_lock(&rd->mu);
    if (rd->n_reqs == rd->cap_reqs) {
        size_t cap = rd->cap_reqs ? 2 * rd->cap_reqs : 64;
        vox_request **n = realloc(rd->reqs, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&rd->mu);
            return vox_fail(err, VOX_ERR_NOMEM, "out of memory");
        }
        rd->reqs = n;
        rd->cap_reqs = cap;
    }
    r->index = rd->n_reqs;
    rd->reqs[rd->n_reqs++] = r;
    pthread_cond_signal(&rd->work);
    pthread_mutex_unlock(&rd->mu);
    return VOX_OK;
}

void vox_reader_release(vox_reader *rd) {
    pthread_mutex_lock(&rd->mu);
    rd->held--;
    pthread_cond_signal(&rd->work);
    pthread_mutex_unlock(&rd->mu);
}

void vox_reader_recycle_locked(vox_reader *rd, vox_request *r) {
    if (r->samples && rd->n_spare < rd->read_ahead && r->samples_cap <= VOX_SPARE_MAX_FLOATS) {
        rd->spare[rd->n_spare] = r->samples;
        rd->spare_cap[rd->n_spare] = r->samples_cap;
        rd->n_spare++;
    } else {
        free(r->samples);
    }
    r->samples = NULL;
    r->samples_cap = 0;
}
