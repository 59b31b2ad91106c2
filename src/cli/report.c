#include "cli/report.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>


void vox_run_totals_add(vox_run_totals *t, const vox_transcript *tr) {
    const voxtral_timings *x = &tr->timings;
    voxtral_timings *s = &t->sum;
    s->audio_ms += x->audio_ms;
    s->mel_ms += x->mel_ms;
    s->audio_encoder_ms += x->audio_encoder_ms;
    s->token_embedding_ms += x->token_embedding_ms;
    s->prefill_ms += x->prefill_ms;
    s->decode_ms += x->decode_ms;
    s->total_ms += x->audio_ms + x->mel_ms + x->audio_encoder_ms + x->token_embedding_ms +
                   x->prefill_ms + x->decode_ms;
    s->queue_ms += x->queue_ms;
    s->n_prompt_tokens += x->n_prompt_tokens;
    s->n_generated += x->n_generated;
    if (x->peak_device_bytes > s->peak_device_bytes) s->peak_device_bytes = x->peak_device_bytes;
    t->audio_seconds += tr->audio_seconds;
    t->n_files++;
    t->n_requests += (int)tr->n_segs;
}

/* The load breakdown's times: JSON key (in "load_breakdown_ms") and field. */
static const struct {
    const char *key;
    size_t at;
} load_parts[] = {
#define PART(f) {#f, offsetof(voxtral_load_timings, f##_ms)}
    PART(device),      PART(context),   PART(staging),     PART(blas),
    PART(model_files), PART(tokenizer), PART(device_wait), PART(weights),
    PART(alloc),       PART(serial),    PART(bulk),        PART(read),
    PART(buffer_wait), PART(upload),    PART(upload_after_reads), PART(blas_wait),
    PART(tokenizer_wait), PART(sync),   PART(warmup),
#undef PART
};

static double load_part(const voxtral_load_timings *l, size_t i) {
    return *(const double *)((const char *)l + load_parts[i].at);
}

void vox_run_totals_add_load(vox_run_totals *t, const voxtral_load_timings *l) {
    for (size_t i = 0; i < sizeof load_parts / sizeof *load_parts; i++)
        *(double *)((char *)&t->load + load_parts[i].at) += load_part(l, i);
    t->load.total_ms += l->total_ms;
    t->load.bytes += l->bytes;
    if (l->threads > t->load.threads) t->load.threads = l->threads;
}

/* Where the load went, as lines after `load`. */
static void write_load_lines(FILE *out, const voxtral_load_timings *l) {
    const char *f = "  %-22s %10.2f";
    double gb = l->bytes / 1e9;
    fprintf(out, f, "load: device", l->device_ms);
    /* the rest of the device thread's time: finding a GPU (the driver's start) before creation */
    double rest = l->device_ms - l->context_ms - l->staging_ms;
    fprintf(out, "   (own thread: driver check %.1f, context %.1f, pinned staging %.1f)\n",
            rest > 0 ? rest : 0.0, l->context_ms, l->staging_ms);
    fprintf(out, f, "load: cuBLASLt", l->blas_ms);
    fprintf(out, "   (own thread: the library and its handle)\n");
    fprintf(out, f, "load: model files", l->model_files_ms);
    fprintf(out, "   (manifest, blob headers, weight checks)\n");
    fprintf(out, f, "load: tokenizer", l->tokenizer_ms);
    fprintf(out, "   (own thread)\n");
    fprintf(out, f, "load: device wait", l->device_wait_ms);
    fprintf(out, "   (for the device thread, after the model files)\n");
    fprintf(out, f, "load: weights", l->weights_ms);
    fprintf(out, "   (%.2f GB read in parallel: allocation %.1f, one by one %.1f, parallel %.1f)\n",
            gb, l->alloc_ms, l->serial_ms, l->bulk_ms);
    fprintf(out, f, "load: reads", l->read_ms);
    fprintf(out, "   (mean in pread over %d threads: %.1f GB/s in all)\n", l->threads,
            l->read_ms > 0 ? gb / (l->read_ms / 1e3) : 0.0);
    fprintf(out, f, "load: buffer waits", l->buffer_wait_ms);
    fprintf(out, "   (mean a thread: its uploads were behind its reads)\n");
    fprintf(out, f, "load: uploads", l->upload_ms);
    fprintf(out, "   (device time copying: %.1f GB/s; %.1f of it after the last read)\n",
            l->upload_ms > 0 ? gb / (l->upload_ms / 1e3) : 0.0, l->upload_after_reads_ms);
    fprintf(out, f, "load: cuBLASLt wait", l->blas_wait_ms);
    fputc('\n', out);
    fprintf(out, f, "load: tokenizer wait", l->tokenizer_wait_ms);
    fputc('\n', out);
    fprintf(out, f, "load: sync", l->sync_ms);
    fputc('\n', out);
    fprintf(out, f, "load: warm-up", l->warmup_ms);
    fputc('\n', out);
}

