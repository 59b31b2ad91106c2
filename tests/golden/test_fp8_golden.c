/* The FP8 scheme (common/fp8.h) against PyTorch, bit for bit where it can be, on the tiny
 * fixture (tests/fixtures/tiny/reference/fp8.safetensors, made by scripts/make_reference.py):
 *  - the E4M3 encoder: torch's float8_e4m3fn codes of every code's value, of every midpoint
 *    between neighbouring codes (ties) and of values a little either side of them, zeros,
 *    subnormals, values up to 464;
 *  - the exporter: every FP8 tensor of the model exported with --dtype fp8 (codes and row
 *    scales of attn.qkv, attn.o, mlp.gate_up, mlp.down of each layer) equals, byte for byte,
 *    what PyTorch's quantization of the same checkpoint gives;
 *  - the CPU backend's FP8 matmul (activation rows quantized at run time) on rows chosen to hit
 *    the scheme's corners (an all-zero row, a row whose x / s fall exactly on ties, a row of
 *    mostly subnormal codes, a single non-zero element), against the simulated layer 0 q|k|v
 *    projection: both quantize the same float32 x to the same codes, so they differ only by
 *    float32 summation order and the order of the scale products: within 1e-5 of the row's
 *    largest |y| (a single code off by one step moves an output by ~1e-2 of it);
 *  - malformed FP8 models are refused at load with a message naming the tensor: a missing or
 *    misshapen scale tensor, a non-positive scale, FP8 outside the decoder's linear layers, FP8
 *    tensors under a manifest without the scheme, and the scheme without FP8 tensors. */
#define _XOPEN_SOURCE 700 /* realpath, mkdtemp, symlink */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "common/fp8.h"
#include "format/safetensors.h"
#include "harness.h"
#include "model/model.h"
#include "format/manifest.h"

static const vox_st_tensor *need(const vox_safetensors *st, const char *name) {
    const vox_st_tensor *t = vox_st_find(st, name);
    CHECK_MSG(t != NULL, "%s: no tensor %s", vox_st_path(st), name);
    return t;
}

static void check_encoder(const vox_safetensors *ref) {
    const vox_st_tensor *v = need(ref, "e4m3.values"), *c = need(ref, "e4m3.codes");
    if (!v || !c) return;
    CHECK(v->dtype == VOX_DTYPE_F32 && c->dtype == VOX_DTYPE_U8 && v->n_elements == c->n_elements);
    int bad = 0;
    for (size_t i = 0; i < v->n_elements; i++) {
        float x;
        memcpy(&x, (const char *)v->data + 4 * i, 4);
        uint8_t want = ((const uint8_t *)c->data)[i], got = vox_f32_to_e4m3(x);
        if (got != want && bad++ < 5) fprintf(stderr, "e4m3(%.9g) = 0x%02x, torch 0x%02x\n", x, got, want);
    }
    CHECK_MSG(bad == 0, "%d of %zu values encode differently from torch", bad, v->n_elements);
    printf("encoder: %zu values, torch's codes for all\n", v->n_elements);
}

static void check_export(const vox_safetensors *ref, const char *model) {
    char path[1024];
    snprintf(path, sizeof path, "%s/text_decoder.safetensors", model);
    vox_safetensors *dec = NULL;
    vox_error err = {0};
    CHECK_MSG(vox_st_open(path, &dec, &err) == VOX_OK, "%s", err.msg);
    if (!dec) return;
    int compared = 0;
    for (size_t i = 0; i < vox_st_count(ref); i++) {
        const vox_st_tensor *r = vox_st_at(ref, i);
        if (strncmp(r->name, "layers.", 7) != 0) continue;
        const vox_st_tensor *t = need(dec, r->name);
        if (!t) continue;
        CHECK_MSG(t->dtype == r->dtype && t->nbytes == r->nbytes &&
                      memcmp(t->data, r->data, r->nbytes) == 0,
                  "%s: %s %zu bytes differs from PyTorch's %s %zu bytes", r->name,
                  vox_dtype_name(t->dtype), t->nbytes, vox_dtype_name(r->dtype), r->nbytes);
        compared++;
    }
    CHECK_MSG(compared == 16, "%d tensors compared, expected 16 (2 layers x 4 x codes + scales)", compared);
    printf("exporter: %d tensors equal PyTorch's quantization byte for byte\n", compared);
    vox_st_close(dec);
}

