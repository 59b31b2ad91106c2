/* A program outside the tree that uses the installed libvoxtral only through
 * <voxtral/voxtral.h>: built by test_install.sh with pkg-config (shared and static) and with
 * find_package(voxtral) (consumer/CMakeLists.txt).
 *
 *   consumer VERSION MODEL_DIR AUDIO DEVICE IDS [queue]
 *
 * Checks voxtral_version() against VERSION, loads MODEL_DIR on DEVICE ("cpu", "cuda"), transcribes
 * AUDIO (24 tokens at most) with voxtral_transcribe_file and, with "queue", twice more through
 * the queue (one batch of two: the file, and its bytes through voxtral_queue_submit_encoded), and
 * compares the ids with IDS (comma-separated; "-" compares
 * nothing but requires some ids, for the GPU, whose bf16 path may choose differently on the
 * random fixture model). Exit 0 when all hold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <voxtral/voxtral.h>

static int failures;

#define EXPECT(cond, ...)                                                                 \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "consumer: FAIL %s:%d: ", __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

static int32_t want[256];
static size_t n_want;
static int check_ids = 1;

static void compare(const char *what, const voxtral_result *r) {
    if (!check_ids) {
        EXPECT(r->n_ids > 0, "%s: no ids", what);
        return;
    }
    EXPECT(r->n_ids == n_want, "%s: %zu ids, expected %zu", what, r->n_ids, n_want);
    for (size_t i = 0; i < r->n_ids && i < n_want; i++) {
        if (r->ids[i] != want[i]) {
            EXPECT(0, "%s: id %zu is %d, expected %d", what, i, (int)r->ids[i], (int)want[i]);
            break;
        }
    }
}

static int completed;

static void on_complete(const voxtral_completion *c, void *user_data) {
    (void)user_data;
    char what[64];
    snprintf(what, sizeof what, "queue request %llu", (unsigned long long)c->tag);
    EXPECT(c->status == VOX_OK, "%s: %s: %s", what, vox_status_name(c->status),
           c->error ? c->error : "");
    if (c->status == VOX_OK) compare(what, c->result);
    voxtral_result_free(c->result);
    completed++;
}

int main(int argc, char **argv) {
    if (argc != 6 && !(argc == 7 && strcmp(argv[6], "queue") == 0)) {
        fprintf(stderr, "usage: consumer VERSION MODEL_DIR AUDIO DEVICE IDS [queue]\n");
        return 2;
    }
    int use_queue = argc == 7;
    const char *version = argv[1], *model = argv[2], *audio = argv[3], *device = argv[4];
    if (strcmp(argv[5], "-") == 0) {
        check_ids = 0;
    } else {
        for (char *s = argv[5], *end; *s && n_want < 256; s = *end ? end + 1 : end) {
            want[n_want++] = (int32_t)strtol(s, &end, 10);
            if (end == s) return fprintf(stderr, "consumer: bad ids %s\n", argv[5]), 2;
        }
    }

    EXPECT(strcmp(voxtral_version(), version) == 0, "voxtral_version() is %s, expected %s",
           voxtral_version(), version);

    vox_error err = {0};
    voxtral_context_params cp = voxtral_context_default_params();
    cp.model_dir = model;
    cp.device = device;
    cp.warmup = false;
    voxtral_context *ctx = NULL;
    if (voxtral_init(&cp, &ctx, &err) != VOX_OK) {
        fprintf(stderr, "consumer: FAIL voxtral_init(%s, %s): %s\n", model, device, err.msg);
        return 1;
    }
    EXPECT(strstr(voxtral_device_name(ctx), strcmp(device, "cpu") ? "cuda" : "cpu") != NULL,
           "device name %s for %s", voxtral_device_name(ctx), device);

    /* one file */
    voxtral_transcribe_params tp = voxtral_transcribe_default_params();
    tp.max_new_tokens = 24;
    voxtral_result *r = NULL;
    if (voxtral_transcribe_file(ctx, audio, &tp, &r, &err) != VOX_OK) {
        EXPECT(0, "voxtral_transcribe_file(%s): %s", audio, err.msg);
    } else {
        compare("voxtral_transcribe_file", r);
        printf("%s (%s): %zu ids:", device, voxtral_device_name(ctx), r->n_ids);
        for (size_t i = 0; i < r->n_ids && i < 8; i++) printf(" %d", (int)r->ids[i]);
        printf("%s\n", r->n_ids > 8 ? " ..." : "");
        voxtral_result_free(r);
    }

    /* a failure comes back as a status and a message naming the file */
    r = NULL;
    vox_status st = voxtral_transcribe_file(ctx, "/nonexistent/a.wav", &tp, &r, &err);
    EXPECT(st != VOX_OK && r == NULL && strstr(err.msg, "/nonexistent/a.wav"),
           "missing file: status %s, message \"%s\"", vox_status_name(st), err.msg);

    /* the queue: two requests batched */
    if (!use_queue) goto done;
    voxtral_queue_params qp = voxtral_queue_default_params();
    qp.max_batch = 2;
    qp.reader_threads = 1;
    qp.on_complete = on_complete;
    voxtral_queue *q = NULL;
    if (voxtral_queue_create(ctx, &qp, &q, &err) != VOX_OK) {
        EXPECT(0, "voxtral_queue_create: %s", err.msg);
    } else {
        /* the file by path, and the same file's bytes held in memory */
        EXPECT(voxtral_queue_submit_file(q, audio, &tp, 1, &err) == VOX_OK,
               "voxtral_queue_submit_file: %s", err.msg);
        FILE *f = fopen(audio, "rb");
        static unsigned char bytes[1 << 22];
        size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
        EXPECT(f && n > 0 && n < sizeof bytes, "cannot read %s", audio);
        if (f) fclose(f);
        EXPECT(voxtral_queue_submit_encoded(q, bytes, n, "in memory", &tp, 2, &err) == VOX_OK,
               "voxtral_queue_submit_encoded: %s", err.msg);
        EXPECT(voxtral_queue_run(q, &err) == VOX_OK, "voxtral_queue_run: %s", err.msg);
        EXPECT(completed == 2, "%d requests completed, expected 2", completed);
        voxtral_queue_free(q);
    }
done:
    voxtral_free(ctx);
    if (failures) fprintf(stderr, "consumer: %d failures\n", failures);
    return failures ? 1 : 0;
}