/* Tokens that came from the decode loop: the first of each request comes from prefill. */
static int decoded_tokens(const vox_run_totals *t) {
    int d = t->sum.n_generated - t->n_requests;
    return d > 0 ? d : 0;
}

static double per_second(double amount, double ms) { return ms > 0 ? amount / (ms / 1e3) : 0; }

void vox_write_latency_table(FILE *out, const vox_run_totals *t, const char *device) {
    const voxtral_timings *s = &t->sum;
    int decoded = decoded_tokens(t);
    fprintf(out, "Run latency (ms):\n");
    fprintf(out, "  %-22s %10.2f\n", "load", t->load_ms);
    write_load_lines(out, &t->load);
    fprintf(out, "  %-22s %10.2f\n", "audio", s->audio_ms);
    fprintf(out, "  %-22s %10.2f\n", "mel", s->mel_ms);
    fprintf(out, "  %-22s %10.2f\n", "audio_encoder", s->audio_encoder_ms);
    fprintf(out, "  %-22s %10.2f\n", "token_embedding", s->token_embedding_ms);
    fprintf(out, "  %-22s %10.2f   (%d prompt tokens)\n", "text_decoder prefill", s->prefill_ms,
            s->n_prompt_tokens);
    fprintf(out, "  %-22s %10.2f   (%d tokens, %.3f ms/token)\n", "text_decoder decode",
            s->decode_ms, decoded, decoded ? s->decode_ms / decoded : 0.0);
    fprintf(out, "  %-22s %10.2f   (%d files, %.2f s of audio)\n", "total", s->total_ms,
            t->n_files, t->audio_seconds);
    fprintf(out, "  %-22s %10.2f   (whole run with load and output; %d requests, %d failed%s)\n",
            "wall", t->wall_ms, t->n_requests, t->n_failed, t->interrupted ? ", interrupted" : "");
    fprintf(out, "  %-22s %10.2f   (freeing the models and devices after the run)\n", "teardown",
            t->teardown_ms);
    fprintf(out, "  %-22s %10.2f\n", "tokens/s", per_second(s->n_generated, s->total_ms));
    fprintf(out, "  %-22s %10.2f   (RTFx: seconds of audio per second)\n", "real-time factor",
            per_second(t->audio_seconds, s->total_ms));
    fprintf(out, "  %-22s %10.2f   (over the wall time)\n", "real-time factor wall",
            per_second(t->audio_seconds, t->wall_ms));
    fprintf(out, "  %-22s %10.1f MiB on %s\n", "peak device memory",
            s->peak_device_bytes / (1024.0 * 1024.0), device);
    const voxtral_queue_stats *b = &t->batch;
    fprintf(out, "  %-22s %10d   (most sequences in flight)\n", "batch size", b->max_batch);
    fprintf(out, "  %-22s %10.2f   (sequences a decode step, mean over %ld of %ld steps)\n",
            "mean batch", b->mean_batch, b->decode_steps, b->steps);
    fprintf(out, "  %-22s %10.1f MiB   (pool; %.1f MiB held at most, %.1f%% of it not yet written)\n",
            "KV cache", b->kv_bytes / (1024.0 * 1024.0), b->kv_peak_used_bytes / (1024.0 * 1024.0),
            100.0 * b->kv_waste);
    fprintf(out, "  %-22s %10.2f   (mean per request, ready to admitted)\n", "queue wait",
            t->n_requests ? s->queue_ms / t->n_requests : 0.0);
    if (b->shrinks > 0 && b->smallest_step_limit > 0)
        fprintf(out, "  %-22s %10ld   (decoder steps or encoder groups that failed and ran again "
                "smaller; steps down to %d sequence%s)\n", "batch shrinks", b->shrinks,
                b->smallest_step_limit, b->smallest_step_limit == 1 ? "" : "s");
    else if (b->shrinks > 0) /* encoder groups only */
        fprintf(out, "  %-22s %10ld   (encoder groups that failed and ran again smaller)\n",
                "batch shrinks", b->shrinks);
    for (int i = 0; t->n_devices > 1 && i < t->n_devices; i++) {
        const voxtral_queue_stats *d = &t->device[i];
        char label[40];
        snprintf(label, sizeof label, "device %s", t->device_name[i]);
        fprintf(out, "  %-22s %10.2f   (device ms; %ld requests, %ld steps, mean batch %.2f, "
                "batch size %d, peak %.1f MiB)\n", label, d->gpu_ms, d->requests, d->steps,
                d->mean_batch, d->max_batch, d->peak_device_bytes / (1024.0 * 1024.0));
    }
}

