/* Loading weights onto the GPU gives the bytes the one-by-one upload gave, whatever the readers:
 * - the tiny model exported as F32 (every matrix converted to BF16 on the host, the positions
 *   read in parallel), as BF16 (every weight read in parallel, as the full model is) and with an
 *   FP8 decoder (its E4M3 codes and their F32 row scales read in parallel too), loaded
 *   with VOX_LOAD_THREADS=0 (one by one), 1, 3 and 8 readers, and spans of 8 MiB, 3001 bytes
 *   (cut inside tensors, many spans a thread) and 64 KiB: every weight downloaded from the
 *   device equals, bit for bit, the CPU backend's view of it (the mapped file) converted to
 *   BF16 (float32 for the positions), as the backend converts it, and every FP8 weight's codes
 *   and row scales equal the file's;
 * - the breakdown says what ran: parallel bytes = the bytes of the weights not converted;
 * - a blob truncated between open and upload: VOX_ERR_IO naming it, no crash (the one-by-one
 *   path would fault on the mapping instead: it is not run on a truncated file).
 * The three exports are the build's (ctest makes them); VOX_TINY_MODEL, VOX_TINY_MODEL_BF16 and
 * VOX_TINY_MODEL_FP8 in the environment name others (a GPU machine where the build directory has
 * another path: `voxtral_export [--dtype bf16|fp8] --from tests/fixtures/tiny/checkpoint_hf
 * --out DIR`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/gpu_test_util.h"
#include "harness.h"
#include "model/model.h"

/* Weight w of the CPU model as the GPU should hold it: BF16 (F32 when kept so, E4M3 codes when
 * FP8). */
static void *expected_bytes(const vox_tensor *c, bool keep_f32, size_t *nbytes) {
    size_t n = vox_tensor_numel(c);
    if (keep_f32 || c->dtype == VOX_DTYPE_BF16 || c->dtype == VOX_DTYPE_F8_E4M3) { /* as they are */
        *nbytes = vox_tensor_nbytes(c);
        void *p = gtu_malloc(*nbytes);
        memcpy(p, c->data, *nbytes);
        return p;
    }
    uint16_t *o = gtu_malloc(n * 2);
    for (size_t i = 0; i < n; i++) {
        float f = c->dtype == VOX_DTYPE_F32 ? ((const float *)c->data)[i]
                                            : vox_f16_to_f32(((const uint16_t *)c->data)[i]);
        o[i] = vox_f32_to_bf16(f);
    }
    *nbytes = n * 2;
    return o;
}

/* Loads dir on cuda:0 with the reader settings, compares every weight with the CPU's. */
static void check_load(const char *dir, const vox_model *mc, const char *threads, const char *span) {
    setenv("VOX_LOAD_THREADS", threads, 1);
    if (span) setenv("VOX_LOAD_CHUNK_BYTES", span, 1);
    else unsetenv("VOX_LOAD_CHUNK_BYTES");
    vox_error err = {0};
    vox_backend *bg;
    vox_model *mg;
    CHECK_MSG(vox_backend_create("cuda:0", &bg, &err) == VOX_OK, "%s", err.msg);
    CHECK_MSG(vox_model_load(dir, bg, &mg, &err) == VOX_OK, "%s: %s", dir, err.msg);
    CHECK_MSG(bg->sync(bg, &err) == VOX_OK, "%s", err.msg);
    if (vox_test_failures) exit(test_finish("cuda_load"));
    CHECK(mg->n_weights == mc->n_weights && mg->n_weights > 0);
    size_t differ = 0;
    double raw_bytes = 0;
    for (size_t i = 0; i < mg->n_weights; i++) {
        const vox_weight_spec *w = &mg->weights[i];
        const vox_tensor *g = w->dst, *c = mc->weights[i].dst;
        size_t nbytes;
        void *want = expected_bytes(c, w->keep_f32, &nbytes);
        if (c->dtype == g->dtype) raw_bytes += (double)nbytes; /* no conversion: a reader's */
        CHECK_MSG(vox_tensor_nbytes(g) == nbytes, "%s: '%s' is %zu bytes on the device, not %zu",
                  dir, w->name, vox_tensor_nbytes(g), nbytes);
        void *got = gtu_malloc(nbytes);
        gtu_download(got, g->data, nbytes);
        bool same = memcmp(got, want, nbytes) == 0;
        if (c->dtype == VOX_DTYPE_F8_E4M3) { /* and its row scales, read in parallel too */
            size_t sb = (size_t)c->shape[0] * sizeof(float);
            float *gs = gtu_malloc(sb);
            CHECK_MSG(g->dtype == VOX_DTYPE_F8_E4M3 && g->scale, "%s: '%s' is not FP8 on the device",
                      dir, w->name);
            if (g->scale) gtu_download(gs, g->scale, sb);
            same = same && g->scale && memcmp(gs, c->scale, sb) == 0;
            raw_bytes += (double)sb;
            free(gs);
        }
        if (!same) {
            if (differ++ < 5) {
                size_t at = 0;
                while (at < nbytes && ((unsigned char *)got)[at] == ((unsigned char *)want)[at]) at++;
                if (at == nbytes)
                    fprintf(stderr, "%s (threads %s, span %s): '%s': its row scales differ\n", dir,
                            threads, span ? span : "default", w->name);
                else
                    fprintf(stderr, "%s (threads %s, span %s): '%s' differs from byte %zu of %zu\n",
                            dir, threads, span ? span : "default", w->name, at, nbytes);
            }
        }
        free(got);
        free(want);
    }
    CHECK_MSG(differ == 0, "%s (threads %s, span %s): %zu of %zu weights differ", dir, threads,
              span ? span : "default", differ, mg->n_weights);
    int want_threads = atoi(threads);
    if (want_threads == 0) {
        CHECK(bg->load.threads == 0 && bg->load.bytes == 0);
    } else {
        CHECK_MSG(bg->load.bytes == raw_bytes, "%s: %.0f bytes read in parallel, %.0f expected",
                  dir, bg->load.bytes, raw_bytes);
        CHECK(bg->load.threads >= 1 && bg->load.threads <= want_threads);
        CHECK(bg->load.upload_ms > 0 && bg->load.upload_after_reads_ms <= bg->load.upload_ms);
    }
    printf("%-60s threads %s span %-8s: %zu weights equal; %.0f bytes by %d readers in %.2f ms "
           "(reads %.2f, uploads %.2f)\n", dir, threads, span ? span : "default", mg->n_weights,
           bg->load.bytes, bg->load.threads, bg->load.bulk_ms, bg->load.read_ms, bg->load.upload_ms);
    vox_model_free(mg);
    vox_backend_destroy(bg);
}

