/* safetensors reader and writer on real files in a temporary directory.
 *
 * - round trip: every dtype class the model uses, a 0-d scalar, zero-size tensors, metadata and
 *   names that need JSON escaping; every byte read back is compared, and the file layout (header
 *   length, padding, alignment) is checked byte by byte;
 * - hostile files: one file per broken rule; each must fail with VOX_ERR_FORMAT (VOX_ERR_IO when
 *   there is no file) and a message that names the file and the problem;
 * - robustness: every truncation of a valid file, and every byte of it overwritten with a few
 *   chosen values: open either succeeds with a consistent table or fails cleanly (run it under
 *   -DVOX_SANITIZE=ON for the "no crash, no leak" half of the claim);
 * - writer errors: bad arguments, an unwritable directory, a write cut short (RLIMIT_FSIZE).
 * Set VOX_TEST_KEEP_TMP=1 to keep the files (to read them with Python's safetensors, say). */
#include "format/safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "temp_files.h"

static char tmpdir[200];

static void path_in(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}


/* A file whose first 8 bytes declare `declared` header bytes, followed by `header` (its real
 * length) and data_len bytes of data (a counting pattern). */
static void make_raw(const char *path, uint64_t declared, const char *header, size_t header_len,
                     size_t data_len) {
    size_t n = 8 + header_len + data_len;
    unsigned char *p = malloc(n);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(declared >> (8 * i));
    memcpy(p + 8, header, header_len);
    for (size_t i = 0; i < data_len; i++) p[8 + header_len + i] = (unsigned char)i;
    write_file(path, p, n);
    free(p);
}

static void make_st(const char *path, const char *header, size_t data_len) {
    make_raw(path, strlen(header), header, strlen(header), data_len);
}

/* Opens path expecting failure with `code`, a message naming the file and containing needle. */
static void expect_fail_at(int line, const char *path, vox_status code, const char *needle) {
    vox_safetensors *st = (vox_safetensors *)&st; /* must be reset to NULL */
    vox_error err = {0};
    vox_status s = vox_st_open(path, &st, &err);
    CHECK_MSG(s == code, "line %d: %s: status %d (%s), expected %d", line, path, (int)s,
              err.msg, (int)code);
    CHECK_MSG(st == NULL, "line %d: handle not NULL on failure", line);
    CHECK_MSG(err.code == code, "line %d: err.code %d", line, (int)err.code);
    CHECK_MSG(strstr(err.msg, path) != NULL, "line %d: message does not name the file: %s", line,
              err.msg);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: message lacks '%s': %s", line, needle,
              err.msg);
    if (s == VOX_OK) vox_st_close(st);
}
#define expect_fail(path, code, needle) expect_fail_at(__LINE__, path, code, needle)

static vox_safetensors *open_ok_at(int line, const char *path) {
    vox_safetensors *st = NULL;
    vox_error err = {0};
    vox_status s = vox_st_open(path, &st, &err);
    CHECK_MSG(s == VOX_OK && st, "line %d: %s: %s", line, path, err.msg);
    return s == VOX_OK ? st : NULL;
}
#define open_ok(path) open_ok_at(__LINE__, path)

/* ---- round trip ---------------------------------------------------------------------------- */

typedef struct {
    const char *name;
    vox_dtype dtype;
    int ndim;
    int64_t shape[VOX_ST_MAX_DIMS];
    size_t n_elements;
    const void *data;
} spec;

