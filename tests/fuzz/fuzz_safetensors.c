/* Fuzzes the safetensors reader (src/format/safetensors.c): the header length, the JSON header
 * and the tensor table. Every input is either refused with a format error that names the file,
 * or gives a table that holds together: the tensors tile the data in file order, each is found
 * by its name, its byte size is its shape's, its bytes are the file's. What was read is then
 * written back with vox_st_writer and must read back the same (names, dtypes, shapes, bytes,
 * metadata). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/safetensors.h"
#include "fuzz.h"

/* The __metadata__ object of a header that vox_st_open accepted, or NULL. */
static cJSON *parse_metadata(const uint8_t *data, size_t header_len, cJSON **root) {
    *root = cJSON_ParseWithLength((const char *)data + 8, header_len);
    FUZZ_CHECK(*root != NULL, "an accepted header does not parse");
    return cJSON_GetObjectItemCaseSensitive(*root, "__metadata__");
}

static void check_table(const vox_safetensors *st, const uint8_t *data, size_t size,
                        size_t header_len) {
    const uint8_t *file_data = data + 8 + header_len;
    size_t data_size = size - 8 - header_len, offset = 0;
    const uint8_t *base = vox_st_count(st) ? vox_st_at(st, 0)->data : NULL;
    for (size_t i = 0; i < vox_st_count(st); i++) {
        const vox_st_tensor *t = vox_st_at(st, i);
        FUZZ_CHECK(t->name && t->name[0], "tensor %zu has no name", i);
        FUZZ_CHECK(vox_st_find(st, t->name) == t, "tensor '%s' is not found by its name",
                   t->name);
        FUZZ_CHECK(t->ndim >= 0 && t->ndim <= VOX_ST_MAX_DIMS, "'%s': %d dims", t->name, t->ndim);
        size_t n = 1;
        for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
        FUZZ_CHECK(n == t->n_elements && n * vox_dtype_size(t->dtype) == t->nbytes,
                   "'%s': sizes do not match the shape", t->name);
        FUZZ_CHECK((const uint8_t *)t->data == base + offset, "'%s' does not follow the tensor "
                   "before it", t->name);
        FUZZ_CHECK(t->nbytes <= data_size - offset, "'%s' ends past the data", t->name);
        FUZZ_CHECK(t->nbytes == 0 || memcmp(t->data, file_data + offset, t->nbytes) == 0,
                   "'%s': bytes differ from the file's", t->name);
        offset += t->nbytes;
    }
    FUZZ_CHECK(offset == data_size, "tensors hold %zu bytes, the data is %zu", offset, data_size);
    FUZZ_CHECK(vox_st_find(st, "") == NULL, "an empty name is found");
}

/* Writes st (and the metadata) back, reads the copy, compares. */
static void check_round_trip(const vox_safetensors *st, const cJSON *meta) {
    vox_error err = {0};
    vox_st_writer *w = vox_st_writer_new();
    FUZZ_CHECK(w != NULL, "out of memory");
    for (size_t i = 0; i < vox_st_count(st); i++) {
        const vox_st_tensor *t = vox_st_at(st, i);
        vox_status s = vox_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, &err);
        FUZZ_CHECK(s == VOX_OK, "the writer refuses a tensor the reader accepted: %s", err.msg);
    }
    for (const cJSON *m = meta ? meta->child : NULL; m; m = m->next) {
        vox_status s = vox_st_writer_set_metadata(w, m->string, m->valuestring, &err);
        FUZZ_CHECK(s == VOX_OK, "the writer refuses metadata the reader accepted: %s", err.msg);
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/copy.safetensors", fuzz_temp_dir());
    vox_status s = vox_st_writer_save(w, path, &err);
    vox_st_writer_free(w);
    FUZZ_CHECK(s == VOX_OK, "cannot write the copy: %s", err.msg);

    vox_safetensors *copy = NULL;
    s = vox_st_open(path, &copy, &err);
    FUZZ_CHECK(s == VOX_OK, "the writer's copy does not read back: %s", err.msg);
    FUZZ_CHECK(vox_st_count(copy) == vox_st_count(st), "tensor count changed");
    for (size_t i = 0; i < vox_st_count(st); i++) {
        const vox_st_tensor *a = vox_st_at(st, i), *b = vox_st_find(copy, a->name);
        FUZZ_CHECK(b != NULL, "'%s' is lost in the copy", a->name);
        FUZZ_CHECK(a->dtype == b->dtype && a->ndim == b->ndim &&
                       memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]) == 0 &&
                       a->nbytes == b->nbytes &&
                       (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0),
                   "'%s' differs in the copy", a->name);
    }
    for (const cJSON *m = meta ? meta->child : NULL; m; m = m->next) {
        const char *v = vox_st_metadata(copy, m->string);
        FUZZ_CHECK(v && strcmp(v, m->valuestring) == 0, "metadata '%s' differs in the copy",
                   m->string);
    }
    vox_st_close(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file("input.safetensors", data, size);
    vox_safetensors *st = NULL;
    vox_error err = {0};
    vox_status s = vox_st_open(path, &st, &err);
    if (s != VOX_OK) {
        FUZZ_CHECK(st == NULL, "a failed open returned a table");
        FUZZ_CHECK(s == VOX_ERR_FORMAT, "status %d for a malformed file: %s", (int)s, err.msg);
        FUZZ_CHECK(strstr(err.msg, path) != NULL, "the message does not name the file: %s",
                   err.msg);
        return 0;
    }
    FUZZ_CHECK(size >= 8, "a file of %zu bytes was accepted", size);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = header_len << 8 | data[i];
    FUZZ_CHECK(header_len <= size - 8, "the header is longer than the file");
    check_table(st, data, size, (size_t)header_len);

    cJSON *root = NULL;
    const cJSON *meta = parse_metadata(data, (size_t)header_len, &root);
    for (const cJSON *m = meta ? meta->child : NULL; m; m = m->next) {
        const char *v = vox_st_metadata(st, m->string);
        FUZZ_CHECK(v && strcmp(v, m->valuestring) == 0, "metadata '%s' is not found", m->string);
    }
    check_round_trip(st, meta);
    cJSON_Delete(root);
    vox_st_close(st);
    return 0;
}