static void copy_file(const char *from, const char *to) {
    size_t n;
    char *data = test_read_file(from, &n);
    FILE *f = fopen(to, "wb");
    if (!data || !f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot copy %s to %s\n", from, to);
        exit(1);
    }
    free(data);
}

/* A blob cut short after the model was opened (its header checked against its size). */
static void check_truncated(const char *dir) {
    char tmp[256], from[1024], to[1024];
    const char *base = getenv("TMPDIR");
    snprintf(tmp, sizeof tmp, "%s/vox_test_load_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        exit(1);
    }
    const char *files[] = {"voxtral.json", "audio_encoder.safetensors", "token_embedding.safetensors",
                           "text_decoder.safetensors", "tekken.json"};
    for (int i = 0; i < 5; i++) {
        snprintf(from, sizeof from, "%s/%s", dir, files[i]);
        snprintf(to, sizeof to, "%s/%s", tmp, files[i]);
        copy_file(from, to);
    }
    setenv("VOX_LOAD_THREADS", "4", 1);
    setenv("VOX_LOAD_CHUNK_BYTES", "4096", 1);
    vox_error err = {0};
    vox_backend *bg;
    vox_model *m;
    CHECK_MSG(vox_backend_create("cuda:0", &bg, &err) == VOX_OK, "%s", err.msg);
    CHECK_MSG(vox_model_open(tmp, &m, &err) == VOX_OK, "%s", err.msg);
    snprintf(to, sizeof to, "%s/text_decoder.safetensors", tmp);
    struct stat sb;
    CHECK(stat(to, &sb) == 0 && truncate(to, sb.st_size / 2) == 0);
    vox_status st = vox_model_upload(m, bg, &err);
    CHECK_MSG(st == VOX_ERR_IO, "a truncated blob loaded: status %d (%s)", st, err.msg);
    CHECK_MSG(strstr(err.msg, to) != NULL, "the message does not name %s: %s", to, err.msg);
    printf("truncated blob: %s\n", err.msg);
    vox_model_free(m);
    vox_backend_destroy(bg);
    for (int i = 0; i < 5; i++) {
        snprintf(to, sizeof to, "%s/%s", tmp, files[i]);
        unlink(to);
    }
    rmdir(tmp);
}

static const char *model_dir(const char *env, const char *built) {
    const char *v = getenv(env);
    return v && *v ? v : built;
}

int main(void) {
    gtu_require_device();
    const char *dirs[] = {model_dir("VOX_TINY_MODEL", VOX_TINY_MODEL),
                          model_dir("VOX_TINY_MODEL_BF16", VOX_TINY_MODEL_BF16),
                          model_dir("VOX_TINY_MODEL_FP8", VOX_TINY_MODEL_FP8)};
    const struct {
        const char *threads, *span;
    } settings[] = {{"0", NULL}, {"1", NULL}, {"3", "3001"}, {"8", "65536"}, {"8", NULL}};
    for (int d = 0; d < 3; d++) {
        vox_error err = {0};
        vox_backend *bc;
        vox_model *mc;
        CHECK(vox_backend_create("cpu", &bc, &err) == VOX_OK);
        CHECK_MSG(vox_model_load(dirs[d], bc, &mc, &err) == VOX_OK, "%s: %s", dirs[d], err.msg);
        if (vox_test_failures) return test_finish("cuda_load");
        for (size_t k = 0; k < sizeof settings / sizeof *settings; k++)
            check_load(dirs[d], mc, settings[k].threads, settings[k].span);
        vox_model_free(mc);
        vox_backend_destroy(bc);
    }
    check_truncated(dirs[1]);
    return test_finish("cuda_load");
}