static void test_round_trip(void) {
    float f32[2 * 3];
    for (int i = 0; i < 6; i++) f32[i] = (float)i * 1.5f - 3.0f;
    f32[5] = -0.0f;
    /* bf16 bit patterns: 1, -2, +inf, a NaN, the smallest subnormal, 0 */
    uint16_t bf16[6] = {0x3f80, 0xc000, 0x7f80, 0x7fc1, 0x0001, 0x0000};
    int32_t i32[2 * 2 * 2] = {0, 1, -1, INT32_MAX, INT32_MIN, 42, -42, 7};
    float scalar = 3.25f;
    uint8_t u8[3] = {1, 2, 255}; /* odd size: the tensors after it start unaligned */
    double f64[2] = {1e300, -2.5};
    float eight[4] = {1, 2, 3, 4};

    const spec specs[] = {
        {"f32", VOX_DTYPE_F32, 2, {2, 3}, 6, f32},
        {"bf16", VOX_DTYPE_BF16, 1, {6}, 6, bf16},
        {"i32", VOX_DTYPE_I32, 3, {2, 2, 2}, 8, i32},
        {"scalar", VOX_DTYPE_F32, 0, {0}, 1, &scalar},
        {"empty", VOX_DTYPE_F32, 2, {0, 7}, 0, NULL},
        {"u8", VOX_DTYPE_U8, 1, {3}, 3, u8},
        {"empty.after.odd", VOX_DTYPE_BF16, 1, {0}, 0, NULL},
        {"f64", VOX_DTYPE_F64, 1, {2}, 2, f64},
        {"quote\"back\\slash/\xc3\xa9\t", VOX_DTYPE_F32, 8, {1, 2, 1, 1, 1, 1, 1, 2}, 4, eight},
    };
    const size_t n_specs = sizeof specs / sizeof specs[0];

    char path[512];
    path_in(path, sizeof path, "round_trip.safetensors");

    vox_error err = {0};
    vox_st_writer *w = vox_st_writer_new();
    CHECK(w != NULL);
    for (size_t i = 0; i < n_specs; i++) {
        vox_status s = vox_st_writer_add(w, specs[i].name, specs[i].dtype, specs[i].ndim,
                                         specs[i].shape, specs[i].data, &err);
        CHECK_MSG(s == VOX_OK, "add %s: %s", specs[i].name, err.msg);
    }
    CHECK(vox_st_writer_set_metadata(w, "format", "pt", &err) == VOX_OK);
    CHECK(vox_st_writer_set_metadata(w, "note", "first", &err) == VOX_OK);
    CHECK(vox_st_writer_set_metadata(w, "note", "\xc3\xbcnic\"ode\" \\ \n", &err) == VOX_OK);
    CHECK_MSG(vox_st_writer_save(w, path, &err) == VOX_OK, "save: %s", err.msg);
    char replaced[512];
    path_in(replaced, sizeof replaced, "replaced.safetensors");
    CHECK(vox_st_writer_save(w, replaced, &err) == VOX_OK);
    vox_st_writer_free(w);
    CHECK(temporaries_in(tmpdir) == 0);

    /* The layout, byte by byte. */
    size_t size = 0;
    unsigned char *raw = (unsigned char *)test_read_file(path, &size);
    CHECK(raw != NULL && size > 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | raw[i];
    size_t data_size = 0;
    for (size_t i = 0; i < n_specs; i++)
        data_size += specs[i].n_elements * vox_dtype_size(specs[i].dtype);
    CHECK((8 + n) % 8 == 0);
    CHECK(8 + n + data_size == size);
    CHECK(raw[8] == '{');
    size_t last = 8 + (size_t)n - 1;
    while (last > 8 && raw[last] == ' ') last--;
    CHECK(raw[last] == '}');
    CHECK(8 + n - 1 - last < 8); /* at most 7 bytes of padding */
    CHECK(memcmp(raw + 9, "\"__metadata__\":{\"format\":\"pt\"", 29) == 0);

    vox_safetensors *st = open_ok(path);
    if (st) {
        CHECK(strcmp(vox_st_path(st), path) == 0);
        CHECK(vox_st_count(st) == n_specs);
        size_t offset = 0;
        const unsigned char *data0 = vox_st_at(st, 0)->data;
        CHECK(data0 == NULL || ((uintptr_t)data0 % 8) == 0);
        /* File order: by element size, largest first, insertion order among equals. */
        size_t order[64];
        CHECK(n_specs <= 64);
        size_t n_order = 0;
        for (size_t size_class = 8; size_class >= 1; size_class /= 2)
            for (size_t i = 0; i < n_specs && n_order < 64; i++)
                if (vox_dtype_size(specs[i].dtype) == size_class) order[n_order++] = i;
        CHECK(n_order == n_specs);
        for (size_t i = 0; i < n_order && i < vox_st_count(st); i++) {
            const spec *e = &specs[order[i]];
            const vox_st_tensor *t = vox_st_at(st, i);
            CHECK_MSG(((uintptr_t)t->data % vox_dtype_size(t->dtype)) == 0,
                      "%s is not aligned to its element size", t->name);
            size_t nbytes = e->n_elements * vox_dtype_size(e->dtype);
            CHECK_MSG(strcmp(t->name, e->name) == 0, "at(%zu) is '%s', expected '%s'", i,
                      t->name, e->name);
            CHECK(t->dtype == e->dtype);
            CHECK(t->ndim == e->ndim);
            for (int d = 0; d < e->ndim; d++) CHECK(t->shape[d] == e->shape[d]);
            CHECK(t->n_elements == e->n_elements);
            CHECK(t->nbytes == nbytes);
            CHECK(t->data == data0 + offset); /* consecutive, in file order */
            CHECK(memcmp(t->data, raw + 8 + n + offset, nbytes) == 0);
            if (nbytes) CHECK_MSG(memcmp(t->data, e->data, nbytes) == 0, "data of %s", e->name);
            CHECK(vox_st_find(st, e->name) == t);
            offset += nbytes;
        }
        CHECK(vox_st_at(st, n_specs) == NULL);
        CHECK(vox_st_find(st, "nope") == NULL);
        CHECK(vox_st_find(st, "") == NULL);
        CHECK(vox_st_find(st, "f3") == NULL);
        CHECK(vox_st_find(st, "f320") == NULL);
        const char *fmt = vox_st_metadata(st, "format"), *note = vox_st_metadata(st, "note");
        CHECK(fmt && strcmp(fmt, "pt") == 0);
        CHECK(note && strcmp(note, "\xc3\xbcnic\"ode\" \\ \n") == 0);
        CHECK(vox_st_metadata(st, "missing") == NULL);
        vox_st_close(st);
    }
    free(raw);

    /* Saving over an existing file replaces it. */
    w = vox_st_writer_new();
    CHECK(vox_st_writer_add(w, "only", VOX_DTYPE_I32, 1, (int64_t[]){2}, i32, &err) == VOX_OK);
    CHECK(vox_st_writer_save(w, replaced, &err) == VOX_OK);
    vox_st_writer_free(w);
    st = open_ok(replaced);
    if (st) {
        CHECK(vox_st_count(st) == 1);
        CHECK(vox_st_metadata(st, "format") == NULL);
        const vox_st_tensor *t = vox_st_find(st, "only");
        CHECK(t && t->nbytes == 8 && memcmp(t->data, i32, 8) == 0);
        vox_st_close(st);
    }

    /* An empty writer writes a valid empty file: "{}" padded to 8 bytes. */
    path_in(path, sizeof path, "empty.safetensors");
    w = vox_st_writer_new();
    CHECK(vox_st_writer_save(w, path, &err) == VOX_OK);
    vox_st_writer_free(w);
    raw = (unsigned char *)test_read_file(path, &size);
    CHECK(raw && size == 16 && raw[0] == 8 && memcmp(raw + 8, "{}      ", 8) == 0);
    free(raw);
    st = open_ok(path);
    if (st) {
        CHECK(vox_st_count(st) == 0);
        CHECK(vox_st_at(st, 0) == NULL);
        CHECK(vox_st_find(st, "x") == NULL);
        CHECK(vox_st_metadata(st, "x") == NULL);
        vox_st_close(st);
    }
}

/* Many tensors, added in an order unlike the sorted one: vox_st_find must find every one. */
static void test_many(void) {
    enum { N = 1000 };
    static int32_t values[N];
    char name[64], path[512];
    vox_error err = {0};
    vox_st_writer *w = vox_st_writer_new();
    for (int i = 0; i < N; i++) {
        int k = (i * 389) % N; /* 389 is prime to 1000: a permutation */
        values[i] = k * 7 - 3;
        snprintf(name, sizeof name, "layers.%d.w", k);
        CHECK(vox_st_writer_add(w, name, VOX_DTYPE_I32, 1, (int64_t[]){1}, &values[i], &err) ==
              VOX_OK);
    }
    path_in(path, sizeof path, "many.safetensors");
    CHECK(vox_st_writer_save(w, path, &err) == VOX_OK);
    vox_st_writer_free(w);
    vox_safetensors *st = open_ok(path);
    if (!st) return;
    CHECK(vox_st_count(st) == N);
    int found = 0;
    for (int k = 0; k < N; k++) {
        snprintf(name, sizeof name, "layers.%d.w", k);
        const vox_st_tensor *t = vox_st_find(st, name);
        int32_t v;
        if (t && t->nbytes == 4) {
            memcpy(&v, t->data, 4);
            found += v == k * 7 - 3 && strcmp(t->name, name) == 0;
        }
    }
    CHECK(found == N);
    for (int i = 0; i < N; i++) {
        int32_t v;
        memcpy(&v, vox_st_at(st, (size_t)i)->data, 4);
        CHECK(v == values[i]);
    }
    vox_st_close(st);
}

/* Hand-written headers that are valid, including forms our writer does not produce. */
static void test_valid_variants(void) {
    char path[512];
    path_in(path, sizeof path, "variants.safetensors");

    /* JSON order differs from file order; a zero-size tensor shares its offset with another;
     * pretty-printed with newlines and tabs; padded with spaces; metadata last. */
    make_st(path,
            "{\n\t\"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]},\n"
            "\t\"z\": {\"shape\": [0, 3], \"data_offsets\": [4, 4], \"dtype\": \"BF16\"},\n"
            "\t\"a\": {\"data_offsets\": [0, 4], \"dtype\": \"I32\", \"shape\": [1]},\n"
            "\t\"__metadata__\": {}\n}\n   ",
            8);
    vox_safetensors *st = open_ok(path);
    if (st) {
        CHECK(vox_st_count(st) == 3);
        const char *order[3] = {"a", "z", "b"};
        for (size_t i = 0; i < 3; i++) CHECK(strcmp(vox_st_at(st, i)->name, order[i]) == 0);
        const vox_st_tensor *z = vox_st_find(st, "z");
        CHECK(z && z->ndim == 2 && z->shape[0] == 0 && z->shape[1] == 3 && z->nbytes == 0 &&
              z->n_elements == 0 && z->dtype == VOX_DTYPE_BF16);
        const unsigned char *b = vox_st_find(st, "b")->data, *a = vox_st_find(st, "a")->data;
        CHECK(b == a + 4 && a[0] == 0 && a[3] == 3 && b[0] == 4 && b[3] == 7);
        vox_st_close(st);
    }

    /* Only metadata, no tensors, no data. */
    make_st(path, "{\"__metadata__\":{\"a\":\"1\",\"b\":\"\"}}", 0);
    st = open_ok(path);
    if (st) {
        CHECK(vox_st_count(st) == 0);
        CHECK(vox_st_metadata(st, "a") && strcmp(vox_st_metadata(st, "a"), "1") == 0);
        CHECK(vox_st_metadata(st, "b") && strcmp(vox_st_metadata(st, "b"), "") == 0);
        vox_st_close(st);
    }

    /* Every dtype, each with 3 elements; names escaped in the JSON ("\u00e9" is "é"). */
    char header[4096], *p = header;
    size_t offset = 0;
    p += sprintf(p, "{");
    for (int t = 0; t < VOX_DTYPE_COUNT; t++) {
        size_t nb = 3 * vox_dtype_size((vox_dtype)t);
        p += sprintf(p,
                     "%s\"t\\u00e9%s\":{\"dtype\":\"%s\",\"shape\":[3],\"data_offsets\":[%zu,%zu]}",
                     t ? "," : "", vox_dtype_name((vox_dtype)t), vox_dtype_name((vox_dtype)t),
                     offset, offset + nb);
        offset += nb;
    }
    sprintf(p, "}");
    make_st(path, header, offset);
    st = open_ok(path);
    if (st) {
        CHECK(vox_st_count(st) == VOX_DTYPE_COUNT);
        for (int t = 0; t < VOX_DTYPE_COUNT; t++) {
            char name[64];
            snprintf(name, sizeof name, "t\xc3\xa9%s", vox_dtype_name((vox_dtype)t));
            const vox_st_tensor *e = vox_st_find(st, name);
            CHECK_MSG(e && e->dtype == (vox_dtype)t && e->n_elements == 3, "%s", name);
        }
        vox_st_close(st);
    }
}

/* ---- hostile files ------------------------------------------------------------------------- */

#define T1(dtype, shape, offsets)                                                            \
    "{\"x\":{\"dtype\":" dtype ",\"shape\":" shape ",\"data_offsets\":" offsets "}}"

static const struct {
    const char *what, *header;
    size_t data;
    const char *needle;
} bad_headers[] = {
    {"empty header", "", 0, "not valid JSON"},
    {"not JSON", "not json", 0, "not valid JSON"},
    {"truncated JSON", "{\"x\":{\"dtype\":\"F32\"", 0, "not valid JSON"},
    {"an array", "[1,2]", 0, "header is an array, not a JSON object"},
    {"a string", "\"str\"", 0, "header is a string, not a JSON object"},
    {"a number", "123", 0, "header is a number, not a JSON object"},
    {"null", "null", 0, "header is null, not a JSON object"},
    {"data after the object", "{} x", 0, "data after the JSON value"},
    {"two objects", "{}{}", 0, "data after the JSON value"},
    {"invalid UTF-8", "{\"a\xff\":1}", 0, "not valid UTF-8"},
    {"overlong UTF-8", "{\"a\xc0\xaf\":1}", 0, "not valid UTF-8"},
    {"UTF-8 surrogate", "{\"a\xed\xa0\x80\":1}", 0, "not valid UTF-8"},
    {"truncated UTF-8", "{\"a\":1}\xe2\x82", 0, "not valid UTF-8"},
    {"byte-order mark", "\xef\xbb\xbf{}", 0, "non-ASCII byte outside strings"},
    {"control byte in a name", "{\"a\x01\":1}", 0, "control byte 0x01"},
    {"control byte as whitespace", "{\x0b}", 0, "control byte 0x0b"},
    {"escaped NUL in a name",
     "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
     "escaped NUL"},
    {"lone surrogate escape", "{\"a\\udc00\":1}", 0, "not valid JSON"},
    {"entry not an object", "{\"x\":[1]}", 0, "tensor 'x': entry is an array, not an object"},
    {"empty name", "{\"\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1,
     "a tensor has an empty name"},
    {"unknown dtype", T1("\"F33\"", "[1]", "[0,4]"), 4, "tensor 'x': unknown dtype 'F33'"},
    {"lower-case dtype", T1("\"f32\"", "[1]", "[0,4]"), 4, "unknown dtype 'f32'"},
    {"dtype a number", T1("4", "[1]", "[0,4]"), 4, "tensor 'x': dtype is a number, not a string"},
    {"missing dtype", "{\"x\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "missing field 'dtype'"},
    {"missing shape", "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
     "missing field 'shape'"},
    {"missing offsets", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
     "missing field 'data_offsets'"},
    {"unknown field",
     "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4,
     "tensor 'x': unknown field 'extra'"},
    {"field twice",
     "{\"x\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'x': field 'dtype' appears twice"},
    {"shape not an array", T1("\"F32\"", "3", "[0,12]"), 12, "shape is a number, not an array"},
    {"negative dim", T1("\"F32\"", "[-1]", "[0,4]"), 4, "tensor 'x': shape[0] = -1 is negative"},
    {"fractional dim", T1("\"F32\"", "[2,1.5]", "[0,12]"), 12,
     "tensor 'x': shape[1] = 1.5 is not an integer"},
    {"huge dim", T1("\"F32\"", "[1e30]", "[0,4]"), 4, "shape[0] = 1e+30 is too large"},
    {"dim 2^53", T1("\"U8\"", "[9007199254740992]", "[0,0]"), 0, "is too large"},
    {"dim over int64", T1("\"U8\"", "[18446744073709551616]", "[0,0]"), 0, "is too large"},
    {"dim a string", T1("\"F32\"", "[\"2\"]", "[0,8]"), 8, "tensor 'x': shape[0] is not a number"},
    {"dim null", T1("\"F32\"", "[null]", "[0,8]"), 8, "shape[0] is not a number"},
    {"dim written 3.0", T1("\"U8\"", "[3.0]", "[0,3]"), 3, "number '3.0' is not a plain"},
    {"dim written 1e2", T1("\"U8\"", "[1e2]", "[0,100]"), 100, "number '1e2' is not a plain"},
    {"dim written 012", T1("\"U8\"", "[012]", "[0,12]"), 12, "number '012' is not a plain"},
    {"offset written -0", T1("\"U8\"", "[1]", "[-0,1]"), 1, "number '-0' is not a plain"},
    {"9 dims", T1("\"F32\"", "[1,1,1,1,1,1,1,1,1]", "[0,4]"), 4, "9 dimensions; at most 8"},
    {"element count overflows size_t", T1("\"U8\"", "[4294967296,4294967296,2]", "[0,0]"), 0,
     "tensor 'x': U8 [4294967296, 4294967296, 2]: the element count overflows"},
    {"byte size overflows", T1("\"F32\"", "[2147483648,2147483648]", "[0,0]"), 0,
     "F32 [2147483648, 2147483648]: the byte size overflows"},
    {"byte size mismatch", T1("\"F32\"", "[3]", "[0,10]"), 10,
     "tensor 'x': data_offsets [0, 10] hold 10 bytes but F32 [3] needs 12"},
    {"byte size mismatch, scalar", T1("\"F64\"", "[]", "[0,4]"), 4,
     "data_offsets [0, 4] hold 4 bytes but F64 [] needs 8"},
    {"zero-size with bytes", T1("\"F32\"", "[0,5]", "[0,4]"), 4,
     "hold 4 bytes but F32 [0, 5] needs 0"},
    {"begin after end", T1("\"F32\"", "[0]", "[8,4]"), 8,
     "tensor 'x': data_offsets [8, 4]: begin is after end"},
    {"offsets past the data", T1("\"F32\"", "[2]", "[100,108]"), 8,
     "tensor 'x': data_offsets [100, 108] go past the end of the data (8 bytes)"},
    {"data shorter than the last end", T1("\"F32\"", "[2]", "[0,8]"), 4,
     "data_offsets [0, 8] go past the end of the data (4 bytes)"},
    {"offsets huge", T1("\"U8\"", "[1]", "[9007199254740991,9007199254740992]"), 1, "too large"},
    {"one offset", T1("\"F32\"", "[0]", "[0]"), 0, "data_offsets must be an array of two integers"},
    {"three offsets", T1("\"F32\"", "[1]", "[0,4,4]"), 4, "data_offsets must be an array of two"},
    {"no offsets", T1("\"F32\"", "[0]", "[]"), 0, "data_offsets must be an array of two"},
    {"offsets an object", T1("\"F32\"", "[0]", "{}"), 0, "data_offsets must be an array of two"},
    {"offsets as strings", T1("\"F32\"", "[1]", "[\"0\",\"4\"]"), 4,
     "tensor 'x': data_offsets[0] is not a number"},
    {"negative offset", T1("\"F32\"", "[1]", "[-4,0]"), 4, "data_offsets[0] = -4 is negative"},
    {"fractional offset", T1("\"F32\"", "[1]", "[0,4.5]"), 4,
     "data_offsets[1] = 4.5 is not an integer"},
    {"overlapping tensors",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
     12, "tensor 'b': data_offsets [4, 12] overlap the tensor before, which ends at 8"},
    {"same range twice",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
     8, "overlap the tensor before"},
    {"hole between tensors",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}",
     20, "tensor 'b': data_offsets [12, 20] leave a hole: bytes [8, 12)"},
    {"hole at the start", T1("\"F32\"", "[2]", "[4,12]"), 12, "leave a hole: bytes [0, 4)"},
    {"trailing bytes", T1("\"F32\"", "[2]", "[0,8]"), 12, "4 trailing bytes after the last tensor"},
    {"data but no tensors", "{}", 3, "3 trailing bytes"},
    {"duplicate names",
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
     8, "tensor 'a' appears twice"},
    {"duplicate metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0,
     "__metadata__ appears twice"},
    {"metadata not an object", "{\"__metadata__\":\"x\"}", 0,
     "__metadata__ is a string, not an object"},
    {"metadata null", "{\"__metadata__\":null}", 0, "__metadata__ is null, not an object"},
    {"metadata number value", "{\"__metadata__\":{\"k\":1}}", 0,
     "__metadata__ 'k' is a number, not a string"},
    {"metadata object value", "{\"__metadata__\":{\"k\":{}}}", 0,
     "__metadata__ 'k' is an object, not a string"},
    {"metadata key twice", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0,
     "__metadata__ 'k' appears twice"},
};

static void test_hostile(void) {
    char path[512];
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "bad_%02zu.safetensors", i);
        path_in(path, sizeof path, name);
        make_st(path, bad_headers[i].header, bad_headers[i].data);
        vox_safetensors *st = NULL;
        vox_error err = {0};
        vox_status s = vox_st_open(path, &st, &err);
        CHECK_MSG(s == VOX_ERR_FORMAT && st == NULL, "%s: status %d: %s", bad_headers[i].what,
                  (int)s, err.msg);
        CHECK_MSG(strstr(err.msg, path) && strstr(err.msg, bad_headers[i].needle),
                  "%s: message lacks the file or '%s': %s", bad_headers[i].what,
                  bad_headers[i].needle, err.msg);
        if (st) vox_st_close(st);
    }

    /* Header lengths and file sizes. */
    path_in(path, sizeof path, "short.safetensors");
    write_file(path, "", 0);
    expect_fail(path, VOX_ERR_FORMAT, "file has 0 bytes, too short for the 8-byte header length");
    write_file(path, "\x02\0\0\0\0", 5);
    expect_fail(path, VOX_ERR_FORMAT, "file has 5 bytes");
    make_raw(path, 0, "", 0, 0); /* exactly 8 bytes: the length is there, the header empty */
    expect_fail(path, VOX_ERR_FORMAT, "not valid JSON");
    make_raw(path, 1ull << 63, "{}", 2, 0);
    expect_fail(path, VOX_ERR_FORMAT, "header length 9223372036854775808 is over the limit");
    make_raw(path, UINT64_MAX, "{}", 2, 0);
    expect_fail(path, VOX_ERR_FORMAT, "header length 18446744073709551615 is over the limit");
    make_raw(path, 100000001, "{}", 2, 0);
    expect_fail(path, VOX_ERR_FORMAT, "header length 100000001 is over the limit of 100000000");
    make_raw(path, 100000000, "{}", 2, 0); /* at the limit: refused for another reason */
    expect_fail(path, VOX_ERR_FORMAT,
                "header length 100000000 goes past the end of the file (10 bytes)");
    make_raw(path, 100, "{\"x\":{\"dtype\":\"U8\"", 18, 2);
    expect_fail(path, VOX_ERR_FORMAT, "header length 100 goes past the end of the file (28 bytes)");
    make_raw(path, 3, "{}", 2, 0); /* one byte past the end */
    expect_fail(path, VOX_ERR_FORMAT, "header length 3 goes past the end of the file (10 bytes)");
    make_raw(path, 3, "{}\0", 3, 0); /* a raw NUL: cJSON would skip it as whitespace */
    expect_fail(path, VOX_ERR_FORMAT, "control byte 0x00 at byte 2");
    make_raw(path, 9, "{\"a\0b\":1}", 9, 0);
    expect_fail(path, VOX_ERR_FORMAT, "control byte 0x00 at byte 3");

    /* Nesting deeper than cJSON's limit: refused, not a stack overflow. */
    enum { DEPTH = 100000 };
    char *deep = malloc(2 * DEPTH + 16);
    size_t k = 0;
    k += (size_t)sprintf(deep, "{\"x\":");
    for (int i = 0; i < DEPTH; i++) deep[k++] = '[';
    for (int i = 0; i < DEPTH; i++) deep[k++] = ']';
    deep[k++] = '}';
    deep[k] = '\0';
    make_st(path, deep, 0);
    expect_fail(path, VOX_ERR_FORMAT, "not valid JSON");
    free(deep);

    /* Not a file at all. */
    path_in(path, sizeof path, "does_not_exist.safetensors");
    expect_fail(path, VOX_ERR_IO, "cannot open: No such file or directory");
    expect_fail(tmpdir, VOX_ERR_IO, "not a regular file");
}