static void check_matmul(const vox_safetensors *ref, const char *model) {
    const vox_st_tensor *cx = need(ref, "check.x"), *cy = need(ref, "check.qkv_y");
    if (!cx || !cy) return;
    vox_backend *be = NULL;
    vox_model *m = NULL;
    vox_error err = {0};
    CHECK(vox_backend_create("cpu", &be, &err) == VOX_OK);
    CHECK_MSG(vox_model_load(model, be, &m, &err) == VOX_OK, "%s", err.msg);
    if (!m) {
        vox_backend_destroy(be);
        return;
    }
    const vox_tensor *w = &m->dec_layers[0].qkv;
    CHECK(w->dtype == VOX_DTYPE_F8_E4M3 && w->scale);
    int64_t R = cx->shape[0], K = cx->shape[1], N = w->shape[0];
    CHECK(cy->shape[0] == R && cy->shape[1] == N && w->shape[1] == K);
    float *x = malloc((size_t)(R * K) * 4), *y = malloc((size_t)(R * N) * 4);
    float *want = malloc((size_t)(R * N) * 4);
    memcpy(x, cx->data, cx->nbytes);
    memcpy(want, cy->data, cy->nbytes);
    vox_tensor tx = {.data = x, .dtype = VOX_DTYPE_F32, .ndim = 2, .shape = {R, K}};
    vox_tensor ty = {.data = y, .dtype = VOX_DTYPE_F32, .ndim = 2, .shape = {R, N}};
    be->matmul(be, &ty, &tx, w, NULL);
    double worst = 0;
    for (int64_t r = 0; r < R; r++) {
        double top = 0;
        for (int64_t n = 0; n < N; n++) top = fmax(top, fabs(want[r * N + n]));
        for (int64_t n = 0; n < N; n++) {
            double d = fabs((double)y[r * N + n] - want[r * N + n]);
            CHECK_MSG(d <= 1e-5 * top, "row %lld col %lld: %.9g, PyTorch %.9g", (long long)r,
                      (long long)n, y[r * N + n], want[r * N + n]);
            if (top > 0) worst = fmax(worst, d / top);
            if (top == 0) CHECK(y[r * N + n] == 0.0f);
        }
    }
    printf("matmul: %lld rows x %lld outputs, worst |delta| %.2e of the row's largest output\n",
           (long long)R, (long long)N, worst);
    free(x), free(y), free(want);
    vox_model_free(m);
    vox_backend_destroy(be);
}

/* ---- malformed models ------------------------------------------------------------------------ */

static char tmp_dir[64];

/* tmp_dir as a copy of `model` (links to its files) whose text_decoder.safetensors is the
 * model's with tensor `drop` left out and `add` (when named) added, and whose manifest records
 * no quantization when no_scheme is set. */