char *vox_latency_json(const vox_run_totals *t, const char *device, bool one_line) {
    const voxtral_timings *s = &t->sum;
    int decoded = decoded_tokens(t);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "device", device);
    cJSON_AddNumberToObject(o, "inputs", t->n_inputs);
    cJSON_AddNumberToObject(o, "files", t->n_files);
    cJSON_AddNumberToObject(o, "failed", t->n_failed);
    cJSON_AddNumberToObject(o, "skipped", t->n_skipped);
    cJSON_AddBoolToObject(o, "interrupted", t->interrupted);
    cJSON_AddNumberToObject(o, "requests", t->n_requests);
    cJSON_AddNumberToObject(o, "audio_seconds", t->audio_seconds);
    cJSON_AddNumberToObject(o, "load_ms", t->load_ms);
    cJSON_AddNumberToObject(o, "wall_ms", t->wall_ms);
    cJSON *lb = cJSON_AddObjectToObject(o, "load_breakdown_ms");
    for (size_t i = 0; i < sizeof load_parts / sizeof *load_parts; i++)
        cJSON_AddNumberToObject(lb, load_parts[i].key, load_part(&t->load, i));
    cJSON_AddNumberToObject(o, "load_bytes", t->load.bytes);
    cJSON_AddNumberToObject(o, "load_threads", t->load.threads);
    cJSON_AddNumberToObject(o, "teardown_ms", t->teardown_ms);
    cJSON_AddNumberToObject(o, "main_start_monotonic_ms", t->main_start_ms);
    cJSON *ms = cJSON_AddObjectToObject(o, "latency_ms");
    cJSON_AddNumberToObject(ms, "audio", s->audio_ms);
    cJSON_AddNumberToObject(ms, "mel", s->mel_ms);
    cJSON_AddNumberToObject(ms, "audio_encoder", s->audio_encoder_ms);
    cJSON_AddNumberToObject(ms, "token_embedding", s->token_embedding_ms);
    cJSON_AddNumberToObject(ms, "text_decoder_prefill", s->prefill_ms);
    cJSON_AddNumberToObject(ms, "text_decoder_decode", s->decode_ms);
    cJSON_AddNumberToObject(ms, "total", s->total_ms);
    cJSON_AddNumberToObject(o, "prompt_tokens", s->n_prompt_tokens);
    cJSON_AddNumberToObject(o, "generated_tokens", s->n_generated);
    cJSON_AddNumberToObject(o, "decode_ms_per_token", decoded ? s->decode_ms / decoded : 0);
    cJSON_AddNumberToObject(o, "tokens_per_second", per_second(s->n_generated, s->total_ms));
    cJSON_AddNumberToObject(o, "rtfx", per_second(t->audio_seconds, s->total_ms));
    cJSON_AddNumberToObject(o, "rtfx_wall", per_second(t->audio_seconds, t->wall_ms));
    cJSON_AddNumberToObject(o, "peak_device_bytes", (double)s->peak_device_bytes);
    const voxtral_queue_stats *b = &t->batch;
    cJSON *bj = cJSON_AddObjectToObject(o, "batch");
    cJSON_AddNumberToObject(bj, "batch_size", b->max_batch);
    cJSON_AddNumberToObject(bj, "mean_batch", b->mean_batch);
    cJSON_AddNumberToObject(bj, "steps", (double)b->steps);
    cJSON_AddNumberToObject(bj, "decode_steps", (double)b->decode_steps);
    cJSON_AddNumberToObject(bj, "kv_bytes", (double)b->kv_bytes);
    cJSON_AddNumberToObject(bj, "kv_peak_bytes", (double)b->kv_peak_used_bytes);
    cJSON_AddNumberToObject(bj, "kv_waste", b->kv_waste);
    cJSON_AddNumberToObject(bj, "queue_wait_ms_mean", t->n_requests ? s->queue_ms / t->n_requests : 0.0);
    cJSON_AddNumberToObject(bj, "shrinks", (double)b->shrinks);
    cJSON_AddNumberToObject(bj, "smallest_step_limit", b->smallest_step_limit);
    if (t->n_devices > 1) {
        cJSON *devs = cJSON_AddArrayToObject(o, "devices");
        for (int i = 0; i < t->n_devices; i++) {
            const voxtral_queue_stats *d = &t->device[i];
            cJSON *dj = cJSON_CreateObject();
            cJSON_AddStringToObject(dj, "device", t->device_name[i]);
            cJSON_AddNumberToObject(dj, "device_ms", d->gpu_ms);
            cJSON_AddNumberToObject(dj, "requests", (double)d->requests);
            cJSON_AddNumberToObject(dj, "steps", (double)d->steps);
            cJSON_AddNumberToObject(dj, "mean_batch", d->mean_batch);
            cJSON_AddNumberToObject(dj, "batch_size", d->max_batch);
            cJSON_AddNumberToObject(dj, "peak_device_bytes", (double)d->peak_device_bytes);
            cJSON_AddItemToArray(devs, dj);
        }
    }
    char *text = one_line ? cJSON_PrintUnformatted(o) : cJSON_Print(o);
    cJSON_Delete(o);
    return text;
}