/* ---- robustness: truncations and single-byte corruptions of a valid file -------------------- */

static void check_consistent(vox_safetensors *st, const unsigned char *file, size_t size) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | file[i];
    size_t total = 0;
    for (size_t i = 0; i < vox_st_count(st); i++) {
        const vox_st_tensor *t = vox_st_at(st, i);
        CHECK(t->nbytes == t->n_elements * vox_dtype_size(t->dtype));
        CHECK(vox_st_find(st, t->name) == t);
        if (i) CHECK((const char *)t->data == (const char *)vox_st_at(st, i - 1)->data +
                                                  vox_st_at(st, i - 1)->nbytes);
        total += t->nbytes;
    }
    CHECK(8 + n + total == size);
}

static void test_corruptions(void) {
    char path[512], bad[512];
    path_in(path, sizeof path, "victim.safetensors");
    path_in(bad, sizeof bad, "corrupt.safetensors");
    float a[3] = {1, 2, 3};
    uint16_t b[2] = {0x3f80, 0x4000};
    vox_error err = {0};
    vox_st_writer *w = vox_st_writer_new();
    CHECK(vox_st_writer_add(w, "a", VOX_DTYPE_F32, 1, (int64_t[]){3}, a, &err) == VOX_OK);
    CHECK(vox_st_writer_add(w, "b", VOX_DTYPE_BF16, 2, (int64_t[]){1, 2}, b, &err) == VOX_OK);
    CHECK(vox_st_writer_add(w, "z", VOX_DTYPE_U8, 1, (int64_t[]){0}, NULL, &err) == VOX_OK);
    CHECK(vox_st_writer_set_metadata(w, "k", "v", &err) == VOX_OK);
    CHECK(vox_st_writer_save(w, path, &err) == VOX_OK);
    vox_st_writer_free(w);
    size_t size = 0;
    unsigned char *file = (unsigned char *)test_read_file(path, &size);
    CHECK(file != NULL && size > 16);
    if (!file) return;

    int truncations_refused = 0;
    for (size_t len = 0; len < size; len++) {
        write_file(bad, file, len);
        vox_safetensors *st = NULL;
        vox_status s = vox_st_open(bad, &st, &err);
        truncations_refused += s == VOX_ERR_FORMAT && st == NULL && strstr(err.msg, bad) != NULL;
        vox_st_close(st);
    }
    CHECK_MSG(truncations_refused == (int)size, "%d of %zu truncations refused",
              truncations_refused, size);
    unsigned char *longer = malloc(size + 1);
    memcpy(longer, file, size);
    longer[size] = 0;
    write_file(bad, longer, size + 1);
    expect_fail(bad, VOX_ERR_FORMAT, "1 trailing bytes");
    free(longer);

    /* Every byte of the header length and the header, and the first data bytes, replaced. */
    static const unsigned char values[] = {0x00, 0x01, 0x7f, 0xff, '"', '\\', '{', '}', '[',
                                           ']', ',', ':', '0', '9', '-', ' ', 'e', 'A'};
    unsigned char *copy = malloc(size);
    int opened = 0, refused = 0, other = 0;
    for (size_t pos = 0; pos < size; pos++) {
        for (size_t v = 0; v < sizeof values; v++) {
            if (file[pos] == values[v]) continue;
            memcpy(copy, file, size);
            copy[pos] = values[v];
            write_file(bad, copy, size);
            vox_safetensors *st = NULL;
            vox_error e2 = {0};
            vox_status s = vox_st_open(bad, &st, &e2);
            if (s == VOX_OK) {
                opened++;
                check_consistent(st, copy, size);
                vox_st_close(st);
            } else if (s == VOX_ERR_FORMAT && !st && strstr(e2.msg, bad)) {
                refused++;
            } else {
                other++;
                fprintf(stderr, "byte %zu = 0x%02x: status %d: %s\n", pos, values[v], (int)s,
                        e2.msg);
            }
        }
    }
    CHECK(other == 0);
    CHECK(refused > 0 && opened > 0); /* data bytes may change freely; header bytes mostly not */
    free(copy);
    free(file);
}