static void make_variant(const char *model, const char *drop, const char *add, vox_dtype add_dt,
                         int add_ndim, const int64_t *add_shape, const void *add_data,
                         int no_scheme) {
    char src[1200], dst[1200];
    const char *files[] = {"audio_encoder.safetensors", "token_embedding.safetensors", "tekken.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(src, sizeof src, "%s/%s", model, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", tmp_dir, files[i]);
        remove(dst);
        CHECK(symlink(src, dst) == 0);
    }
    vox_manifest m;
    vox_error err = {0};
    CHECK(vox_manifest_read(model, &m, &err) == VOX_OK);
    if (no_scheme) m.decoder.quant = VOX_QUANT_NONE;
    CHECK_MSG(vox_manifest_write(tmp_dir, &m, &err) == VOX_OK, "%s", err.msg);
    snprintf(src, sizeof src, "%s/text_decoder.safetensors", model);
    snprintf(dst, sizeof dst, "%s/text_decoder.safetensors", tmp_dir);
    vox_safetensors *st = NULL;
    CHECK(vox_st_open(src, &st, &err) == VOX_OK);
    vox_st_writer *w = vox_st_writer_new();
    for (size_t i = 0; st && i < vox_st_count(st); i++) {
        const vox_st_tensor *t = vox_st_at(st, i);
        if ((drop && strcmp(t->name, drop) == 0) || (add && strcmp(t->name, add) == 0)) continue;
        CHECK(vox_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, &err) == VOX_OK);
    }
    if (add) CHECK(vox_st_writer_add(w, add, add_dt, add_ndim, add_shape, add_data, &err) == VOX_OK);
    CHECK_MSG(vox_st_writer_save(w, dst, &err) == VOX_OK, "%s", err.msg);
    vox_st_writer_free(w);
    vox_st_close(st);
}

static void expect_refused(const char *what, const char *needle) {
    vox_backend *be = NULL;
    vox_model *m = NULL;
    vox_error err = {0};
    CHECK(vox_backend_create("cpu", &be, &err) == VOX_OK);
    vox_status st = vox_model_load(tmp_dir, be, &m, &err);
    CHECK_MSG(st == VOX_ERR_FORMAT && strstr(err.msg, needle), "%s: status %d, '%s' (want '%s')",
              what, st, err.msg, needle);
    printf("refused, %s: %s\n", what, err.msg);
    vox_model_free(m);
    vox_backend_destroy(be);
}

static void check_malformed(const char *model_dir) {
    char model[PATH_MAX];
    if (!realpath(model_dir, model)) {
        CHECK_MSG(0, "%s: no such directory", model_dir);
        return;
    }
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/vox_fp8_golden_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        CHECK_MSG(0, "mkdtemp failed");
        return;
    }
    const char *os = "layers.1.attn.o.weight_scale";
    float scales[129];
    for (int i = 0; i < 129; i++) scales[i] = 0.01f;
    int64_t shape1[1] = {129}, shape2[2] = {128, 1};
    make_variant(model, os, NULL, VOX_DTYPE_F32, 0, NULL, NULL, 0);
    expect_refused("no scale tensor", "has no row scales 'layers.1.attn.o.weight_scale'");
    make_variant(model, NULL, os, VOX_DTYPE_F32, 1, shape1, scales, 0);
    expect_refused("129 scales for 128 rows", "'layers.1.attn.o.weight_scale' is F32 [129]");
    make_variant(model, NULL, os, VOX_DTYPE_F32, 2, shape2, scales, 0);
    expect_refused("scales [128, 1]", "must be F32 [128]");
    scales[17] = 0.0f;
    shape1[0] = 128;
    make_variant(model, NULL, os, VOX_DTYPE_F32, 1, shape1, scales, 0);
    expect_refused("a zero scale", "row 17's scale is 0");
    uint8_t *codes = calloc(1400 * 128, 1);
    int64_t lm[2] = {1400, 128};
    make_variant(model, NULL, "lm_head.weight", VOX_DTYPE_F8_E4M3, 2, lm, codes, 0);
    expect_refused("FP8 lm_head", "'lm_head.weight' is F8_E4M3; only the text decoder's linear layers");
    make_variant(model, NULL, NULL, VOX_DTYPE_F32, 0, NULL, NULL, 1);
    expect_refused("FP8 without the scheme", "voxtral.json records no quantization");
    free(codes);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    CHECK(system(cmd) == 0);
}

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : VOX_TINY_MODEL;
    vox_safetensors *ref = NULL;
    vox_error err = {0};
    if (vox_st_open(VOX_FIXTURES "/tiny/reference/fp8.safetensors", &ref, &err))
        TEST_SKIP("%s (run scripts/make_reference.py)", err.msg);
    check_encoder(ref);
    check_export(ref, model);
    check_matmul(ref, model);
    check_malformed(model);
    vox_st_close(ref);
    return test_finish("fp8_golden");
}
