/* Loading a model onto a device too small for it (src/model/fit.c), on a pretend device: the CPU
 * backend with its memory figures, weight sizes and product name replaced (weights "take" BF16
 * bytes on it, as on a GPU), so that each case can be had without a GPU:
 *   - too little free memory: refused before any weight is made, the message naming the device
 *     and giving the sizes needed and free;
 *   - just enough: loads;
 *   - an upload that runs out of room part way all the same (another process took memory): the
 *     same message, with what was uploaded and the allocation's own reason;
 *   - an upload that fails for another reason, with room left: its own message, unchanged.
 * What is not tested here is a real cudaMalloc failing: that needs a GPU (the CUDA backend's
 * upload reports VOX_ERR_DEVICE, which is what the pretend device returns). */
#include <stdint.h>
#include <string.h>

#include "backend/backend.h"
#include "harness.h"
#include "model/model.h"

static size_t g_free, g_total = (size_t)80 << 30;
static int g_made, g_fail_at = -1;
static size_t g_fail_free; /* free memory once the failing upload happened */
static vox_status (*g_cpu_weight)(vox_backend *, vox_tensor *, const void *, vox_dtype, int,
                                  const int64_t *, bool, const float *, vox_error *);

static size_t pretend_weight_bytes(vox_backend *be, vox_dtype type, int ndim, const int64_t *shape,
                                   bool keep_f32) {
    (void)be, (void)type;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n * (keep_f32 ? 4 : 2);
}

static void pretend_mem_info(vox_backend *be, size_t *free_b, size_t *total_b) {
    (void)be;
    *free_b = g_free;
    *total_b = g_total;
}

static vox_status pretend_weight(vox_backend *be, vox_tensor *dst, const void *src, vox_dtype type,
                                 int ndim, const int64_t *shape, bool keep_f32, const float *scale,
                                 vox_error *err) {
    if (g_made == g_fail_at) {
        g_free = g_fail_free;
        return vox_fail(err, VOX_ERR_DEVICE, "pretend:0: cannot allocate 1.0 MiB of device memory");
    }
    g_made++;
    size_t bytes = pretend_weight_bytes(be, type, ndim, shape, keep_f32);
    g_free = g_free > bytes ? g_free - bytes : 0;
    return g_cpu_weight(be, dst, src, type, ndim, shape, keep_f32, scale, err);
}

/* Loads the tiny model with `free_b` free; returns the status, the message in err. */
static vox_status load(vox_backend *be, size_t free_b, vox_error *err) {
    g_free = free_b;
    g_made = 0;
    vox_model *m = NULL;
    memset(err, 0, sizeof *err);
    vox_status st = vox_model_load(VOX_TINY_MODEL, be, &m, err);
    vox_model_free(m);
    return st;
}

static void expect_has(const char *msg, const char *text) {
    CHECK_MSG(strstr(msg, text) != NULL, "'%s' lacks '%s'", msg, text);
}

int main(void) {
    vox_backend *be = NULL;
    vox_error err = {0};
    if (vox_backend_create("cpu", &be, &err)) {
        fprintf(stderr, "cpu backend: %s\n", err.msg);
        return 1;
    }
    be->name = "pretend:0";
    be->product = "Pretend GPU";
    be->weight_bytes = pretend_weight_bytes;
    be->mem_info = pretend_mem_info;
    g_cpu_weight = be->weight;
    be->weight = pretend_weight;

    /* how much the tiny model's weights take on the pretend device */
    vox_status st = load(be, g_total, &err);
    CHECK_MSG(st == VOX_OK, "with room: %s", err.msg);
    const size_t need = g_total - g_free;
    const int n_weights = g_made;
    CHECK(need > 0 && n_weights > 10);
    char need_text[64];
    snprintf(need_text, sizeof need_text, "its weights need %.1f MiB of device memory",
             (double)need / (1 << 20));

    /* one byte short: refused before any weight is made */
    st = load(be, need - 1, &err);
    CHECK_MSG(st == VOX_ERR_DEVICE && g_made == 0, "one byte short: status %d, %d weights made",
              st, g_made);
    printf("  refused: %s\n", err.msg);
    expect_has(err.msg, "the model does not fit on pretend:0 (Pretend GPU): ");
    expect_has(err.msg, need_text);
    expect_has(err.msg, " of its 80.00 GiB are free");
    expect_has(err.msg, "use another device (-d)");

    /* exactly enough */
    st = load(be, need, &err);
    CHECK_MSG(st == VOX_OK && g_made == n_weights, "exactly enough: %s", err.msg);

    /* the room is taken away while uploading: the fifth weight's allocation fails */
    g_fail_at = 4;
    g_fail_free = 1000;
    st = load(be, need, &err);
    CHECK_MSG(st == VOX_ERR_DEVICE, "room taken away: status %d", st);
    printf("  failed part way: %s\n", err.msg);
    expect_has(err.msg, "the model does not fit on pretend:0 (Pretend GPU): ");
    expect_has(err.msg, need_text);
    expect_has(err.msg, "were uploaded when an allocation failed, and 1.0 KiB of its 80.00 GiB are free");
    expect_has(err.msg, "the upload said: ");
    expect_has(err.msg, "pretend:0: cannot allocate 1.0 MiB");

    /* an upload error with room left is not a fit problem: its own message */
    g_fail_free = g_total;
    st = load(be, g_total, &err);
    CHECK_MSG(st == VOX_ERR_DEVICE && !strstr(err.msg, "does not fit") &&
                  strstr(err.msg, "pretend:0: cannot allocate 1.0 MiB"),
              "room left: %s", err.msg);

    /* the CPU backend itself: weights are views of the files, nothing to fit */
    vox_backend *cpu = NULL;
    CHECK(vox_backend_create("cpu", &cpu, &err) == VOX_OK && cpu->weight_bytes == NULL);
    vox_backend_destroy(cpu);

    be->weight = g_cpu_weight;
    vox_backend_destroy(be);
    return test_finish("test_model_fit");
}