/* ---- writer errors ------------------------------------------------------------------------- */

static void test_writer_errors(void) {
    vox_error err = {0};
    float x[4] = {1, 2, 3, 4};
    vox_st_writer *w = vox_st_writer_new();
    CHECK(vox_st_writer_add(w, "x", VOX_DTYPE_F32, 1, (int64_t[]){4}, x, &err) == VOX_OK);

    struct {
        const char *what, *name;
        vox_dtype dtype;
        int ndim;
        int64_t shape[VOX_ST_MAX_DIMS + 1];
        const void *data;
        const char *needle;
    } bad[] = {
        {"duplicate", "x", VOX_DTYPE_F32, 1, {4}, x, "tensor 'x' added twice"},
        {"empty name", "", VOX_DTYPE_F32, 1, {4}, x, "empty tensor name"},
        {"NULL name", NULL, VOX_DTYPE_F32, 1, {4}, x, "empty tensor name"},
        {"reserved name", "__metadata__", VOX_DTYPE_F32, 1, {4}, x, "reserved"},
        {"bad UTF-8", "a\xff", VOX_DTYPE_F32, 1, {4}, x, "not valid UTF-8"},
        {"bad dtype", "y", VOX_DTYPE_COUNT, 1, {4}, x, "bad dtype"},
        {"9 dims", "y", VOX_DTYPE_F32, 9, {1, 1, 1, 1, 1, 1, 1, 1, 1}, x, "9 dimensions"},
        {"negative ndim", "y", VOX_DTYPE_F32, -1, {4}, x, "-1 dimensions"},
        {"negative dim", "y", VOX_DTYPE_F32, 2, {2, -2}, x, "shape[1] = -2 is out of range"},
        {"dim 2^53", "y", VOX_DTYPE_U8, 1, {1ll << 53}, x, "out of range"},
        {"element overflow", "y", VOX_DTYPE_U8, 3, {1ll << 32, 1ll << 32, 2}, x,
         "the element count overflows"},
        {"byte overflow", "y", VOX_DTYPE_F32, 2, {1ll << 31, 1ll << 31}, x,
         "the byte size overflows"},
        {"no data", "y", VOX_DTYPE_F32, 1, {4}, NULL, "no data"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vox_status s = vox_st_writer_add(w, bad[i].name, bad[i].dtype, bad[i].ndim, bad[i].shape,
                                         bad[i].data, &err);
        CHECK_MSG(s == VOX_ERR_INVALID_ARG && strstr(err.msg, bad[i].needle), "%s: %d: %s",
                  bad[i].what, (int)s, err.msg);
    }
    CHECK(vox_st_writer_set_metadata(w, "k", "\xff", &err) == VOX_ERR_INVALID_ARG);
    CHECK(vox_st_writer_set_metadata(w, "\xc0\x80", "v", &err) == VOX_ERR_INVALID_ARG);

    /* The refused calls left the writer as it was. */
    char path[512];
    path_in(path, sizeof path, "after_errors.safetensors");
    CHECK(vox_st_writer_save(w, path, &err) == VOX_OK);
    vox_safetensors *st = open_ok(path);
    if (st) {
        CHECK(vox_st_count(st) == 1 && memcmp(vox_st_at(st, 0)->data, x, sizeof x) == 0);
        vox_st_close(st);
    }

    /* A directory that does not exist: the temp file cannot even be created. */
    path_in(path, sizeof path, "no/such/dir/out.safetensors");
    vox_status s = vox_st_writer_save(w, path, &err);
    CHECK_MSG(s == VOX_ERR_IO && strstr(err.msg, path) && strstr(err.msg, "No such file"), "%s",
              err.msg);

    /* A write cut short, as on a full disk: RLIMIT_FSIZE makes write() fail with EFBIG once the
     * file reaches 4 KiB. The old file under PATH stays as it was, and no temp file is left. */
    path_in(path, sizeof path, "cut_short.safetensors");
    CHECK(vox_st_writer_save(w, path, &err) == VOX_OK); /* the old version, 16 bytes of data */
    enum { BIG = 1 << 20 };
    unsigned char *big = malloc(BIG);
    for (int i = 0; i < BIG; i++) big[i] = (unsigned char)(i * 31);
    CHECK(vox_st_writer_add(w, "big", VOX_DTYPE_U8, 1, (int64_t[]){BIG}, big, &err) == VOX_OK);
    struct rlimit old_limit, limit;
    getrlimit(RLIMIT_FSIZE, &old_limit);
    limit = old_limit;
    limit.rlim_cur = 4096;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &limit) == 0) {
        s = vox_st_writer_save(w, path, &err);
        setrlimit(RLIMIT_FSIZE, &old_limit);
        CHECK_MSG(s == VOX_ERR_IO && strstr(err.msg, path) && strstr(err.msg, "cannot write"),
                  "%d: %s", (int)s, err.msg);
        CHECK(temporaries_in(tmpdir) == 0);
        st = open_ok(path);
        if (st) {
            CHECK(vox_st_count(st) == 1 && vox_st_find(st, "big") == NULL);
            vox_st_close(st);
        }
    } else {
        fprintf(stderr, "note: setrlimit failed (%s); the short-write case is not run\n",
                strerror(errno));
    }
    signal(SIGXFSZ, old_handler);
    /* Without the limit, the same save goes through. */
    CHECK(vox_st_writer_save(w, path, &err) == VOX_OK);
    st = open_ok(path);
    if (st) {
        const vox_st_tensor *t = vox_st_find(st, "big");
        CHECK(t && t->nbytes == BIG && memcmp(t->data, big, BIG) == 0);
        vox_st_close(st);
    }
    free(big);
    vox_st_writer_free(w);
    vox_st_writer_free(NULL);
    vox_st_close(NULL);
}

static void remove_tmpdir(void) {
    if (getenv("VOX_TEST_KEEP_TMP")) {
        printf("kept %s\n", tmpdir);
        return;
    }
    DIR *d = opendir(tmpdir);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        path_in(path, sizeof path, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(tmpdir);
}

int main(void) {
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/vox_test_st_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_round_trip();
    test_many();
    test_valid_variants();
    test_hostile();
    test_corruptions();
    test_writer_errors();
    remove_tmpdir();
    return test_finish("test_format_safetensors");
}
